"""Hypothesis strategies for patchgate's pure code (manifests, paths, payloads, junk input)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from client.verdict.stability import Stability, assess
from patchgate.digest import FileEntry, Manifest
from patchgate.pins import PROPERTY_CLASSES, PropertyPin
from patchgate.results import RunOutcome

__all__ = [
    "argvs",
    "credit_cases",
    "file_entries",
    "json_values",
    "junk_json_bytes",
    "manifests",
    "python_edits",
    "safe_paths",
    "sha256_hex",
]

_SEGMENT_CHARS = st.characters(
    blacklist_categories=("Cs", "Cc", "Cf", "Zl", "Zp"),
    blacklist_characters="/\\\x00\n",
)
_segments = st.text(_SEGMENT_CHARS, min_size=1, max_size=12).filter(lambda s: s not in (".", ".."))

safe_paths = st.lists(_segments, min_size=1, max_size=4).map("/".join)
sha256_hex = st.binary(min_size=32, max_size=32).map(bytes.hex)
file_entries = st.builds(FileEntry, sha256=sha256_hex, size=st.integers(0, 2**40))
argvs = st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=5).map(tuple)


@st.composite
def manifests(draw: st.DrawFn, min_files: int = 0) -> Manifest:
    """A valid manifest: safe paths, any seed and bound, distinct commands."""
    files = draw(st.dictionaries(safe_paths, file_entries, min_size=min_files, max_size=6))
    commands = draw(st.lists(argvs, max_size=4, unique=True))
    return Manifest(
        pin_id=draw(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,20}", fullmatch=True)),
        files=files,
        seed=draw(st.integers(0, 2**32 - 1)),
        clock_bound_ms=draw(st.integers(1, 24 * 3600 * 1000)),
        allowed_commands=tuple(commands),
    )


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)

junk_json_bytes = json_values.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=200)


SYMBOLS = ("m.f", "m.g", "m.C.h", "module:m", "n.k")
ASSERTION_CLASSES = ("property", "fixture_eq", "freeze_ref", "tautology", "opaque")
RUN_OUTCOMES = ("pass", "fail", "error", "exceeded_bound", None)  # None: not recorded


@st.composite
def credit_cases(draw: st.DrawFn) -> dict[str, Any]:
    """Arguments of ``client.verdict.credit.score``: symbols, properties covering some of them,
    assertion classes and two local runs per property (a run may be missing), maybe a stop."""
    symbols = draw(st.lists(st.sampled_from(SYMBOLS), unique=True, max_size=4))
    props = []
    for n in range(draw(st.integers(0, 4))):
        covers = draw(st.lists(st.sampled_from((*SYMBOLS, "m", "m.C", "x.y")), max_size=2))
        props.append(
            PropertyPin(
                id=f"p{n}",
                claim="",
                property_class=draw(st.sampled_from(PROPERTY_CLASSES)),
                covers=tuple(covers),
                command=("python", "-m", "pytest", f"t.py::test_{n}"),
            )
        )
    local: dict[str, Stability] = {}
    for p in props:
        outcomes = [draw(st.sampled_from(RUN_OUTCOMES)) for _ in range(2)]
        runs = [
            RunOutcome.make(p.id, i, o, "" if o == "pass" else "boom")
            for i, o in enumerate(outcomes, 1)
            if o is not None
        ]
        local[p.id] = assess(p.id, runs)
    return {
        "changed_symbols": tuple(symbols),
        "suite": tuple(props),
        "assertion_classes": {p.id: draw(st.sampled_from(ASSERTION_CLASSES)) for p in props},
        "local": local,
        "stopped": draw(st.sampled_from(("", "", "reject_oracle_moved", "unavailable"))),
    }


# statements for python_edits: multi-line ones too, so a site may reach past a changed line
_ANY_STMTS = (
    "x = a + 1", "y = a * 2 - b", "assert a is not None", "z = not a or b",
    "if a < b:\n    a = 3", "while a >= 4:\n    a -= 1", "w = (a <\n     b)",
    'q = sum((v for v in [a]), Decimal("0.5"))', "import os", "# a comment", "s = 'text'",
)  # fmt: skip
_DEF_STMTS = (*_ANY_STMTS, "return a + b", "return None", "def inner(c=2):\n    return c + 1")
_DOC = '"""doc"""'


def _indent(stmts: list[str], by: str) -> list[str]:
    lines = [by + line for stmt in stmts for line in stmt.splitlines()]
    return lines if any(not s.startswith("#") for s in stmts) else [*lines, by + "pass"]


@st.composite
def _edited(draw: st.DrawFn, pool: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """A statement list and its edit: the same, one statement replaced, inserted or deleted."""
    base = draw(st.lists(st.sampled_from(pool), max_size=4))
    patched = list(base)
    edit = draw(st.sampled_from(("same", "replace", "insert", "delete")))
    i = draw(st.integers(0, len(base)))
    if edit == "insert":
        patched.insert(i, draw(st.sampled_from(pool)))
    elif edit in ("replace", "delete") and i < len(base):
        patched[i : i + 1] = [draw(st.sampled_from(pool))] if edit == "replace" else []
    return base, patched


@st.composite
def python_edits(draw: st.DrawFn) -> tuple[bytes, bytes, list[str | None]]:
    """A module's base and patched sources (functions, a nested def, a class with a method, top
    code; statements replaced, inserted or deleted) and the qualnames its symbols have."""
    parts: list[tuple[list[str], list[str]]] = []
    names: list[str | None] = [None]
    for n in range(draw(st.integers(1, 3))):
        base, patched = draw(_edited(_DEF_STMTS))
        doc = draw(st.sampled_from(([], [_DOC])))
        head = [f"@wrap({n})", f"def f{n}(a, b={n}):"]
        parts.append((head + _indent(doc + base, "    "), head + _indent(doc + patched, "    ")))
        names += [f"f{n}", f"f{n}.<locals>.inner"]
    attrs_base, attrs_patched = draw(_edited(_ANY_STMTS))
    meth_base, meth_patched = draw(_edited(_DEF_STMTS))
    head = ["class C(Base, k=1):"]
    meth = ["    def m(self, a, b=0):"]
    parts.append(
        (
            head + _indent(attrs_base, "    ") + meth + _indent(meth_base, "        "),
            head + _indent(attrs_patched, "    ") + meth + _indent(meth_patched, "        "),
        )
    )
    names += ["C", "C.m", "C.m.<locals>.inner"]
    top_base, top_patched = draw(_edited(_ANY_STMTS))
    parts.append((top_base, top_patched))
    order = draw(st.permutations(range(len(parts))))
    prelude = [
        "from decimal import Decimal",
        "def wrap(n):",
        "    return lambda f: f",
        "Base = object",
    ]
    base = "\n".join(prelude + [line for i in order for line in parts[i][0]]) + "\n"
    patched = "\n".join(prelude + [line for i in order for line in parts[i][1]]) + "\n"
    return base.encode(), patched.encode(), names
