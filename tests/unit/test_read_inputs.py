"""Every file a run reads is pinned or scored (issue 22, item 3).

A changed file that is neither production source nor a pinned fixture (nor oracle, harness, pins
or compiled code) is ``R7`` when a trustworthy record shows a property's run opened or listed it,
otherwise a changed input ``data:<path>``; without a record (every run today, ``--judge off``)
every such file is ``R7``. Git runs here; no sockets, no Docker.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from client.analysis.patch.roles import Layout, layout_of
from client.analysis.patch.touched import Touched, read_inputs, unpinned_reads
from client.gate import steps
from client.gate.workspace import materialize
from patchgate.pins import DirSource, load_pins
from tests.attacks.repos import CORPUS, build

CLOCK = dt.datetime(2026, 9, 10, tzinfo=dt.UTC)
LAYOUT = Layout(source_roots=("",), oracle_paths=("tests/",), pins_dir="pins")


def _touched(roles: dict[str, tuple[str, ...]]) -> Touched:
    return Touched(roles=roles, symbols=(), files={})


def test_unscored_inputs_are_what_no_other_rule_judges() -> None:
    t = _touched({
        "README.md": ("data",), "data/t.json": ("data",), "gen/x.py": ("excluded",),
        "fixtures/a.json": ("data",), "pkg/m.py": ("source",), "tests/t.py": ("oracle",),
        "conftest.py": ("harness",), "pins/p.json": ("pin",), "x.so": ("compiled",),
        "pyproject.toml": ("data",),
    })  # fmt: skip
    assert t.unscored_inputs("fixtures") == (
        "README.md",
        "data/t.json",
        "gen/x.py",
        "pyproject.toml",
    )


def test_without_a_record_every_unscored_input_is_an_oracle_input() -> None:
    judged = read_inputs(("README.md", "data/t.json"), None)
    assert judged.oracle == ("README.md", "data/t.json")
    assert judged.data == ()
    assert "no trustworthy record" in judged.why
    assert read_inputs((), None).oracle == ()


def test_with_a_record_only_what_a_run_opened_or_listed_is_an_oracle_input() -> None:
    paths = ("README.md", "data/t.json", "data/sub/u.csv", "docs/a.md")
    judged = read_inputs(paths, frozenset({"data/t.json", "data/sub"}))
    assert judged.oracle == ("data/t.json", "data/sub/u.csv")
    assert judged.data == ("README.md", "docs/a.md")
    assert read_inputs(paths, frozenset({""})).oracle == paths  # the root listed: all of it
    assert read_inputs(paths, frozenset()).data == paths


def test_self_test_warnings_need_a_record() -> None:
    assert unpinned_reads(None, frozenset({"fixtures/a.json"}), LAYOUT) is None
    opened = {
        "p.ok": frozenset({"fixtures/a.json", "pkg/m.py", "tests/test_x.py"}),
        "p.table": frozenset({"fixtures/a.json", "data/t.json"}),
    }
    assert unpinned_reads(opened, frozenset({"fixtures/a.json"}), LAYOUT) == (
        "p.table reads files outside the fixture pin: data/t.json",
    )


@pytest.fixture(scope="module")
def table_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build("billing_data_table", tmp_path_factory.mktemp("inputs") / "r")


def _oracle(repo: Path, patch: str, opened: frozenset[str] | None) -> steps.OracleResult:
    with materialize(repo, "HEAD", (CORPUS / "patches" / patch).read_bytes()) as ws:
        pins = steps.resolve_pins(ws, load_pins(DirSource(ws.base_dir)))
        touched = steps.changed(ws, pins)
        reports = steps.classify(ws.patched_dir, pins.properties)
        base = steps.classify(ws.base_dir, pins.properties)
        assert layout_of(ws.base_dir, pins).role("data/prorate_table.json") == "data"
        return steps.oracle_and_pins(touched, pins, reports, base, CLOCK, opened_paths=opened)


def test_the_rewritten_table_is_r7_without_a_record(table_repo: Path) -> None:
    found = _oracle(table_repo, "oracle_table_outside_fixtures.patch", None)
    assert found.oracle_moved
    assert any("oracle input" in r and "data/prorate_table.json" in r for r in found.reasons)
    assert found.changed_inputs == ()


def test_with_a_record_the_table_is_r7_if_read_and_a_data_input_if_not(table_repo: Path) -> None:
    read = _oracle(table_repo, "oracle_table_outside_fixtures.patch", frozenset({"data"}))
    assert read.oracle_moved
    assert read.changed_inputs == ()
    unread = _oracle(table_repo, "oracle_table_outside_fixtures.patch", frozenset())
    assert not unread.oracle_moved
    assert unread.changed_inputs == ("data:data/prorate_table.json",)


def test_a_code_only_patch_moves_nothing(table_repo: Path) -> None:
    found = _oracle(table_repo, "control_billing_refactor.patch", None)
    assert not found.oracle_moved
    assert found.reasons == ()
