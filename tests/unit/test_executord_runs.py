"""Executor logic, fake ContainerRuntime: refusals before any container, runs, hygiene, signing."""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from pathlib import Path

import pytest

from executord.errors import FailedPrecondition, InvalidArgument
from executord.runs.executor import Executor, with_reporter
from executord.runs.fakeruntime import FakeRun, FakeRuntime, reporter_lines
from executord.runs.request import ExecuteInput, PropertyRun, TreeItem
from executord.sandbox.container import Mount, SandboxPolicy
from executord.store.blobstore import BlobStore, Chunk
from patchgate.digest import FileEntry, Manifest
from patchgate.envelope import (
    FIXTURE_PREDICATE_TYPE,
    Envelope,
    Sig,
    fixture_statement,
    parse_statement,
    sign_envelope,
    verify_fixture_envelope,
)
from patchgate.errors import VerificationError
from patchgate.keys import Keyring, Signer
from patchgate.report import (
    BINDING_SCHEMA,
    run_binding,
    sign_result,
    verify_result,
    workspace_digest,
)
from patchgate.v1 import executor_pb2

CMD = ("python", "-m", "pytest", "-q")
OK = PropertyRun("p.ok", (*CMD, "properties/test_x.py::test_ok"))
FILES = {"billing/__init__.py": b"x = 1\n", "properties/test_x.py": b"def test_ok(): pass\n"}
FIXTURES = {"fixtures/a.json": b'{"a": 1}\n'}

OPERATOR = Signer.generate("operator")
EXECUTOR_KEY = Signer.generate("executor")


@dataclasses.dataclass
class Rig:
    executor: Executor
    runtime: FakeRuntime
    store: BlobStore
    envelope: Envelope
    manifest: Manifest


def _put(store: BlobStore, data: bytes) -> str:
    d = hashlib.sha256(data).hexdigest()
    store.ingest([Chunk(d, len(data), 0, data)])
    return d


def _rig(tmp_path: Path, runtime: FakeRuntime | None = None, clock_bound_ms: int = 5000) -> Rig:
    store = BlobStore(tmp_path / "blobs", 1 << 20)
    for data in [*FILES.values(), *FIXTURES.values()]:
        _put(store, data)
    ring = Keyring([OPERATOR.keyring_entry()])
    manifest = Manifest(
        pin_id="pin",
        files={p: FileEntry(hashlib.sha256(b).hexdigest(), len(b)) for p, b in FIXTURES.items()},
        seed=7,
        clock_bound_ms=clock_bound_ms,
        allowed_commands=(CMD,),
    )
    envelope = sign_envelope(
        fixture_statement(manifest, OPERATOR, "2026-01-01T00:00:00Z"), OPERATOR
    )
    runtime = runtime or FakeRuntime()
    executor = Executor(
        store=store,
        runtime=runtime,
        signer=EXECUTOR_KEY,
        operator_keyring=ring,
        policy=SandboxPolicy(image="img"),
        host_mounts=(Mount("/usr", "/usr"),),
        path_dirs=("/venv/bin",),
        work_dir=tmp_path / "work",
        max_parallel=2,
        labels={"patchgate.executord": "t"},
        channels=runtime.channel,
    )
    return Rig(executor, runtime, store, envelope, manifest)


def _input(rig: Rig, **kw: object) -> ExecuteInput:
    base = dict(
        request_id="req-1",
        envelope=rig.envelope,
        workspace=tuple(
            TreeItem(p, hashlib.sha256(b).hexdigest(), len(b)) for p, b in FILES.items()
        ),
        fixture_root="fixtures",
        properties=(OK,),
        runs=2,
    )
    base.update(kw)
    return ExecuteInput(**base)  # type: ignore[arg-type]


def _execute(rig: Rig, **kw: object) -> executor_pb2.ExecutionReport:
    prepared = rig.executor.prepare(_input(rig, **kw))
    try:
        report, _env = rig.executor.run(prepared, lambda _p: None, threading.Event())
    finally:
        rig.executor.cleanup(prepared)
    return report


# -- refusals: FailedPrecondition before any container ------------------------------------------


def test_wrong_signature_refused(tmp_path: Path) -> None:
    """A signature that does not verify."""
    rig = _rig(tmp_path)
    bad = dataclasses.replace(rig.envelope, signatures=(Sig("", b"\0" * 64),))
    with pytest.raises(FailedPrecondition, match="envelope"):
        rig.executor.prepare(_input(rig, envelope=bad))
    assert rig.runtime.created == []


def test_executor_signed_envelope_refused(tmp_path: Path) -> None:
    """A fixture envelope signed by an executor key (even this executor's own) is refused."""
    rig = _rig(tmp_path)
    rig.executor.keyring.add(EXECUTOR_KEY.keyring_entry())
    forged = sign_envelope(fixture_statement(rig.manifest, EXECUTOR_KEY, "t"), EXECUTOR_KEY)
    with pytest.raises(FailedPrecondition, match="not an operator key"):
        rig.executor.prepare(_input(rig, envelope=forged))
    assert rig.runtime.created == []


