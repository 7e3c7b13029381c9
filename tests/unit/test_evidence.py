"""Evidence for people (issue 16): run logs beside the ledgers, where symbols and tests live."""

from __future__ import annotations

from pathlib import Path

from client.gate.evidence import locate_properties, log_path, symbol_locations, write_run_logs
from client.gate.runs.targets import SymbolSite
from patchgate.evidence import Evidence, SandboxLog
from patchgate.pins import PropertyPin
from patchgate.results import RunOutcome
from patchgate.v1 import executor_pb2


def test_a_run_log_of_the_signed_report_becomes_a_sandbox_log_of_its_property() -> None:
    msg = executor_pb2.RunLog(
        property_id="p.a", run_index=2, stdout_tail="out\n", stderr_tail="E ImportError",
        stdout_bytes=4, stderr_bytes=900,
    )  # fmt: skip
    log = SandboxLog.from_proto(msg)
    assert (log.properties, log.run_index) == (("p.a",), 2)
    text = log.text()
    assert "ImportError" in text
    assert "# stderr: 900 bytes (last part only)" in text
    assert "# stdout: 4 bytes\nout\n" in text


def test_each_property_of_a_sandbox_gets_its_log_and_earlier_logs_go(tmp_path: Path) -> None:
    stale = tmp_path / "runs" / "old" / "1.log"
    stale.parent.mkdir(parents=True)
    stale.write_text("an earlier check")
    shared = SandboxLog(properties=("p.a", "p.b"), run_index=1, stdout="both ran here")
    written = write_run_logs(tmp_path, [shared])
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == [
        "runs/p.a/1.log",
        "runs/p.b/1.log",
    ]
    assert "both ran here" in (tmp_path / "runs" / "p.b" / "1.log").read_text()
    assert not stale.exists()


def test_a_property_id_never_leaves_the_runs_directory(tmp_path: Path) -> None:
    for pid in ("../../etc/x", "..", "a/b", ""):
        path = log_path(tmp_path, pid, 1)
        assert path.parent.parent == tmp_path / "runs", pid
        assert path.parent.name not in ("", ".", "..")


def test_ids_differing_only_in_punctuation_get_distinct_directories(tmp_path: Path) -> None:
    """``a:b`` and ``a_b`` once shared ``runs/a_b/`` and one's logs were lost (issue 25)."""
    ids = ["a:b", "a_b", "a-b", "a.b", "a%3Ab", "a%b", "a/b", "a b", "", ".", "..", "%", "%2E"]
    dirs = [log_path(tmp_path, pid, 1).parent for pid in ids]
    assert len(set(dirs)) == len(ids), dirs
    assert all(d.parent == tmp_path / "runs" and d.name not in ("", ".", "..") for d in dirs)
    logs = [SandboxLog(properties=(pid,), run_index=1, stdout=pid) for pid in ("a:b", "a_b")]
    written = write_run_logs(tmp_path, logs)
    assert [p.read_text() for p in written] == [logs[0].text(), logs[1].text()]
    assert len(set(written)) == 2


def test_a_runs_link_is_replaced_never_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "runs").symlink_to(elsewhere)
    write_run_logs(tmp_path / "out", [SandboxLog(properties=("p",), run_index=1)])
    assert list(elsewhere.iterdir()) == []
    assert (tmp_path / "out" / "runs" / "p" / "1.log").is_file()


def test_failures_and_the_log_of_a_run() -> None:
    ev = Evidence(
        outcomes=(
            RunOutcome.make("p", 2, "error", "boom"),
            RunOutcome.make("p", 1, "error", "boom"),
            RunOutcome.make("q", 1, "pass"),
        ),
        logs=(SandboxLog(properties=("p", "q"), run_index=2, stderr="x"),),
    )
    assert [o.run_index for o in ev.failures()["p"]] == [1, 2]
    assert "q" not in ev.failures()
    assert ev.log_of("q", 2) is not None
    assert ev.log_of("q", 1) is None


def test_a_property_is_located_at_its_test_function(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "import pytest\n\nclass TestX:\n"
        "    @pytest.mark.slow\n    def test_y(self):\n        pass\n"
    )
    prop = PropertyPin(
        id="a.y", claim="c", property_class="pure_fn", covers=("a",),
        command=("python", "-m", "pytest", "-q", "tests/test_a.py::TestX::test_y[1]"),
    )  # fmt: skip
    outside = PropertyPin(
        id="b", claim="c", property_class="pure_fn", covers=("a",),
        command=("pytest", "../outside.py::test_z"),
    )  # fmt: skip
    (tmp_path.parent / "outside.py").write_text("def test_z():\n    pass\n")
    got = locate_properties(tmp_path, [prop, outside])
    assert (got["a.y"].path, got["a.y"].line) == ("tests/test_a.py", 4)
    assert "b" not in got


def test_a_test_defined_in_an_except_handler_or_a_match_case_is_located(tmp_path: Path) -> None:
    """The evidence reader walks definitions with the gate's one walker (the one that names
    changed symbols): it enters ``except`` handlers and ``match`` cases (its own walker did not)."""
    (tmp_path / "test_b.py").write_text(
        "try:\n    import fast\nexcept ImportError:\n    def test_slow():\n        pass\n"
        "match 1:\n    case 1:\n        def test_case():\n            pass\n"
    )
    props = [
        PropertyPin(
            id=name,
            claim="c",
            property_class="pure_fn",
            covers=("b",),
            command=("python", "-m", "pytest", f"test_b.py::{name}"),
        )
        for name in ("test_slow", "test_case")
    ]
    got = locate_properties(tmp_path, props)
    assert {k: v.line for k, v in got.items()} == {"test_slow": 4, "test_case": 8}


def test_symbol_locations_are_the_located_sites_first_lines() -> None:
    sites = {
        "m.f": SymbolSite("m.f", "m.py", 3, 9, "f"),
        "module:m": SymbolSite("module:m", "m.py", 1, 20, None),
    }
    got = symbol_locations(sites)
    assert {k: (v.path, v.line) for k, v in got.items()} == {
        "m.f": ("m.py", 3),
        "module:m": ("m.py", 1),
    }


def test_of_a_test_defined_twice_the_last_one_is_located(tmp_path: Path) -> None:
    """Python binds the last definition and the classifier judges it: the report points there."""
    (tmp_path / "test_c.py").write_text(
        "def test_x():\n    assert f()\n\n\ndef test_x():\n    assert True\n"
    )
    prop = PropertyPin(
        id="c.x", claim="c", property_class="pure_fn", covers=("c",),
        command=("python", "-m", "pytest", "test_c.py::test_x"),
    )  # fmt: skip
    got = locate_properties(tmp_path, [prop, prop])
    assert got["c.x"].line == 5
