"""The executor's reporter plugin and its report channel, for real: a pytest subprocess on the host
with ``-p patchgate_reporter`` streaming into a ``ReportChannel`` over a unix socket (no Docker).
"""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from executord.inside import MODULE, REPORTER_DIR
from executord.runs.channel import MAX_CHANNEL_BYTES, ReportChannel, write_targets
from executord.runs.records import RecordLog, property_outcome
from patchgate.pytest_plugin import MARKER_LINE

pytestmark = [pytest.mark.integration]

PLUGIN = str(REPORTER_DIR / f"{MODULE}.py")
NONCE = "c0ffee" * 5 + "00"
SUITE = """
import os
import pytest

def helper(x):
    return x + 1

def untouched():
    return 0

def test_ok():
    assert helper(1) == 2

def test_bad():
    assert helper(1) == 3, "helper moved"

@pytest.mark.parametrize("v", [1, 2])
def test_param(v):
    assert v

@pytest.fixture
def broken():
    raise RuntimeError("fixture down")

def test_setup_error(broken):
    pass

def test_skipped():
    pytest.skip("not today")

def test_env_is_clean():
    assert "PATCHGATE_REPORT_NONCE" not in os.environ
    with open("/proc/self/environ", "rb") as fh:
        assert NONCE.encode() not in fh.read()

@pytest.mark.patchgate(claim="c", kind="pure_fn", covers=["m.helper"])
def test_marked():
    pass
"""


@pytest.fixture
def rundir() -> Iterator[Path]:
    """A short directory (unix socket paths are limited) holding the run's socket and targets."""
    with tempfile.TemporaryDirectory(prefix="pgrep-", dir="/tmp") as d:
        yield Path(d)


