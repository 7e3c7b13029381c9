"""``Pair.end_subject_by_uid`` (issue 41, item 3) without a uid switch: a grandchild of the subject
that left its session and holds the subject's report pipe cannot hold the supervisor past the end
grace; the pipe is read up to then (the subject's last record kept) and closed. With the switch
(every sandbox) the grandchild is killed by its uid: tests/integration/test_executor_held_pipes.py.

Runs in a child interpreter: the supervisor reaps with ``waitpid(-1)``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.unit._inside_helpers import INSIDE

SCENARIO = textwrap.dedent(
    """
    import importlib.util, json, os, signal, subprocess, sys, time
    spec = importlib.util.spec_from_file_location("_patchgate_supervisor", sys.argv[1])
    sup_mod = importlib.util.module_from_spec(spec)
    sys.modules["_patchgate_supervisor"] = sup_mod
    spec.loader.exec_module(sup_mod)
    wire = sup_mod.wire
    pair = sup_mod.pair

    class Out:
        def __init__(self):
            self.recs = []
        def send(self, rec):
            self.recs.append(rec)

    out = Out()
    sup = pair.Pair({}, out, sup_mod.zygotepool.ZygotePool({}))
    sup.started = True
    judge = pair.Child("judge", subprocess.Popen(["true"]), None)
    judge.status = judge.proc.wait()
    r, w = os.pipe()
    line = wire.record_line({"kind": "executed", "phase": "test", "nodeid": "t::x", "targets": []})
    holder = (
        "import os, sys, time\\n"
        "w = int(sys.argv[1])\\n"
        "os.write(w, bytes.fromhex(sys.argv[2]))\\n"
        "pid = os.fork()\\n"
        "if pid == 0:\\n"
        "    os.setsid()\\n"
        "    time.sleep(60)\\n"
        "    os._exit(0)\\n"
        "print(pid, flush=True)\\n"
    )
    child = subprocess.Popen([sys.executable, "-c", holder, str(w), line.hex()], pass_fds=(w,),
                             stdout=subprocess.PIPE)
    os.close(w)
    grandchild = int(child.stdout.readline())
    subject = pair.Child("subject", child, None)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # it ended by itself, as in finish()
    sup.reap(judge, subject)
    t0 = time.monotonic()
    sup.end_subject_by_uid(judge, subject, pair.Lines(r))
    took = time.monotonic() - t0
    os.kill(grandchild, signal.SIGKILL)
    print(json.dumps({"took": took, "status": subject.status, "recs": out.recs}))
    """
)


def test_a_held_report_pipe_holds_the_end_no_longer_than_the_grace() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCENARIO, str(INSIDE / "supervisor.py")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["status"] == 0
    assert got["took"] < 10, got  # the grace is 2 s; the holder sleeps 60 s
    # its end, then its last record (still read from the pipe the grandchild holds)
    assert [r["kind"] for r in got["recs"]] == ["subject", "executed"]
