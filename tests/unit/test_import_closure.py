"""Where an introspection marker counts (issue 20 item 6): the static import closure of a batch's
runs (client.analysis.mutation.imports) and the per-symbol map of client.gate.steps.introspection.
Real files in two temp trees; no git, no sockets, no Docker."""

from __future__ import annotations

from pathlib import Path

import pytest

from client.analysis.mutation.imports import Closure, ImportGraph
from client.analysis.patch.roles import Layout
from client.gate import steps
from client.gate.workspace import Workspace
from patchgate.pins import FixturePin, PinSet, ProjectConfig, PropertyPin
from patchgate.symbols import Symbol

LAYOUT = Layout(source_roots=("src",), oracle_paths=("tests/",), pins_dir="pins")
ALLOWED = (("pytest",),)

BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/a.py": "from . import b\n\n\ndef f(x):\n    return b.g(x)\n",
    "src/pkg/b.py": "from .sub.c import k\n\n\ndef g(x):\n    return k(x)\n",
    "src/pkg/sub/__init__.py": "",
    "src/pkg/sub/c.py": "def k(x):\n    return x\n",
    "src/pkg/lonely.py": "def h(x):\n    return x\n",
    "src/pkg/deep.py": "def d(x):\n    return x\n",
    "src/other/__init__.py": "",
    "src/other/m.py": "def m(x):\n    return x\n",
    "tests/conftest.py": "import pkg.sub\n",
    "tests/helpers.py": "from pkg import deep\n",
    "tests/test_a.py": "from pkg.a import f\n\n\ndef test_f():\n    assert f(1) == 1\n",
    "tests/test_m.py": "from other.m import m\n\n\ndef test_m():\n    assert m(1) == 1\n",
    "tests/test_h.py": "from helpers import deep\n\n\ndef test_d():\n    assert deep.d(1) == 1\n",
    "tests/far/conftest.py": "import pkg.lonely\n",
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _trees(tmp: Path, change: dict[str, str] | None = None) -> tuple[Path, Path]:
    base = _write(tmp / "base", BASE)
    patched = _write(tmp / "patched", {**BASE, **(change or {})})
    return base, patched


def _closure(
    tmp: Path, *commands: tuple[str, ...], change: dict[str, str] | None = None
) -> Closure:
    base, patched = _trees(tmp, change)
    return ImportGraph(LAYOUT, base, patched).closure(commands, ALLOWED)


def test_the_closure_follows_imports_transitively_and_resolves_relative_ones(
    tmp_path: Path,
) -> None:
    closure = _closure(tmp_path, ("pytest", "tests/test_a.py::test_f"))
    assert closure.open == ""
    assert {"src/pkg/a.py", "src/pkg/b.py", "src/pkg/sub/c.py", "src/pkg/__init__.py"} <= (
        closure.files
    )
    assert "tests/conftest.py" in closure.files  # the conftest on the test file's path
    for never in ("src/pkg/lonely.py", "src/other/m.py", "src/pkg/deep.py"):
        assert not closure.reaches(never), never  # tests/far/conftest.py is not on the path


def test_a_helper_of_the_tests_is_followed_to_production_code(tmp_path: Path) -> None:
    closure = _closure(tmp_path, ("pytest", "tests/test_h.py::test_d"))
    assert {"tests/helpers.py", "src/pkg/deep.py"} <= closure.files
    assert not closure.reaches("src/pkg/a.py")


def test_a_dynamic_import_anywhere_in_the_closure_reaches_every_file(tmp_path: Path) -> None:
    dynamic = {"src/pkg/sub/c.py": "import importlib\n\n\ndef k(x):\n"
               "    return importlib.import_module(x)\n"}  # fmt: skip
    closure = _closure(tmp_path, ("pytest", "tests/test_a.py::test_f"), change=dynamic)
    assert "src/pkg/sub/c.py:5 import_module of a name not written out" in closure.open
    assert closure.reaches("src/pkg/lonely.py")
    assert closure.reaches("src/other/m.py")
    # the same call in a file no run imports opens nothing
    far = _closure(tmp_path / "far", ("pytest", "tests/test_m.py::test_m"), change=dynamic)
    assert far.open == ""
    assert not far.reaches("src/pkg/sub/c.py")


@pytest.mark.parametrize(
    "code",
    [
        "exec(open('x').read())\n",
        "import runpy\n",
        "from importlib.util import spec_from_file_location\n",
        "import sys\nsys.path.insert(0, 'x')\n",
        "from importlib import import_module as im\n",
        "import subprocess\n",
        "__import__(name)\n",
    ],
)
def test_each_way_of_loading_an_unseen_name_opens_the_closure(tmp_path: Path, code: str) -> None:
    closure = _closure(
        tmp_path, ("pytest", "tests/test_m.py::test_m"), change={"src/other/m.py": code}
    )
    assert closure.open.startswith("src/other/m.py:"), closure
    assert closure.reaches("src/pkg/lonely.py")


