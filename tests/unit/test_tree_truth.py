"""The applied tree is the truth (issue 13, item 1): what a patch touched comes from comparing the
base tree with the tree ``git apply -p1`` made, and every changed path is accounted for.

Git runs here (no sockets, no Docker): the trees are real. The attack corpus lives in
``tests/attacks/``; its integration test runs each entry through ``patchgate check``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from client.analysis.patch.diffparse import (
    PatchParseError,
    gitlinks,
    parse_unified_diff,
    touched_paths,
)
from client.analysis.patch.roles import layout_of
from client.analysis.patch.touched import Touched, judge
from client.gate import steps
from client.gate.workspace import PatchApplyError, Workspace, materialize
from patchgate.errors import PinErrors
from patchgate.pins import DirSource, load_pins
from tests.attacks.repos import CORPUS, REPOS, Entry, build, entries, git

PATCHES = CORPUS / "patches"


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("attack-repos")
    return {name: build(name, root / name) for name in REPOS}


def _touched(ws: Workspace) -> Touched:
    pins = load_pins(DirSource(ws.base_dir))
    return judge(ws.changes(), layout_of(ws.base_dir, pins), ws.read_base, ws.read_patched)


def _accounted(touched: Touched) -> list[str]:
    """Changed paths the result does not name (must be none): each is an excluded path or the
    file of a changed symbol (by its module, or by name for a symbol of two modules)."""
    modules = {s.module for s in touched.symbols}

    def named(module: str | None) -> bool:
        return module in modules or any(
            not s.module and s.startswith(f"{module}.") for s in touched.symbols
        )

    return [
        p
        for p in touched.touched_paths
        if p not in touched.excluded_paths and not named(touched.files.get(p))
    ]


def _tree_paths(repo: Path, patch: bytes) -> tuple[str, ...] | None:
    try:
        with materialize(repo, "HEAD", patch) as ws:
            return tuple(c.path for c in ws.changes())
    except PatchApplyError:
        return None


def _parsed_paths(patch: bytes) -> tuple[str, ...] | None:
    try:
        return tuple(sorted(touched_paths(parse_unified_diff(patch))))
    except PatchParseError:
        return None


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.id)
def test_parser_and_trees_agree_on_every_corpus_patch(entry: Entry, repos: dict[str, Path]) -> None:
    """Where git applies a corpus patch, the parser names the same paths (it reads names as git
    apply -p1 does). Where git refuses one (its context does not match the base), the parser,
    which never reads the base, may still find it well formed. A gitlink (mode 160000) is the one
    path git apply without an index leaves out of the tree (an empty directory): the header names
    it, and such a patch is refused (issue 22)."""
    patch = entry.patch.read_bytes()
    tree = _tree_paths(repos[str(entry["repo"])], patch)
    links = gitlinks(patch)
    if tree is None or links:
        assert entry.get("decision") == "reject_provenance"
    if tree is not None:
        assert tuple(p for p in _parsed_paths(patch) if p not in links) == tree


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.id)
def test_every_changed_path_of_a_corpus_patch_is_named(
    entry: Entry, repos: dict[str, Path]
) -> None:
    patch = entry.patch.read_bytes()
    try:
        with materialize(repos[str(entry["repo"])], "HEAD", patch) as ws:
            touched = _touched(ws)
    except PatchApplyError:
        assert entry.get("decision") == "reject_provenance"
        return
    assert touched.touched_paths
    assert _accounted(touched) == []
    assert set(entry.get("symbols", [])) <= set(touched.symbols)  # type: ignore[arg-type]


# -- the tricks of issue 13, one by one ---------------------------------------------------------


def _judge_patch(repo: Path, patch: bytes) -> Touched:
    with materialize(repo, "HEAD", patch) as ws:
        return _touched(ws)


def test_plain_patch_longer_plus_name_changes_the_shorter_file(repos: dict[str, Path]) -> None:
    t = _judge_patch(
        repos["billing"],
        (PATCHES / "plain_longer_new_name.patch").read_bytes(),
    )
    assert t.touched_paths == ("billing/__init__.py",)
    assert t.symbols == ("billing.Line.net",)


def test_src_layout_symbols_are_named_from_the_source_root(repos: dict[str, Path]) -> None:
    patch = (PATCHES / "src_layout_regression.patch").read_bytes()
    t = _judge_patch(repos["textkit"], patch)
    assert t.symbols == ("textkit.core.slugify",)
    assert t.symbols[0].module == "textkit.core"


def test_compiled_code_is_found_and_named(repos: dict[str, Path]) -> None:
    patch = (
        Path(__file__).parents[1] / "attacks/patches/pycache_unchecked_hash_shadow.patch"
    ).read_bytes()
    t = _judge_patch(repos["billing"], patch)
    assert t.compiled == (
        f"billing/__pycache__/__init__.{__import__('sys').implementation.cache_tag}.pyc",
    )


def test_mode_only_change_is_a_change(repos: dict[str, Path]) -> None:
    patch = (
        b"diff --git a/billing/orders.py b/billing/orders.py\nold mode 100644\nnew mode 100755\n"
    )
    t = _judge_patch(repos["billing"], patch)
    assert t.touched_paths == ("billing/orders.py",)
    assert t.symbols == ("module:billing.orders",)


def test_a_symlink_outside_the_source_is_harness(repos: dict[str, Path]) -> None:
    """A directory link named like a package (``billing2 -> billing``) is importable: R7."""
    patch = (
        b"diff --git a/billing2 b/billing2\nnew file mode 120000\nindex 0000000..1111111\n"
        b"--- /dev/null\n+++ b/billing2\n@@ -0,0 +1 @@\n+billing\n\\ No newline at end of file\n"
    )
    t = _judge_patch(repos["billing"], patch)
    assert t.oracle_moves == ("billing2",)


def test_unknown_covers_are_a_pin_error(repos: dict[str, Path], tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shutil.copytree(repos["textkit"], repo)
    props = repo / "pins/properties.json"
    props.write_text(
        props.read_text().replace('"textkit.core.slugify"', '"textkit.core.slugify_all"', 1)
    )
    git(repo, "commit", "-qam", "a covers entry that names nothing")
    patch = (
        Path(__file__).parents[1] / "attacks/patches/control_textkit_refactor.patch"
    ).read_bytes()
    with materialize(repo, "HEAD", patch) as ws, pytest.raises(PinErrors) as err:
        steps.resolve_pins(ws, load_pins(DirSource(ws.base_dir)))
    assert "textkit.slug_clean: covers entry 'textkit.core.slugify_all' names no symbol" in str(
        err.value
    )


# -- the property: for any patch git accepts, every changed path is named ---------------------


_PATHS = [
    "src/textkit/core.py",
    "src/textkit/sub.py",
    "src/textkit/new.py",
    "src/textkit/__init__.py",
    "src/textkit/__pycache__/core.cpython-311.pyc",
    "src/textkit/data.bin",
    "conftest.py",
    "pytest.ini",
    "pyproject.toml",
    "patchgate.toml",
    "properties/test_textkit.py",
    "qa/prop_slug.py",
    "pins/properties.json",
    "README.md",
    "textkit/__init__.py",
    "odd name.py",
    "ev.dist-info/entry_points.txt",
]
_TEXTS = st.lists(
    st.sampled_from(["x = 1", "def f():", "    return 2", "", "# c", "import os", "class C:"]),
    max_size=6,
).map(lambda lines: "\n".join(lines) + "\n")
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(_PATHS), _TEXTS),
        st.tuples(st.just("binary"), st.sampled_from(_PATHS), st.binary(min_size=1, max_size=64)),
        st.tuples(st.just("delete"), st.sampled_from(_PATHS), st.just("")),
        st.tuples(st.just("chmod"), st.sampled_from(_PATHS), st.just("")),
        st.tuples(st.just("rename"), st.sampled_from(_PATHS), st.sampled_from(_PATHS)),
        st.tuples(st.just("symlink"), st.sampled_from(_PATHS), st.sampled_from(_PATHS)),
    ),
    min_size=1,
    max_size=4,
)
_SHAPES = st.sampled_from(
    [
        "git",
        "binary",
        "rename",
        "plain",
        "tab_stamp",
        "space_stamp",
        "plain_tab_stamp",
        "plain_space_stamp",
        "no_prefix",
        "plain_no_prefix",
        "crlf_head",
    ]
)


def _apply_ops(work: Path, ops: list[tuple[str, str, object]]) -> None:
    for op, path, arg in ops:
        full = work / path
        if op in ("write", "binary"):
            if full.is_symlink() or full.is_dir():
                continue
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_bytes(arg.encode() if isinstance(arg, str) else arg)  # type: ignore[union-attr]
        elif op == "delete" and (full.is_file() or full.is_symlink()):
            full.unlink()
        elif op == "chmod" and full.is_file() and not full.is_symlink():
            full.chmod(full.stat().st_mode ^ 0o111)
        elif op == "rename" and full.is_file() and not (work / str(arg)).exists():
            (work / str(arg)).parent.mkdir(parents=True, exist_ok=True)
            full.rename(work / str(arg))
        elif op == "symlink" and not full.exists() and not full.is_symlink():
            full.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(work / str(arg), full.parent), full)


def _shape(data: bytes, shape: str) -> bytes:
    if shape.startswith("plain_"):  # a plain patch, then the rest of the shape
        return _shape(_shape(data, "plain"), shape.removeprefix("plain_"))
    lines = data.splitlines(keepends=True)
    if shape == "plain":
        return b"".join(x for x in lines if not x.startswith((b"diff --git ", b"index ")))
    if shape in ("tab_stamp", "space_stamp"):
        sep = b"\t" if shape == "tab_stamp" else b" "
        stamp = sep + b"2026-11-30 10:00:00.000000000 +0000"
        return b"".join(
            x.rstrip(b"\n") + stamp + b"\n"
            if x.startswith((b"--- ", b"+++ "))
            and not x.startswith((b"--- /dev/null", b"+++ /dev/null"))
            else x
            for x in lines
        )
    if shape == "crlf_head":
        return b"".join(
            x.replace(b"\n", b"\r\n") if x.startswith(b"diff --git") else x for x in lines
        )
    return data


@pytest.fixture(scope="module")
def hypo_repo(repos: dict[str, Path]) -> Path:
    return repos["textkit"]


@settings(
    max_examples=int(os.environ.get("PATCHGATE_TREE_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=_OPS, shape=_SHAPES)
def test_for_any_patch_git_accepts_every_changed_path_is_named(
    hypo_repo: Path,
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[str, str, object]],
    shape: str,
) -> None:
    """Changed symbol's file, excluded path, oracle move or pin mutation: never unnamed. And when
    the parser accepts the patch too, it names exactly the paths the trees say changed."""
    work = tmp_path_factory.mktemp("w") / "repo"
    shutil.copytree(hypo_repo, work, symlinks=True)
    _apply_ops(work, ops)
    git(work, "add", "-A")
    flags = {
        "binary": ["--binary"],
        "rename": ["-M", "--binary"],
        "no_prefix": ["--no-prefix"],
        "plain_no_prefix": ["--no-prefix"],
    }
    data = subprocess.run(
        ["git", "-C", str(work), "diff", "--cached", *flags.get(shape, ["--binary"])],
        check=True, capture_output=True,
    ).stdout  # fmt: skip
    assume(data)
    patch = _shape(data, shape)
    try:
        with materialize(hypo_repo, "HEAD", patch) as ws:
            touched = _touched(ws)
    except PatchApplyError:
        assume(False)
        return
    assert _accounted(touched) == []
    assert set(touched.excluded_paths) | set(touched.files) == set(touched.touched_paths)
    parsed = _parsed_paths(patch)
    if parsed is not None:  # the parser may refuse what git accepts (fail closed), never differ
        assert parsed == touched.touched_paths


def test_one_name_from_two_modules_is_covered_by_nothing(tmp_path: Path) -> None:
    """A regression of ``pkg.sub.f`` (pkg/sub.py) cannot hide behind a new method ``f`` of a
    class ``sub`` in pkg/__init__.py that a ``covers: ["pkg"]`` property would credit."""
    from patchgate.symbols import covers  # noqa: PLC0415

    repo = tmp_path / "r"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg/__init__.py").write_text("X = 1\n")
    (repo / "pkg/sub.py").write_text("def f():\n    return 1\n")
    (repo / "pins").mkdir()
    (repo / "pins/fixtures.json").write_text(
        '{"pin_id": "p", "algorithm": "sha256", "files": {}, "seed": 1, "clock_bound_ms": 1000,'
        ' "allowed_commands": [["python", "-m", "pytest"]]}'
    )
    (repo / "pins/properties.json").write_text('{"properties": []}')
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "pkg/__init__.py").write_text(
        "X = 1\n\n\nclass sub:\n    def f(self):\n        return 2\n"
    )
    (repo / "pkg/sub.py").write_text("def f():\n    return -1\n")
    patch = subprocess.run(["git", "-C", str(repo), "diff"], check=True, capture_output=True).stdout
    t = _judge_patch(repo, patch)  # the base is HEAD: the edited checkout does not matter
    (ambiguous,) = [s for s in t.symbols if s == "pkg.sub.f"]
    assert not any(covers(c, ambiguous) for c in ("pkg", "pkg.sub", "pkg.sub.f"))
    assert "pkg.sub" in t.symbols  # the new class itself, of module pkg
