"""Issue 12, transport and debris: sandboxes killed from outside, two executors on one engine,
SIGTERM during a run (wedged or not), kill -9 then restart. Real daemons, real Docker."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.request import ExecuteRequest
from tests.integration.fixtures_executor import (
    ExecutorProc,
    PrivateDockerd,
    billing_case,
    labeled_containers,
    prop,
    start_executor,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]

SLOW_PASS = """
import time

def test_slow_pass():
    time.sleep({seconds})
    assert True
"""


def _slow_case(tmp_path: Path, signer: object, seconds: int) -> object:
    return billing_case(
        tmp_path,
        signer,  # type: ignore[arg-type]
        extra_files={"properties/test_slow.py": SLOW_PASS.format(seconds=seconds)},
        properties=(prop("slow", "properties/test_slow.py::test_slow_pass"),),
        clock_bound_ms=120_000,
    )


def _execute_in_thread(
    daemon: ExecutorProc, case: object, box: list[ExecutionResult | BaseException], runs: int = 2
) -> threading.Thread:
    def go() -> None:
        try:
            with ExecutorClient(daemon.address) as client:
                box.append(
                    client.execute(
                        ExecuteRequest(
                            envelope=case.envelope,
                            workspace=case.workspace,
                            fixture_root="fixtures",
                            properties=case.properties,
                            runs=runs,
                        )
                    )
                )
        except BaseException as exc:  # surfaced by the test's assertions
            box.append(exc)

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    return worker


def _running(instance: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-q", "--no-trunc", "--filter",
         f"label=patchgate.executord={instance}", "--filter", "status=running"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return out.split()


def _result(
    worker: threading.Thread, box: list[ExecutionResult | BaseException]
) -> ExecutionResult:
    worker.join(180)
    assert box, "execute did not return"
    got = box[0]
    assert isinstance(got, ExecutionResult), repr(got)
    return got


@pytest.mark.parametrize("how", [["kill"], ["rm", "-f"]], ids=["docker-kill", "docker-rm-f"])
def test_sandbox_killed_from_outside_is_transport(
    executor_daemon: ExecutorProc, operator_key, tmp_path: Path, how: list[str]
) -> None:
    """``docker kill`` / ``docker rm -f`` of a running sandbox: transport ``killed_externally``
    for that run, never an outcome (it used to come back as ``error``)."""
    case = _slow_case(tmp_path, operator_key.signer, 60)
    box: list[ExecutionResult | BaseException] = []
    worker = _execute_in_thread(executor_daemon, case, box, runs=1)
    assert wait_for(lambda: bool(_running(executor_daemon.instance)), timeout=60)
    for cid in _running(executor_daemon.instance):
        subprocess.run(["docker", *how, cid], capture_output=True, check=True)
    result = _result(worker, box)
    assert result.outcomes == ()
    assert [(t.kind, t.run_index) for t in result.transport] == [("killed_externally", 1)]
    assert labeled_containers(executor_daemon.instance) == []


def test_second_executor_leaves_the_first_ones_sandboxes_alone(
    executor_daemon: ExecutorProc, operator_key, tmp_path: Path
) -> None:
    """Starting an executor with another instance on the same engine does not touch a running
    sandbox of the first: that run completes with its real outcome."""
    case = _slow_case(tmp_path, operator_key.signer, 12)
    box: list[ExecutionResult | BaseException] = []
    worker = _execute_in_thread(executor_daemon, case, box, runs=1)
    assert wait_for(lambda: bool(_running(executor_daemon.instance)), timeout=60)
    before = _running(executor_daemon.instance)
    (tmp_path / "second").mkdir()
    second = start_executor(tmp_path / "second", operator_key.keyring_path)
    try:
        assert second.instance != executor_daemon.instance
        assert set(before) <= set(_running(executor_daemon.instance)), "sibling swept a sandbox"
        result = _result(worker, box)
    finally:
        second.stop()
    assert result.transport == ()
    assert [o.outcome for o in result.outcomes] == ["pass"]


def _work_dirs(daemon: ExecutorProc) -> list[str]:
    root = daemon.state_dir / "work"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def _own_work_dir(daemon: ExecutorProc) -> Path:
    (name,) = [n for n in _work_dirs(daemon) if n.endswith(f"-{daemon.proc.pid}")]
    return daemon.state_dir / "work" / name


def _sigterm_and_time(
    daemon: ExecutorProc, timeout: float, sig: signal.Signals = signal.SIGTERM
) -> tuple[int | None, float]:
    t0 = time.monotonic()
    daemon.proc.send_signal(sig)
    try:
        code: int | None = daemon.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - t0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_mid_run_stops_within_the_grace_and_leaves_nothing(
    docker_engine: None, operator_key, tmp_path: Path, sig: signal.Signals
) -> None:
    """SIGTERM (or SIGINT) while a property sleeps: the run is cancelled (transport, never an
    outcome), the daemon exits 0 within --shutdown-grace, no container and no work dir left."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--shutdown-grace", "6")
    try:
        box: list[ExecutionResult | BaseException] = []
        worker = _execute_in_thread(daemon, _slow_case(tmp_path, operator_key.signer, 60), box)
        assert wait_for(lambda: len(_running(daemon.instance)) == 2, timeout=60)
        assert list(_own_work_dir(daemon).glob("req-*")), "precondition: a request dir exists"
        code, took = _sigterm_and_time(daemon, 6 + 3, sig)
    finally:
        daemon.stop()
    assert (code, took < 6 + 2) == (0, True), (code, took, daemon.log()[-2000:])
    result = _result(worker, box)
    assert result.outcomes == ()
    assert result.transport
    assert labeled_containers(daemon.instance) == []
    assert _work_dirs(daemon) == []