def test_disallowed_command_refused(tmp_path: Path) -> None:
    """A command no signed allowed command prefixes."""
    rig = _rig(tmp_path)
    with pytest.raises(FailedPrecondition, match="not allowed"):
        rig.executor.prepare(_input(rig, properties=(PropertyRun("p", ("sh", "-c", "id")),)))
    assert rig.runtime.created == []


def test_workspace_under_fixture_root_refused(tmp_path: Path) -> None:
    """The workspace may not bring its own files into the fixture root."""
    rig = _rig(tmp_path)
    d = hashlib.sha256(b"x = 1\n").hexdigest()
    ws = (*_input(rig).workspace, TreeItem("fixtures/extra.json", d, 6))
    with pytest.raises(FailedPrecondition, match="fixture root"):
        rig.executor.prepare(_input(rig, workspace=ws))


def test_missing_blob_refused(tmp_path: Path) -> None:
    """A workspace file whose blob was never uploaded."""
    rig = _rig(tmp_path)
    ws = (TreeItem("x.py", "0" * 64, 1),)
    with pytest.raises(FailedPrecondition, match="not in the store"):
        rig.executor.prepare(_input(rig, workspace=ws))


def test_tampered_fixture_blob_refused(tmp_path: Path) -> None:
    """Bytes in the store that changed after upload: the recomputed digest differs."""
    rig = _rig(tmp_path)
    blob = rig.store.path(hashlib.sha256(FIXTURES["fixtures/a.json"]).hexdigest())
    blob.chmod(0o644)
    blob.write_bytes(b'{"a": 2}\n')
    with pytest.raises(FailedPrecondition, match="digest"):
        rig.executor.prepare(_input(rig))
    assert rig.runtime.created == []


def test_unsafe_workspace_path_is_invalid(tmp_path: Path) -> None:
    """A workspace path with '..' is InvalidArgument."""
    rig = _rig(tmp_path)
    d = hashlib.sha256(b"x = 1\n").hexdigest()
    with pytest.raises(InvalidArgument):
        rig.executor.prepare(_input(rig, workspace=(TreeItem("../evil.py", d, 6),)))


# -- runs ---------------------------------------------------------------------------------------


def test_two_runs_in_fresh_containers_all_removed(tmp_path: Path) -> None:
    """Each run gets its own container; every one is removed."""
    rig = _rig(tmp_path)
    report = _execute(rig)
    assert [o.run_index for o in report.outcomes] == [1, 2]
    assert len(rig.runtime.created) == 2
    assert rig.runtime.live == []


def test_sandbox_spec_follows_policy(tmp_path: Path) -> None:
    """Scrubbed env with the signed seed and the reporter's nonce; no writable bind mount."""
    rig = _rig(tmp_path)
    _execute(rig, runs=1, judge="off")
    spec = rig.runtime.created[0]
    assert spec.env["PATCHGATE_SEED"] == spec.env["PYTHONHASHSEED"] == "7"
    assert spec.env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert set(spec.env) == {"PATH", "HOME", "TMPDIR", "LANG", "PATCHGATE_SEED", "PYTHONHASHSEED",
                             "PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PATCHGATE_REPORT_NONCE",
                             "PATCHGATE_REPORT_SOCKET"}  # fmt: skip
    assert len(spec.env["PATCHGATE_REPORT_NONCE"]) == 32
    assert [m.target for m in spec.mounts if not m.read_only] == []
    targets = {m.target for m in spec.mounts}
    assert {"/workspace", "/workspace/fixtures", "/patchgate/inside", "/patchgate/run"} <= targets
    assert spec.argv == (*OK.command, "-p", "patchgate_reporter")
    assert spec.workdir == "/workspace"
    policy = rig.runtime.policies[0]
    assert (policy.network_mode, policy.read_only_rootfs, policy.cap_drop) == (
        "none",
        True,
        ("ALL",),
    )
    assert policy.memswap_bytes == policy.memory_bytes


def test_clock_bound_kills_and_removes(tmp_path: Path) -> None:
    """A run past the clock bound is exceeded_bound; the container is killed and removed."""
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(hang=True)), clock_bound_ms=100)
    report = _execute(rig, runs=1)
    assert report.outcomes[0].outcome == 4  # OUTCOME_EXCEEDED_BOUND
    assert rig.runtime.killed
    assert rig.runtime.live == []


def test_oom_is_transport_not_outcome(tmp_path: Path) -> None:
    """OOM-killed from the container state: resource_exhausted transport record."""
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(oom=True, exitstatus=None)))
    report = _execute(rig, runs=1)
    assert list(report.outcomes) == []
    assert report.transport[0].kind == 6  # TRANSPORT_KIND_RESOURCE_EXHAUSTED


