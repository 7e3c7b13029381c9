"""Issue 12, transport and debris: sandboxes killed from outside, two executors on one engine,
SIGTERM during a run (wedged or not), kill -9 then restart. Real daemons, real Docker."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from patchgate.executor_client import ExecutionResult, ExecutorClient
from tests.integration.fixtures_executor import (
    ExecutorProc,
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
                        fixture_envelope=case.envelope,  # type: ignore[attr-defined]
                        workspace=case.workspace,  # type: ignore[attr-defined]
                        fixture_root="fixtures",
                        properties=case.properties,  # type: ignore[attr-defined]
                        runs=runs,
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
