"""A patch that breaks ``prorate`` and tries to write its own verdict (issue 12): real signer,
executor, Docker and ``patchgate check``. Each forgery of the JUnit era, and each one aimed at the
reporter, is rejected (exit 1, never admitted, the broken property never ``pass``).
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.integration.fixtures_gate import BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]

REGRESSION = (
    "    used = min(max(used_days, 0), period_days)\n",
    "    used = min(used_days, period_days)\n",
)

PASSING_JUNIT = (
    '<testsuites><testsuite name="pytest"><testcase classname="properties.test_billing" '
    'name="test_prorate_non_negative"/></testsuite></testsuites>'
)

FORGERS = {
    # Rewrite the JUnit file named by --junitxml= (and the old /results) at exit, exit 0.
    "junit_rewritten_at_exit": f"""
        import atexit, os, sys
        def _forge():
            for arg in sys.argv:
                if arg.startswith("--junitxml="):
                    with open(arg.split("=", 1)[1], "w") as fh:
                        fh.write({PASSING_JUNIT!r})
            for d in ("/results", "/tmp"):
                try:
                    with open(d + "/junit.xml", "w") as fh:
                        fh.write({PASSING_JUNIT!r})
                except OSError:
                    pass
            os._exit(0)
        if not getattr(sys, "_pg_forged", False):
            sys._pg_forged = True
            atexit.register(_forge)
    """,
    # Silence pytest's JUnit writer so that no failure is ever written.
    "junitxml_monkeypatched": """
        import sys
        junit = sys.modules.get("_pytest.junitxml")
        if junit is not None:
            junit._NodeReporter.append_failure = lambda self, report: None
            junit.LogXML.pytest_runtest_logreport = lambda self, report: None
    """,
    # Print a passing summary, write a passing report, leave with status 0 mid-test.
    "passing_report_then_os_exit": f"""
        import os
        os.write(1, b"1 passed in 0.01s\\n")
        try:
            with open("/tmp/junit.xml", "w") as fh:
                fh.write({PASSING_JUNIT!r})
        except OSError:
            pass
        os._exit(0)
    """,
    # Fail for real, but leave with status 0 at interpreter exit.
    "os_exit_zero_after_failure": """
        import atexit, os, sys
        if not getattr(sys, "_pg_forged", False):
            sys._pg_forged = True
            atexit.register(os._exit, 0)
    """,
    # Rewrite pytest's own reports to passed (pytest then exits 0 and reports pass).
    "reports_rewritten_to_passed": """
        import sys
        reports = sys.modules["_pytest.reports"]
        if not getattr(sys, "_pg_forged", False):
            sys._pg_forged = True
            real = reports.TestReport.from_item_and_call.__func__
            def _passed(cls, item, call):
                rep = real(cls, item, call)
                rep.outcome, rep.longrepr = "passed", None
                return rep
            reports.TestReport.from_item_and_call = classmethod(_passed)
    """,
    # Send a pass for the running test over a new connection to the report socket.
    "second_connection_to_the_report_socket": """
        import json, os, socket, sys
        if not getattr(sys, "_pg_forged", False):
            sys._pg_forged = True
            node = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
            s = socket.socket(socket.AF_UNIX)
            s.connect("/patchgate/run/report.sock")
            rec = {"v": 1, "nonce": "", "seq": 1, "kind": "item", "nodeid": node,
                   "outcome": "pass", "duration_ms": 1, "failure": "", "executed": []}
            s.sendall(json.dumps(rec).encode() + b"\\n")
    """,
}

# The attacker this layer does not stop: code under test that finds the reporter in its own
# process, sends a pass and the final record itself, silences the reporter and exits 0.
IN_PROCESS_FORGER = """
    import os, sys
    reporter = sys.modules.get("patchgate_reporter")
    if reporter is not None:
        ch = reporter._REPORTER.channel
        node = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        ch.send("item", nodeid=node, outcome="pass", duration_ms=1, failure="", executed=[])
        ch.send("finish", exitstatus=0)
        ch.close()
        os._exit(0)
"""


def _forging_patch(repo: BillingRepo, forger: str, out: Path) -> Path:
    """The regression of prorate_regression.patch plus ``forger`` at the top of ``prorate``."""
    src = repo.path / "billing" / "__init__.py"
    original = src.read_text(encoding="utf-8")
    assert REGRESSION[0] in original
    body = textwrap.indent(textwrap.dedent(forger).strip("\n"), "    ") + "\n"
    src.write_text(original.replace(REGRESSION[0], body + REGRESSION[1]), encoding="utf-8")
    try:
        diff = subprocess.run(
            ["git", "-C", str(repo.path), "diff"], capture_output=True, text=True, check=True
        ).stdout
    finally:
        src.write_text(original, encoding="utf-8")
    out.write_text(diff, encoding="utf-8")
    return out


@pytest.mark.parametrize("name", sorted(FORGERS))
def test_a_forged_verdict_is_rejected(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path, name: str
) -> None:
    """The regression plus a forgery: exit 1, not admitted, the broken property is not pass."""
    run = gate.check(billing_repo, _forging_patch(billing_repo, FORGERS[name], tmp_path / "p"))
    assert run.code == 1, run.stdout + run.stderr
    assert run.receipt["admit"] is False
    status = run.file("property_ledger.json")["status_by_id"]["billing.prorate.non_negative"]
    assert status in {"fail", "error"}, status


def test_an_in_process_forger_of_the_reporter_is_not_admitted(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """The limit of the reporter (docs/security.md) is closed by the evidence rule: a forged report
    names no executed code (and would make every mutant "pass" too), so nothing credits.

    --judge off: the forger needs the reporter in its own process, which only the single-process
    run gives it (under the judge it finds none and the regression is a plain property miss:
    tests/integration/test_judge_attacks.py); what this test holds is the evidence rule there."""
    patch = _forging_patch(billing_repo, IN_PROCESS_FORGER, tmp_path / "p")
    run = gate.check(billing_repo, patch, judge="off")
    assert run.code == 1, run.stdout + run.stderr
    assert run.receipt["admit"] is False
    assert "R1" in run.receipt["rejection_codes"]
    assert run.receipt["credits"] == {"billing.prorate": 0}
    reason = run.receipt["uncredited"]["billing.prorate"]
    assert "never executed" in reason or "mutant" in reason, reason
