"""Sandbox policy, real containers: network off, read-only mounts, clock, pids, memory, flakes."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.keys import Signer
from patchgate.request import ExecuteRequest
from tests.integration.fixtures_executor import (
    ExecutorProc,
    billing_case,
    labeled_containers,
    prop,
    start_executor,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]

NETWORK = """
import socket

def test_tcp_connect():
    socket.create_connection(("192.0.2.1", 80), timeout=3).close()
"""
WRITE_FIXTURE = """
from properties.conftest import FIXTURES

def test_write_fixture():
    with open(FIXTURES / "orders_min.json", "a") as fh:
        fh.write("tampered")
"""
WRITE_WORKSPACE = """
from pathlib import Path

def test_write_workspace():
    Path("billing/injected.py").write_text("x = 1")
"""
SLEEP = """
import time

def test_sleeps_past_bound():
    time.sleep(120)
"""
FORK_BOMB = """
import os, time

def test_fork_bomb():
    children = []
    try:
        while True:
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            children.append(pid)
    except OSError as exc:
        for c in children:
            os.kill(c, 9)
        raise AssertionError(f"fork refused: {type(exc).__name__}") from None
"""
MEMORY_HOG = """
def test_memory_hog():
    hoard = []
    while True:
        hoard.append(b"x" * (16 << 20))
"""
FLAKY = """
import random

def test_coin():
    value = random.SystemRandom().random()
    assert value < 0.5, f"drew {value!r}"
"""


def _run(
    daemon: ExecutorProc, signer: Signer, tmp_path: Path, name: str, text: str, **kw
) -> ExecutionResult:
    case = billing_case(
        tmp_path,
        signer,
        extra_files={f"properties/test_{name}.py": text},
        properties=(
            prop(
                name,
                f"properties/test_{name}.py::test_"
                + text.split("def test_")[1].split("(", maxsplit=1)[0],
            ),
        ),
        **kw,
    )
    with ExecutorClient(daemon.address) as client:
        return client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
            )
        )


def _healthy(address: str) -> bool:
    with grpc.insecure_channel(address) as ch:
        reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def test_tcp_connection_fails_as_an_outcome(executor_daemon, operator_key, tmp_path):
    """Network is off: opening a TCP connection is a failed assertion, not a transport record."""
    result = _run(executor_daemon, operator_key.signer, tmp_path, "network", NETWORK)
    assert result.transport == ()
    assert [o.outcome for o in result.outcomes] == ["fail", "fail"]
    assert "unreachable" in result.outcomes[0].failure_signature.lower()


def test_write_into_fixtures_fails(executor_daemon, operator_key, tmp_path):
    """The fixture tree is mounted read-only."""
    result = _run(executor_daemon, operator_key.signer, tmp_path, "wfix", WRITE_FIXTURE)
    assert [o.outcome for o in result.outcomes] == ["fail", "fail"]
    sig = result.outcomes[0].failure_signature
    assert "Read-only file system" in sig or "Permission denied" in sig  # ro mount, root-owned 0444


def test_write_into_workspace_fails(executor_daemon, operator_key, tmp_path):
    """The patched workspace is mounted read-only."""
    result = _run(executor_daemon, operator_key.signer, tmp_path, "wws", WRITE_WORKSPACE)
    assert [o.outcome for o in result.outcomes] == ["fail", "fail"]
    sig = result.outcomes[0].failure_signature
    assert "Read-only file system" in sig or "Permission denied" in sig


def test_sleep_past_clock_bound_is_exceeded_bound(executor_daemon, operator_key, tmp_path):
    """The clock bound kills the container: exceeded_bound, and the container is gone."""
    result = _run(
        executor_daemon, operator_key.signer, tmp_path, "sleep", SLEEP, clock_bound_ms=4000
    )
    assert [o.outcome for o in result.outcomes] == ["exceeded_bound", "exceeded_bound"]
    assert all(o.duration_ms < 20000 for o in result.outcomes)
    assert labeled_containers(executor_daemon.instance) == []


def test_fork_bomb_hits_pids_limit_and_daemon_stays_healthy(docker_engine, operator_key, tmp_path):
    """A fork bomb is stopped by the pids limit (fork refused) and the daemon keeps serving."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--pids-limit", "64")
    try:
        result = _run(daemon, operator_key.signer, tmp_path, "forks", FORK_BOMB)
        assert result.transport == ()
        assert [o.outcome for o in result.outcomes] == ["fail", "fail"]
        assert "fork refused: BlockingIOError" in result.outcomes[0].failure_signature
        assert _healthy(daemon.address)
    finally:
        daemon.stop()


def test_memory_hog_is_resource_exhausted(docker_engine, operator_key, tmp_path):
    """Allocating past the memory limit is OOM-killed: a resource_exhausted transport record."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--memory", "128m")
    try:
        result = _run(daemon, operator_key.signer, tmp_path, "hog", MEMORY_HOG)
    finally:
        daemon.stop()
    assert result.outcomes == ()
    assert [t.kind for t in result.transport] == ["resource_exhausted", "resource_exhausted"]


def test_flaky_property_can_yield_two_hashes(executor_daemon, operator_key, tmp_path):
    """A property with a random outcome yields two different outcome hashes (within a few tries)."""
    for attempt in range(6):
        result = _run(executor_daemon, operator_key.signer, tmp_path / str(attempt), "coin", FLAKY)
        hashes = {o.outcome_hash for o in result.outcomes}
        if len(hashes) == 2:
            return
    pytest.fail("six executions of a coin-flip property never disagreed")
