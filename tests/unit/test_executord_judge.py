"""The judge apart, daemon side (issue 20): the judged sandbox's policy, mounts and supervisor
config, and the outcome rule's new facts (the subject's failures, the supervisor's records)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from executord.errors import InvalidArgument
from executord.inside.wire import CONFIG_KEYS
from executord.runs.fakeruntime import FakeRun, FakeRuntime, reporter_lines
from executord.runs.records import RecordLog, batch_outcomes, property_outcome
from executord.runs.sandboxspec import PLUGIN_PATH
from executord.sandbox.container import SandboxPolicy
from tests.unit._inside_helpers import load
from tests.unit.test_executord_runs import OK, _execute, _input, _rig

NODE = OK.command[-1]


def _judged(
    items: list[tuple[str, str, str]] | None = None,
    extra: list[dict[str, Any]] | None = None,
    *,
    exitstatus: int | None = 0,
    judge_end: bool = True,
    kinds: dict[str, str] | None = None,
) -> RecordLog:
    """A judged run's records: the reporter's, then the supervisor's."""
    sup = list(extra or [])
    if judge_end:
        sup.append({"kind": "judge", "event": "exit", "returncode": exitstatus})
    lines = reporter_lines("n", items or [(NODE, "pass", "")], exitstatus, judged=tuple(sup))
    log = RecordLog(nonce="n", judged=True)
    for raw in lines:
        line = raw
        if kinds:
            rec = json.loads(raw)
            if rec.get("nodeid") in kinds and rec["kind"] == "item":
                rec["failure_kind"] = kinds[rec["nodeid"]]
            line = json.dumps(rec).encode()
        log.feed(line)
    return log


def _outcome(log: RecordLog, exit_code: int = 0) -> tuple[str, str, tuple[str, ...]]:
    return property_outcome(log, [NODE], exit_code, PLUGIN_PATH, "clock bound exceeded")


# -- the sandbox --------------------------------------------------------------------------------


def test_judged_sandbox_starts_the_supervisor_as_uid_0_with_three_capabilities(
    tmp_path: Path,
) -> None:
    """Judge on: PID 1 is the supervisor (uid 0, only SETUID/SETGID/KILL); judge and subject
    are two distinct non-root uids; each has its own 0700 tmpfs; the report settings say so."""
    rig = _rig(tmp_path)
    report = _execute(rig, runs=1)
    spec, policy = rig.runtime.created[0], rig.runtime.policies[0]
    assert spec.judge
    assert spec.argv == ("python", "-I", "-S", "/patchgate/inside/supervisor.py",
                         "/patchgate/run/supervisor.json")  # fmt: skip
    assert set(spec.env) == {"PATH", "LANG", "PATCHGATE_REPORT_NONCE"}
    tmpfs = policy.tmpfs(judge=True)
    assert "uid=10001,gid=10001,mode=0700" in tmpfs["/patchgate/judge"]
    assert "uid=10002,gid=10002,mode=0700" in tmpfs["/patchgate/subject"]
    assert "gid=10003,mode=1770" in tmpfs["/tmp"]
    s = report.sandbox
    assert (s.user, list(s.cap_add), list(s.cap_drop)) == ("0:0", ["SETUID", "SETGID", "KILL"],
                                                            ["ALL"])  # fmt: skip
    assert (s.judge_user, s.subject_user, s.shared_gid) == ("10001:10001", "10002:10002", 10003)
    assert "no-new-privileges" in s.security_opt
    assert report.judge == "on"
    assert [m.target for m in spec.mounts if not m.read_only] == []


def test_judge_off_is_the_old_single_process_run(tmp_path: Path) -> None:
    """Judge off: the property's argv with the reporter, as the sandbox user, no capability."""
    rig = _rig(tmp_path)
    report = _execute(rig, runs=1, judge="off")
    spec = rig.runtime.created[0]
    assert not spec.judge
    assert spec.argv == (*OK.command, "-p", "patchgate_reporter")
    assert (report.judge, report.sandbox.user, list(report.sandbox.cap_add)) == (
        "off",
        "10001:10001",
        [],
    )


def test_supervisor_config_follows_the_wire_format(tmp_path: Path) -> None:
    """The config is a ``wire.SupervisorConfig`` the supervisor loads as written, never with the
    nonce; the socket's directory is the supervisor's alone (0700 under a root executor), the
    info one readable."""
    seen: dict[str, Any] = {}

    def script(spec: Any) -> FakeRun:
        run_dir = Path(next(m.source for m in spec.mounts if m.target == "/patchgate/run"))
        info = Path(next(m.source for m in spec.mounts if m.target == "/patchgate/info"))
        seen["config"] = json.loads((run_dir / "supervisor.json").read_text())
        seen["modes"] = (stat.S_IMODE(run_dir.stat().st_mode), stat.S_IMODE(info.stat().st_mode))
        seen["nonce"] = spec.env["PATCHGATE_REPORT_NONCE"]
        return FakeRun()

    rig = _rig(tmp_path, FakeRuntime(script=script))
    _execute(rig, runs=1, source_roots=("src",), production=("billing",))
    config = seen["config"]
    assert set(config) <= CONFIG_KEYS
    (tmp_path / "written.json").write_text(json.dumps(config))
    assert load("supervisor").load_config(str(tmp_path / "written.json")) == config
    assert seen["nonce"] not in json.dumps(config)
    assert config["socket"] == "/patchgate/run/report.sock"
    assert config["switch_users"] is True
    assert "test_only" not in config
    assert config["judge"]["argv"] == [*OK.command, "-p", "patchgate_reporter",
                                       "-p", "patchgate_judge"]  # fmt: skip
    assert (config["judge"]["uid"], config["subject"]["uid"]) == (10001, 10002)
    assert config["judge"]["groups"] == config["subject"]["groups"] == [10003]
    assert config["source_roots"] == ["/workspace/src"]
    assert config["production"] == ["billing"]
    assert "PATCHGATE_REPORT_NONCE" not in config["judge"]["env"]
    assert config["subject"]["env"]["HOME"] == "/patchgate/subject"
    assert seen["modes"] == ((0o700 if os.geteuid() == 0 else 0o711), 0o755)