def test_sigterm_with_a_wedged_run_still_exits_within_the_grace(
    private_dockerd: PrivateDockerd, operator_key, tmp_path: Path
) -> None:
    """A run stuck in a call that does not return (its engine frozen with SIGSTOP): SIGTERM still
    ends the daemon within the grace and a small margin, exit 0, its work dir removed; the
    container the frozen engine still holds is removed by the next start-up of the instance."""
    env = {"DOCKER_HOST": private_dockerd.host}
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--shutdown-grace", "5", env=env)
    engine_env = {**os.environ, **env}

    def running() -> bool:
        out = subprocess.run(
            ["docker", "ps", "-q", "--filter", f"label=patchgate.executord={daemon.instance}"],
            capture_output=True, text=True, env=engine_env, check=False,
        ).stdout  # fmt: skip
        return bool(out.split())

    frozen = False
    try:
        box: list[ExecutionResult | BaseException] = []
        _execute_in_thread(daemon, _slow_case(tmp_path, operator_key.signer, 60), box, runs=1)
        assert wait_for(running, timeout=60)
        private_dockerd.proc.send_signal(signal.SIGSTOP)
        frozen = True
        time.sleep(1.0)  # the run's next engine call is now stuck
        code, took = _sigterm_and_time(daemon, 5 + 5)
    finally:
        if frozen:
            private_dockerd.proc.send_signal(signal.SIGCONT)
        daemon.stop()
    assert (code, took < 5 + 2.5) == (0, True), (code, took, daemon.log()[-2000:])
    assert "shutdown grace over" in daemon.log()
    assert _work_dirs(daemon) == []
    assert running(), "precondition: the frozen engine kept the container"
    again = start_executor(
        tmp_path, operator_key.keyring_path, "--instance", daemon.instance, env=env
    )
    try:
        assert not running()
    finally:
        again.stop()


def test_kill_9_debris_is_swept_at_restart_but_a_living_siblings_is_not(
    docker_engine: None, operator_key, tmp_path: Path
) -> None:
    """kill -9 mid-run leaves the request's work dir; restarting with the same state dir removes
    it, while a living executor sharing that state dir keeps its own (and its run passes)."""
    first = start_executor(tmp_path, operator_key.keyring_path)
    sibling = start_executor(tmp_path, operator_key.keyring_path)  # same state dir, own instance
    again: ExecutorProc | None = None
    try:
        box: list[ExecutionResult | BaseException] = []
        sib_box: list[ExecutionResult | BaseException] = []
        _execute_in_thread(first, _slow_case(tmp_path / "a", operator_key.signer, 60), box, 1)
        sib_worker = _execute_in_thread(
            sibling, _slow_case(tmp_path / "b", operator_key.signer, 30), sib_box, runs=1
        )
        assert wait_for(lambda: bool(_running(first.instance)), timeout=60)
        assert wait_for(lambda: bool(_running(sibling.instance)), timeout=60)
        dead_dir, sib_dir = _own_work_dir(first), _own_work_dir(sibling)
        sib_req = list(sib_dir.glob("req-*"))
        first.proc.kill()
        first.proc.wait(10)
        assert list(dead_dir.glob("req-*")), "precondition: kill -9 left the request dir"
        again = start_executor(tmp_path, operator_key.keyring_path, "--instance", first.instance)
        assert not dead_dir.exists()
        assert sib_req, "precondition: the sibling has a request dir"
        assert all(p.exists() for p in sib_req), "a living sibling's dir was swept"
        assert labeled_containers(first.instance) == []
        sib_result = _result(sib_worker, sib_box)
    finally:
        for d in (first, sibling, again):
            if d is not None:
                d.stop()
    assert [o.outcome for o in sib_result.outcomes] == ["pass"], sib_result.outcomes
    assert _work_dirs(sibling) == []