@pytest.mark.parametrize(
    ("fail_on", "kind", "wire"),
    [
        ("create", "image_missing", 5),
        ("start", "sandbox_start_failed", 4),
        ("wait", "unavailable", 1),
    ],
)
def test_infrastructure_failures_are_transport(
    tmp_path: Path, fail_on: str, kind: str, wire: int
) -> None:
    """Image missing, start failure, engine gone: transport records; containers still removed."""
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(fail_on=fail_on, fail_kind=kind)))
    report = _execute(rig)
    assert list(report.outcomes) == []
    assert [t.kind for t in report.transport] == [wire, wire]
    assert rig.runtime.live == []


def test_cancel_kills_running_containers(tmp_path: Path) -> None:
    """A cancelled request kills its containers and removes them."""
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(hang=True)), clock_bound_ms=60000)
    prepared = rig.executor.prepare(_input(rig))
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    report, _ = rig.executor.run(prepared, lambda _p: None, cancel)
    rig.executor.cleanup(prepared)
    assert list(report.outcomes) == []
    assert rig.runtime.live == []


def test_failure_signature_and_equal_hashes(tmp_path: Path) -> None:
    """A failing property fails both runs with equal outcome hashes."""
    items = ((OK.command[-1], "fail", "AssertionError: at 0x7f00"),)
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(items=items, exit_code=1)))
    report = _execute(rig)
    assert [o.outcome for o in report.outcomes] == [2, 2]
    assert report.outcomes[0].outcome_hash == report.outcomes[1].outcome_hash
    assert "AssertionError" in report.outcomes[0].failure_signature


# -- the outcome rule: the reporter's records and the exit status must agree ---------------------

NODE = OK.command[-1]


@pytest.mark.parametrize(
    ("run", "outcome", "why"),
    [
        (FakeRun(exit_code=1), "error", "report and exit status disagree"),
        (FakeRun(items=((NODE, "fail", "boom"),), exit_code=0), "error", "disagree"),
        (FakeRun(exit_code=1, exitstatus=0), "error", "disagree"),
        (FakeRun(exitstatus=None), "error", "without the reporter's final record"),
        (FakeRun(items=()), "error", "missing from the test report"),
        (FakeRun(items=(("properties/test_x.py::test_other", "pass", ""),)), "error", "missing"),
        (FakeRun(items=((NODE, "skip", "why"),)), "error", "skipped"),
        (FakeRun(items=((NODE, "error", "setup: boom"),), exit_code=1), "error", "setup: boom"),
        (FakeRun(lines=lambda _n: []), "error", "no report from the executor's reporter"),
        (FakeRun(lines=lambda n: reporter_lines(n, ((NODE, "pass", ""),), 0, plugin="/w/x.py")),
         "error", "another module"),
    ],
)  # fmt: skip
def test_outcome_needs_report_and_exit_status_to_agree(
    tmp_path: Path, run: FakeRun, outcome: str, why: str
) -> None:
    """pass only with the reporter's pass and exit 0; every disagreement or gap is error."""
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: run))
    report = _execute(rig, runs=1)
    assert report.transport == []
    assert report.outcomes[0].outcome == {"pass": 1, "fail": 2, "error": 3}[outcome]
    assert why in report.outcomes[0].failure_signature


def test_forged_pass_then_real_failure_is_a_record_taken_back(tmp_path: Path) -> None:
    """Code under test that sends a pass for its own test first: the real failure takes it back."""

    def forged(nonce: str) -> list[bytes]:
        return reporter_lines(nonce, ((NODE, "pass", ""), (NODE, "fail", "real")), 0)

    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(lines=forged)))
    out = _execute(rig, runs=1).outcomes[0]
    assert (out.outcome, "record taken back" in out.failure_signature) == (3, True)


def test_records_without_the_run_nonce_are_refused(tmp_path: Path) -> None:
    """A passing report under another nonce (replayed from another run) is error."""
    run = FakeRun(lines=lambda _n: reporter_lines("f" * 32, ((NODE, "pass", ""),), 0))
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: run))
    out = _execute(rig, runs=1).outcomes[0]
    assert out.outcome == 3
    assert "nonce" in out.failure_signature


def test_stdout_and_stderr_tails_go_into_the_signed_report(tmp_path: Path) -> None:
    """Each run's output tail is in the report's logs, capped, with the full byte counts."""
    run = FakeRun(stdout=b"x" * 200_000 + b"END", stderr=b"warn\x00\xff\n")
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: run))
    report = _execute(rig)
    assert [(g.property_id, g.run_index) for g in report.logs] == [("p.ok", 1), ("p.ok", 2)]
    log = report.logs[0]
    assert log.stdout_bytes == 200_003
    assert len(log.stdout_tail) == 64 << 10
    assert log.stdout_tail.endswith("END")
    assert log.stderr_tail == "warn??\n"
    assert report.outcomes[0].outcome == 1  # never read for outcomes