def test_judge_mode_and_source_roots_are_checked(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    with pytest.raises(InvalidArgument, match="judge must be"):
        rig.executor.prepare(_input(rig, judge="maybe"))
    with pytest.raises(InvalidArgument, match="source_roots"):
        rig.executor.prepare(_input(rig, source_roots=("../up",)))


def test_policy_refuses_shared_or_root_uids() -> None:
    with pytest.raises(ValueError, match="distinct"):
        SandboxPolicy(image="i", judge_uid=10001, subject_uid=10001)
    with pytest.raises(ValueError, match="distinct"):
        SandboxPolicy(image="i", subject_uid=0)


# -- the outcome rule ---------------------------------------------------------------------------


def test_a_judged_pass_needs_the_supervisors_word_that_the_judge_exited() -> None:
    assert _outcome(_judged())[0] == "pass"
    status, why, _ = _outcome(_judged(judge_end=False))
    assert (status, why) == ("error", "no word from the supervisor on how the judge ended")
    crashed = _judged(judge_end=False, extra=[{"kind": "judge", "event": "crash",
                                               "returncode": None}])  # fmt: skip
    assert _outcome(crashed)[0] == "error"


def test_the_subjects_exception_is_an_error_never_a_fail_or_pass() -> None:
    """failure_kind subject: an AssertionError raised in production code is not the predicate."""
    log = _judged([(NODE, "fail", "AssertionError: in billing")], exitstatus=1,
                  kinds={NODE: "subject"})  # fmt: skip
    assert _outcome(log, exit_code=1)[0] == "error"
    predicate = _judged([(NODE, "fail", "assert -1 >= 0")], exitstatus=1,
                        kinds={NODE: "predicate"})  # fmt: skip
    assert _outcome(predicate, exit_code=1)[0] == "fail"


@pytest.mark.parametrize(
    ("event", "status"),
    [("exit", "error"), ("crash", "error"), ("lost", "error"), ("hang", "exceeded_bound")],
)
def test_the_subject_ending_during_a_test_is_never_a_pass(event: str, status: str) -> None:
    """The judge reported a pass, but the subject ended during that test: error (hang: bound)."""
    rec = {"kind": "subject", "event": event, "nodeid": NODE, "detail": "x", "returncode": 0}
    assert _outcome(_judged(extra=[rec]))[0] == status


def test_the_subject_ending_between_tests_voids_the_run() -> None:
    """Outside any test, only the subject's clean exit 0 (after the judge's goodbye) is fine."""
    clean = {"kind": "subject", "event": "exit", "nodeid": "", "detail": "", "returncode": 0}
    assert _outcome(_judged(extra=[clean]))[0] == "pass"
    for rec in (
        {**clean, "returncode": 3},
        {**clean, "event": "crash", "returncode": -9},
        {**clean, "event": "garbage"},
    ):
        status, why, _ = _outcome(_judged(extra=[rec]))
        assert status == "error"
        assert "the subject" in why


def test_executed_comes_from_the_subject_import_phase_for_every_test() -> None:
    other = "properties/test_x.py::test_other"
    log = _judged(
        [(NODE, "pass", ""), (other, "pass", "")],
        [
            {"kind": "executed", "phase": "import", "nodeid": "", "targets": ["billing.build"]},
            {"kind": "executed", "phase": "test", "nodeid": NODE, "targets": ["billing.prorate"]},
        ],
    )
    assert _outcome(log)[2] == ("billing.build", "billing.prorate")
    assert property_outcome(log, [other], 0, PLUGIN_PATH)[2] == ("billing.build",)


def test_supervisor_records_are_refused_without_the_judge_and_after_its_end() -> None:
    """Judge off, an 'executed' record is a forgery; judge on, nothing after the judge's end."""
    lines = reporter_lines("n", [(NODE, "pass", "")], 0, judged=(
        {"kind": "executed", "phase": "import", "nodeid": "", "targets": ["x"]},))  # fmt: skip
    off = RecordLog(nonce="n")
    for line in lines:
        off.feed(line)
    assert _outcome(off)[0] == "error"
    late = _judged(extra=[])
    late.feed(json.dumps({"v": 1, "nonce": "n", "seq": late.count, "kind": "executed",
                          "phase": "import", "nodeid": "", "targets": []}).encode())  # fmt: skip
    assert _outcome(late)[0] == "error"


def test_a_batch_whose_subject_died_during_a_pass_reruns_nothing_as_pass() -> None:
    other = "properties/test_x.py::test_other"
    log = _judged(
        [(NODE, "pass", ""), (other, "pass", "")],
        [{"kind": "subject", "event": "crash", "nodeid": other, "detail": "", "returncode": -11}],
    )
    verdicts = batch_outcomes(log, [("a", [NODE]), ("b", [other])], 0, PLUGIN_PATH)
    assert verdicts["a"].outcome is not None
    assert verdicts["a"].outcome[0] == "pass"
    assert verdicts["b"].outcome is not None
    assert verdicts["b"].outcome[0] == "error"
