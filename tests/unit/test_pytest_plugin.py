"""The package's pytest plugins: the ``patchgate`` marker and the collector of marked tests.

The marker plugin is loaded in this very suite (the ``pytest11`` entry point), under
``--strict-markers``; the collector is run by pytest in a subprocess, as ``pin properties`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchgate.pytest_collect import OUT_ENV
from patchgate.schemas import SCHEMA_KINDS, load_schema


@pytest.mark.patchgate(claim="the marker is registered", kind="pure_fn", covers=[])
def test_marker_is_registered_here(pytestconfig: pytest.Config) -> None:
    """This suite runs with --strict-markers: the mark above would be an error if unregistered."""
    lines = pytestconfig.getini("markers")
    assert any(str(line).startswith("patchgate(") for line in lines)


def test_every_schema_ships_with_the_package() -> None:
    """The schemas are package data: loaded by name, each a draft 2020-12 schema."""
    for kind in SCHEMA_KINDS:
        assert load_schema(kind)["$schema"].endswith("/draft/2020-12/schema")
    with pytest.raises(ValueError, match="unknown schema"):
        load_schema("nope")


PYTEST = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]


def _collect(tmp_path: Path, source: str, *extra: str) -> tuple[int, dict[str, object], str]:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(source, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    out = tmp_path / "collected.json"
    env = {**os.environ, OUT_ENV: str(out), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [*PYTEST, "-p", "patchgate.pytest_collect", "--rootdir", str(tmp_path), *extra],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    data = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, data, proc.stdout + proc.stderr


def test_collector_writes_marked_items_only(tmp_path: Path) -> None:
    """Marked tests become records (closest mark wins, tuples as lists); others are left out."""
    code, data, output = _collect(
        tmp_path,
        "import pytest\n"
        "pytestmark = pytest.mark.patchgate(kind='bounded_time', covers=[])\n"
        "@pytest.mark.patchgate(claim='c', kind='pure_fn', covers=('m.f',), id='p.one')\n"
        "def test_one(): pass\n"
        "def test_two(): pass\n"
        "@pytest.mark.parametrize('x', [1, 2])\n"
        "@pytest.mark.patchgate(kind='pure_fn', covers=[object()])\n"
        "def test_three(x): pass\n",
    )
    assert code == 0, output
    items = {i["nodeid"]: i for i in data["items"]}  # type: ignore[attr-defined]
    one = items["tests/test_a.py::test_one"]
    assert one["kwargs"] == {"claim": "c", "kind": "pure_fn", "covers": ["m.f"], "id": "p.one"}
    assert one["parametrized"] is False
    assert items["tests/test_a.py::test_two"]["kwargs"] == {"kind": "bounded_time", "covers": []}
    three = items["tests/test_a.py::test_three[1]"]
    assert three["parametrized"] is True
    assert three["kwargs"]["covers"] == [{"unsupported": "object"}]


def test_collector_registers_the_marker_without_autoload(tmp_path: Path) -> None:
    """With plugin autoloading off and --strict-markers, the collector alone registers the mark."""
    code, data, output = _collect(
        tmp_path, "import pytest\n@pytest.mark.patchgate(kind='pure_fn')\ndef test_x(): pass\n"
    )
    assert code == 0, output
    assert [i["nodeid"] for i in data["items"]] == ["tests/test_a.py::test_x"]  # type: ignore[attr-defined]