def _pytest(
    rundir: Path,
    suite: str,
    *args: str,
    targets: bool = False,
    extra: dict[str, str] | None = None,
) -> tuple[RecordLog, int, str]:
    ws = rundir / "ws"
    ws.mkdir()
    (ws / "test_suite.py").write_text(suite.replace("NONCE", repr(NONCE)), encoding="utf-8")
    for name, text in (extra or {}).items():
        (ws / name).write_text(text, encoding="utf-8")
    if targets:
        write_targets(rundir, [("test_suite.py", 5, 6, "m.helper"), ("test_suite.py", 8, 9, "m.u")])
    channel = ReportChannel(rundir, NONCE)
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPORTER_DIR),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PATCHGATE_REPORT_NONCE": NONCE,
        "PATCHGATE_REPORT_SOCKET": str(rundir / "report.sock"),
        **({"PATCHGATE_REPORT_TARGETS": str(rundir / "targets.json")} if targets else {}),
    }
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--strict-markers"]
    proc = subprocess.run(
        [*argv, *args, "-p", MODULE],
        cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return channel.finish(5.0), proc.returncode, proc.stdout + proc.stderr


def test_each_test_is_reported_as_it_ends(rundir: Path) -> None:
    """pass, fail (with its message), parametrized items, setup error, skip; final = exit status."""
    log, code, out = _pytest(rundir, SUITE, "test_suite.py")
    assert log.problems == [], out
    assert log.started
    assert log.plugin == PLUGIN
    got = {n.split("::")[1]: i.outcome for n, i in log.items.items()}
    assert got == {
        "test_ok": "pass", "test_bad": "fail", "test_param[1]": "pass", "test_param[2]": "pass",
        "test_setup_error": "error", "test_skipped": "skip", "test_env_is_clean": "pass",
        "test_marked": "pass",
    }  # fmt: skip
    assert "helper moved" in log.items["test_suite.py::test_bad"].failure
    assert "fixture down" in log.items["test_suite.py::test_setup_error"].failure
    assert log.exitstatus == code == 1


def test_outcome_rule_on_a_real_session(rundir: Path) -> None:
    """With the real exit status: pass only for a clean node id run; fail for the failing one."""
    log, code, _ = _pytest(rundir, SUITE, "test_suite.py::test_ok", "test_suite.py::test_param")
    assert property_outcome(log, ["test_suite.py::test_ok"], code, PLUGIN)[0] == "pass"
    assert property_outcome(log, ["test_suite.py::test_param"], code, PLUGIN)[0] == "pass"
    assert property_outcome(log, ["test_suite.py::test_ok"], 1, PLUGIN)[0] == "error"


def test_nonce_is_gone_before_any_test_module_is_imported(rundir: Path) -> None:
    """Neither os.environ nor /proc/self/environ shows the nonce to the code under test."""
    log, _, out = _pytest(rundir, SUITE, "test_suite.py::test_env_is_clean")
    assert log.items["test_suite.py::test_env_is_clean"].outcome == "pass", out


def test_executed_targets_are_reported_per_test(rundir: Path) -> None:
    """A test that calls the target lists it; one that does not, lists nothing."""
    log, _, out = _pytest(rundir, SUITE, "test_suite.py", targets=True)
    assert log.items["test_suite.py::test_ok"].executed == ("m.helper",), out
    assert log.items["test_suite.py::test_param[1]"].executed == ()


def test_collection_error_names_its_cause(rundir: Path) -> None:
    """A test module that does not import: missing, and the error says why."""
    log, code, _ = _pytest(rundir, "import no_such_module_here\n", "test_suite.py::test_x")
    outcome, text, _ = property_outcome(log, ["test_suite.py::test_x"], code, PLUGIN)
    assert outcome == "error"
    assert "no_such_module_here" in text


def test_os_exit_after_a_failure_is_never_a_pass(rundir: Path) -> None:
    """A failing test whose code calls os._exit(0) at interpreter exit: no final record: error."""
    suite = "import atexit, os\natexit.register(os._exit, 0)\ndef test_x():\n    assert 0\n"
    log, code, _ = _pytest(rundir, suite, "test_suite.py::test_x")
    assert code == 0
    outcome, text, _ = property_outcome(log, ["test_suite.py::test_x"], code, PLUGIN)
    assert outcome == "error"
    assert "disagree" in text


def test_a_second_connection_is_refused_and_flagged(rundir: Path) -> None:
    """Code under test that opens its own connection to the socket to send records: error."""
    suite = textwrap.dedent("""
        import json, socket
        def test_x():
            s = socket.socket(socket.AF_UNIX)
            s.connect(__import__("os").environ.get("SOCK", "") or SOCK)
            s.sendall(b'{"v":1}\\n')
    """).replace("SOCK)", repr(str(rundir / "report.sock")) + ")")
    log, code, _ = _pytest(rundir, suite, "test_suite.py::test_x")
    assert "a second connection to the report channel" in log.problems
    assert property_outcome(log, ["test_suite.py::test_x"], code, PLUGIN)[0] == "error"


def test_the_sandbox_registers_the_same_patchgate_marker() -> None:
    """The reporter's marker line is the project's (it replaces the plugin in a sandbox)."""
    tree = ast.parse(Path(PLUGIN).read_text(encoding="utf-8"))
    line = next(
        ast.literal_eval(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "_MARKER_LINE" for t in n.targets)
    )
    assert line == MARKER_LINE


FORGED_REPORT = """
import _pytest.reports as reports

_real = reports.TestReport.from_item_and_call.__func__


def _passed(cls, item, call):
    rep = _real(cls, item, call)
    rep.outcome, rep.longrepr = "passed", None
    return rep


reports.TestReport.from_item_and_call = classmethod(_passed)


def test_x():
    assert 1 + 1 == 3, "regression"
"""


def test_a_report_rewritten_after_the_call_is_error(rundir: Path) -> None:
    """Code that rewrites pytest's reports to passed (pytest itself then exits 0): error."""
    log, code, _ = _pytest(rundir, FORGED_REPORT, "test_suite.py::test_x")
    assert code == 0  # pytest believed the forgery
    outcome, text, _ = property_outcome(log, ["test_suite.py::test_x"], code, PLUGIN)
    assert outcome == "error"
    assert "raised AssertionError: regression" in text


def _connect(rundir: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(rundir / "report.sock"))
    return s


def test_finish_never_waits_past_its_grace_for_an_open_stream(rundir: Path) -> None:
    """A writer that keeps its connection open and silent: finish returns after the grace, while
    the writer still holds the stream open (it is closed only after finish returned: the return
    itself is the event; no clock is read, so a loaded machine cannot fail it)."""
    channel = ReportChannel(rundir, NONCE)
    held = _connect(rundir)
    held.sendall(b'{"v":1,"nonce":"')  # half a record, never finished
    try:
        log = channel.finish(0.5)
        assert held.fileno() != -1  # still open: finish did not wait for the writer
    finally:
        held.close()
    assert "the report stream did not end with the test process" in log.problems


def test_a_record_cut_off_at_the_end_of_the_stream_is_a_problem(rundir: Path) -> None:
    """Bytes after the last newline when the stream ends: not a record, a problem."""
    channel = ReportChannel(rundir, NONCE)
    with _connect(rundir) as s:
        s.sendall(b'{"v":1,"nonce":"x"')
    assert "a report record cut off at the end of the stream" in channel.finish(2.0).problems


def test_more_bytes_than_the_cap_cut_the_connection(rundir: Path) -> None:
    """Junk lines past 8 MiB: the executor closes the stream; the writer gets an error."""
    channel = ReportChannel(rundir, NONCE)
    s = _connect(rundir)
    line = b"x" * 1000 + b"\n"
    with pytest.raises(OSError):  # noqa: PT012 - the error comes from one of many sends
        for _ in range((MAX_CHANNEL_BYTES // len(line)) * 4):
            s.sendall(line * 64)
    s.close()
    log = channel.finish(2.0)
    assert any(str(MAX_CHANNEL_BYTES) in p for p in log.problems)


def test_a_channel_nobody_connected_to_finishes_at_once(rundir: Path) -> None:
    """No reporter (pytest never started): finish does not wait out its grace. The grace here is
    an hour, past the test's own time limit: that finish returns at all shows it did not wait
    (the old check, "under a second" for a 5 s grace, failed on a loaded machine)."""
    channel = ReportChannel(rundir, NONCE)
    log = channel.finish(3600.0)
    assert (log.started, log.problems) == (False, [])


EARLY_PLUGIN = """
import os, socket

with open("seen-env.txt", "w") as fh:
    fh.write(repr(sorted(k for k in os.environ if k.startswith("PATCHGATE_"))))
s = socket.socket(socket.AF_UNIX)
s.connect(SOCK)
s.sendall(b'{"v":1,"kind":"start"}\\n')
"""


def test_a_workspace_plugin_loaded_before_the_reporter_finds_no_nonce(rundir: Path) -> None:
    """``addopts = -p early`` in the workspace loads its plugin before ours: the nonce is already
    gone from its environment (taken at interpreter start) and its connection is the second one."""
    early = EARLY_PLUGIN.replace("SOCK", repr(str(rundir / "report.sock")))
    ini = "[pytest]\naddopts = -p early_plugin\n"
    log, code, out = _pytest(
        rundir, SUITE, "test_suite.py::test_ok", extra={"early_plugin.py": early, "pytest.ini": ini}
    )
    assert (rundir / "ws" / "seen-env.txt").read_text() == "[]", out
    assert "a second connection to the report channel" in log.problems
    assert property_outcome(log, ["test_suite.py::test_ok"], code, PLUGIN)[0] == "error"
