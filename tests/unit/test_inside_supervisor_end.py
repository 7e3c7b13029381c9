"""Where the supervisor places the subject's end (issue 20): the subject exits when the judge
says goodbye, after the last test's item and the session's final record; under load the
supervisor reads those late and found the subject already gone, counting a flaky "the subject
exited" error against the test that had just passed (seen in CI on the compose and swarm lanes).
An end while the judge was still in a test, or with no goodbye, is still that test's.

Each scenario runs in a child interpreter of its own: the supervisor reaps with ``waitpid(-1)``,
which must not touch this test process's children. The subject is a real process, made a zombie
before the supervisor looks (``waitid(WNOWAIT)`` waits for its exit without reaping it)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.unit._inside_helpers import INSIDE

SCENARIO = textwrap.dedent(
    """
    import importlib.util, json, os, subprocess, sys
    spec = importlib.util.spec_from_file_location("_patchgate_supervisor", sys.argv[1])
    sup_mod = importlib.util.module_from_spec(spec)
    sys.modules["_patchgate_supervisor"] = sup_mod
    spec.loader.exec_module(sup_mod)
    wire = sup_mod.wire
    pair = sup_mod.pair
    steps = json.loads(sys.argv[2])

    class Out:
        def __init__(self):
            self.recs = []
        def send(self, rec):
            self.recs.append(rec)

    out = Out()
    sup = pair.Pair({}, out, sup_mod.zygotepool.ZygotePool({}))
    sup.started = True
    judge = pair.Child("judge", subprocess.Popen(["sleep", "60"]), None)
    child = subprocess.Popen([sys.executable, "-c", steps["exit"]])
    subject = pair.Child("subject", child, None)
    r, w = os.pipe()
    jlines = pair.Lines(r)

    def rec(kind, **kw):
        return wire.record_line({"kind": kind, **kw})

    for kind, nodeid in steps["before"]:  # read while the subject runs
        sup.from_judge(rec(kind, nodeid=nodeid).rstrip(b"\\n"), subject)
    os.waitid(os.P_PID, subject.proc.pid, os.WEXITED | os.WNOWAIT)  # a zombie now
    for kind, nodeid in steps["after"]:  # written before the end, read after it
        fields = {"exitstatus": 0} if kind == "finish" else {"nodeid": nodeid, "outcome": "pass"}
        os.write(w, rec(kind, **fields))
    if steps["read_first"]:  # the main loop read them before it reaped
        for line in jlines.read():
            sup.from_judge(line, subject)
    sup.reap(judge, subject, jlines)
    judge.proc.kill()
    judge.proc.wait()
    print(json.dumps([x for x in out.recs if x.get("kind") == "subject"]))
    """
)


def _ends(
    before: list[list[str]], after: list[list[str]], *, read_first: bool, exit_code: int = 0
) -> list[dict[str, object]]:
    steps = {"before": before, "after": after, "read_first": read_first,
             "exit": f"raise SystemExit({exit_code})"}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", SCENARIO, str(INSIDE / "supervisor.py"), json.dumps(steps)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    ends: list[dict[str, object]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return ends


LAST = "tests/test_x.py::test_last"


def test_an_end_after_the_goodbye_read_late_is_no_test_s() -> None:
    """The race itself: item and final record in the pipe, the subject already a zombie."""
    for read_first in (True, False):
        ends = _ends([["begin", LAST]], [["item", LAST], ["finish", ""]], read_first=read_first)
        assert [e["nodeid"] for e in ends] == [""], (read_first, ends)


def test_an_end_during_a_test_is_that_test_s() -> None:
    """Control: the subject exited while the judge was still in the test (no item yet)."""
    ends = _ends([["begin", LAST]], [], read_first=False)
    assert [(e["event"], e["nodeid"]) for e in ends] == [("exit", LAST)]


def test_an_end_before_the_item_without_a_goodbye_is_that_test_s() -> None:
    """The judge reported the test after the subject had gone, and the session is not over:
    read first or drained at the reap, the end is still the test's."""
    for read_first in (True, False):
        ends = _ends([["begin", LAST]], [["item", LAST]], read_first=read_first)
        assert [e["nodeid"] for e in ends] == [LAST], (read_first, ends)


def test_a_failing_exit_after_the_goodbye_is_still_reported() -> None:
    """Only a clean exit 0 after the final record is the subject's own end; status 3 is not."""
    ends = _ends([["begin", LAST]], [["item", LAST], ["finish", ""]], read_first=True,
                 exit_code=3)  # fmt: skip
    assert [(e["event"], e["returncode"]) for e in ends] == [("exit", 3)]
    assert ends[0]["nodeid"] == LAST