def test_a_constant_import_module_is_a_static_import(tmp_path: Path) -> None:
    const = {"src/other/m.py": "import importlib\n\nimportlib.import_module('pkg.lonely')\n"}
    closure = _closure(tmp_path, ("pytest", "tests/test_m.py::test_m"), change=const)
    assert closure.open == ""
    assert closure.reaches("src/pkg/lonely.py")
    assert not closure.reaches("src/pkg/a.py")


def test_a_batch_imports_what_any_of_its_properties_imports(tmp_path: Path) -> None:
    closure = _closure(
        tmp_path, ("pytest", "tests/test_m.py::test_m"), ("pytest", "tests/test_a.py::test_f")
    )
    assert closure.reaches("src/other/m.py")
    assert closure.reaches("src/pkg/sub/c.py")


@pytest.mark.parametrize(
    ("command", "why"),
    [
        (("pytest", "tests/test_gone.py::test_x"), "names no file of the tree"),
        (("pytest", "-q"), "names no test file"),
        (("pytest", "../elsewhere/test_x.py::t"), "outside the tree"),
    ],
)
def test_a_command_the_reader_cannot_follow_reaches_every_file(
    tmp_path: Path, command: tuple[str, ...], why: str
) -> None:
    closure = _closure(tmp_path, command)
    assert why in closure.open
    assert closure.reaches("src/pkg/lonely.py")


def test_a_file_of_the_closure_that_does_not_parse_reaches_every_file(tmp_path: Path) -> None:
    closure = _closure(
        tmp_path, ("pytest", "tests/test_m.py::test_m"), change={"src/other/m.py": "def (:\n"}
    )
    assert closure.open == "src/other/m.py does not parse"


def test_a_module_reached_through_a_linked_directory_reaches_every_file(tmp_path: Path) -> None:
    """Its own path would not be the path of the file a marker is counted in."""
    base, patched = _trees(tmp_path, {"tests/test_m.py": "from other.linked import x\n"})
    (patched / "src/other/linked").symlink_to(patched / "src/pkg/sub", target_is_directory=True)
    (patched / "src/pkg/sub/x.py").write_text("X = 1\n", encoding="utf-8")
    closure = ImportGraph(LAYOUT, base, patched).closure([("pytest", "tests/test_m.py")], ALLOWED)
    assert "a link or reached through one" in closure.open
    assert closure.reaches("src/pkg/sub/x.py")


# -- per symbol, through the gate's step ------------------------------------------------------


def _prop(pid: str, covers: str, command: tuple[str, ...]) -> PropertyPin:
    return PropertyPin(
        id=pid, claim="c", property_class="pure_fn", covers=(covers,), command=command
    )


SUITE = (
    _prop("p.f", "pkg.a.f", ("pytest", "-q", "tests/test_a.py::test_f")),  # its own batch
    _prop("p.m", "other.m.m", ("pytest", "tests/test_m.py::test_m")),
)
F, M = Symbol.make("pkg.a", "f"), Symbol.make("other.m", "m")


def _marked(tmp: Path, change: dict[str, str]) -> dict[str, str]:
    base, patched = _trees(tmp, change)
    ws = Workspace(repo=tmp, base_rev="0" * 40, base_dir=base, patched_dir=patched)
    fixtures = FixturePin(
        pin_id="x",
        algorithm="sha256",
        files={},
        seed=1,
        clock_bound_ms=1000,
        allowed_commands=ALLOWED,
    )
    pins = PinSet(config=ProjectConfig(source_roots=("src",)), fixtures=fixtures, properties=SUITE)
    return steps.introspection(ws, pins, [F, M], SUITE)


def test_a_marker_counts_only_against_symbols_whose_runs_import_its_file(tmp_path: Path) -> None:
    guard = "def k(x):\n    return k.__code__\n"
    found = _marked(
        tmp_path, {"src/pkg/sub/c.py": guard, "src/other/m.py": "def m(x):\n    return -x\n"}
    )
    assert set(found) == {F}  # c.py is imported by test_a's run (through a and b), not test_m's
    assert "src/pkg/sub/c.py:2 attribute .__code__" in found[F]
    assert "p.f" in found[F]


def test_a_marker_in_a_module_no_run_imports_affects_no_symbol(tmp_path: Path) -> None:
    found = _marked(tmp_path, {"src/pkg/lonely.py": "import gc\n\ndef h(x):\n    return gc\n"})
    assert found == {}


def test_a_dynamic_import_in_a_run_makes_every_marker_count(tmp_path: Path) -> None:
    change = {
        "src/pkg/lonely.py": "import gc\n\ndef h(x):\n    return gc\n",
        "src/other/m.py": "def m(x):\n    return __import__(x)\n",
    }
    found = _marked(tmp_path, change)
    assert set(found) == {M}
    assert "may import any file" in found[M]
    assert "src/pkg/lonely.py:1 import gc" in found[M]


def test_an_environment_switch_keeps_the_mutation_evidence(tmp_path: Path) -> None:
    honest = "import os\n\nDEBUG = os.environ.get('DEBUG')\n\n\ndef k(x):\n    return x\n"
    assert _marked(tmp_path, {"src/pkg/sub/c.py": honest}) == {}