def test_many_runs_share_the_log_budget(tmp_path: Path) -> None:
    """Tails shrink so that a report of many runs stays far below the message limit."""
    run = FakeRun(stdout=b"y" * 100_000)
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: run))
    props = tuple(PropertyRun(f"p{i}", OK.command) for i in range(20))
    report = _execute(rig, properties=props, runs=2)
    assert sum(len(g.stdout_tail) + len(g.stderr_tail) for g in report.logs) <= 2 << 20
    assert all(g.stdout_bytes == 100_000 for g in report.logs)


# -- signing ------------------------------------------------------------------------------------


def test_result_is_signed_with_the_test_result_predicate(tmp_path: Path) -> None:
    """The result envelope verifies as an executor result and carries the same report."""
    rig = _rig(tmp_path)
    prepared = rig.executor.prepare(_input(rig))
    report, env = rig.executor.run(prepared, lambda _p: None, threading.Event())
    verified = verify_result(env, Keyring([EXECUTOR_KEY.keyring_entry()]))
    assert verified.report == report
    assert verified.subject_digest == rig.manifest.digest()
    assert report.executor_keyid == EXECUTOR_KEY.keyid


def test_the_signed_result_binds_the_workspace_tree_it_ran_on(tmp_path: Path) -> None:
    """Issue 43: the statement binds the digest of the workspace the runs mounted (base tree and
    patch both), recomputable by a verifier from the files alone; another tree, another digest."""
    rig = _rig(tmp_path)
    prepared = rig.executor.prepare(_input(rig))
    _report, env = rig.executor.run(prepared, lambda _p: None, threading.Event())
    verified = verify_result(env, Keyring([EXECUTOR_KEY.keyring_entry()]))
    tree = [(p, hashlib.sha256(b).hexdigest(), len(b)) for p, b in FILES.items()]
    assert verified.binding["schema"] == BINDING_SCHEMA
    assert verified.binding["workspace_digest"] == workspace_digest(tree)
    assert verified.binding["variants"] == []
    other = [(p, hashlib.sha256(b + b"#").hexdigest(), len(b) + 1) for p, b in FILES.items()]
    assert workspace_digest(other) != workspace_digest(tree)


def test_a_variant_is_bound_by_its_source_digest_and_scope() -> None:
    binding = run_binding([], [("billing/x.py", b"x = 2\n", ["p.ok"])])
    assert binding["variants"] == [
        {"path": "billing/x.py", "sha256": hashlib.sha256(b"x = 2\n").hexdigest(),
         "scope": ["p.ok"]}
    ]  # fmt: skip


def test_result_envelope_is_never_a_fixture_envelope(tmp_path: Path) -> None:
    """What the executor signs cannot pass as a fixture digest signature."""
    rig = _rig(tmp_path)
    prepared = rig.executor.prepare(_input(rig))
    _report, env = rig.executor.run(prepared, lambda _p: None, threading.Event())
    ring = Keyring([EXECUTOR_KEY.keyring_entry()])
    with pytest.raises(VerificationError):
        verify_fixture_envelope(env, ring)
    with pytest.raises(Exception, match="predicateType"):
        parse_statement(env.payload, FIXTURE_PREDICATE_TYPE)


def test_sign_result_refuses_an_operator_key() -> None:
    """Run results are signed only by executor keys."""
    with pytest.raises(VerificationError):
        sign_result(executor_pb2.ExecutionReport(request_id="r"), OPERATOR)


def test_executor_refuses_a_non_executor_signer(tmp_path: Path) -> None:
    """The executor cannot be built around an operator key."""
    rig = _rig(tmp_path)
    with pytest.raises(ValueError, match="executor key"):
        Executor(
            store=rig.store, runtime=rig.runtime, signer=OPERATOR, operator_keyring=Keyring(),
            policy=SandboxPolicy(image="i"), host_mounts=(), path_dirs=(), work_dir=tmp_path / "w",
            max_parallel=1, labels={},
        )  # fmt: skip


def test_the_reporter_goes_before_a_double_dash() -> None:
    """-p patchgate_reporter is appended, or put before ``--`` so that pytest reads it as a flag."""
    assert with_reporter(("python", "-m", "pytest", "a.py")) == (
        "python", "-m", "pytest", "a.py", "-p", "patchgate_reporter",
    )  # fmt: skip
    assert with_reporter(("python", "-m", "pytest", "--", "-a.py")) == (
        "python", "-m", "pytest", "-p", "patchgate_reporter", "--", "-a.py",
    )  # fmt: skip
