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
