"""Engine faults and hygiene: engine stopped mid-run, SIGTERM, client cancel, start-up sweep."""

from __future__ import annotations

import os
import subprocess
import threading

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.digest import hash_files
from patchgate.executor_client import ExecutorClient, workspace_files
from patchgate.request import ExecuteRequest
from patchgate.v1 import common_pb2, executor_pb2, executor_pb2_grpc
from tests.integration.fixtures_executor import (
    LABEL,
    billing_case,
    labeled_containers,
    prop,
    start_executor,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]

SLEEP = """
import time

def test_sleeps():
    time.sleep(60)
"""


def _sleep_case(tmp_path, signer):
    return billing_case(
        tmp_path, signer, extra_files={"properties/test_sleep.py": SLEEP},
        properties=(prop("sleepy", "properties/test_sleep.py::test_sleeps"),), clock_bound_ms=90000,
    )  # fmt: skip


def _health(address: str) -> int:
    with grpc.insecure_channel(address) as ch:
        return (
            health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5).status
        )


def test_engine_stopped_mid_run_is_unavailable(private_dockerd, operator_key, tmp_path):
    """A dockerd dying mid-run: `unavailable` transport records; the daemon still answers health."""
    daemon = start_executor(
        tmp_path, operator_key.keyring_path, env={"DOCKER_HOST": private_dockerd.host}
    )
    try:
        case = _sleep_case(tmp_path, operator_key.signer)
        engine_env = {**os.environ, "DOCKER_HOST": private_dockerd.host}

        def running() -> bool:
            out = subprocess.run(
                ["docker", "ps", "-q", "--filter", f"label={LABEL}={daemon.instance}"],
                capture_output=True, text=True, env=engine_env, check=False,
            ).stdout  # fmt: skip
            return bool(out.split())

        threading.Thread(
            target=lambda: wait_for(running, timeout=30.0) and private_dockerd.stop(), daemon=True
        ).start()
        with ExecutorClient(daemon.address) as client:
            result = client.execute(
                ExecuteRequest(
                    envelope=case.envelope,
                    workspace=case.workspace,
                    fixture_root="fixtures",
                    properties=case.properties,
                )
            )
        assert result.outcomes == ()
        assert {t.kind for t in result.transport} == {"unavailable"}
        assert _health(daemon.address) == health_pb2.HealthCheckResponse.SERVING
    finally:
        daemon.stop()


def test_sigterm_mid_run_removes_containers(docker_engine, operator_key, tmp_path):
    """SIGTERM while a run sleeps: its container is killed and removed, the daemon exits 0."""
    case = _sleep_case(tmp_path, operator_key.signer)  # before the daemon: nothing to leave
    daemon = start_executor(tmp_path, operator_key.keyring_path)
    client = ExecutorClient(daemon.address)
    box: list[object] = []
    worker = threading.Thread(
        target=lambda: box.append(
            client.execute(
                ExecuteRequest(
                    envelope=case.envelope,
                    workspace=case.workspace,
                    fixture_root="fixtures",
                    properties=case.properties,
                )
            )
        ),
        daemon=True,
    )
    worker.start()
    try:
        assert wait_for(lambda: bool(labeled_containers(daemon.instance)), timeout=30.0)
        assert daemon.stop() == 0
        worker.join(30)
        assert labeled_containers(daemon.instance) == []
        assert box, "the client returned nothing"
        assert not box[0].outcomes  # nothing scored from a shutdown
    finally:
        client.close()
        daemon.stop()


def test_client_cancel_removes_containers(executor_daemon, operator_key, tmp_path):
    """A client that cancels its Execute call: the containers are killed and removed."""
    case = _sleep_case(tmp_path, operator_key.signer)
    with ExecutorClient(executor_daemon.address) as client:
        blobs = {e.sha256: case.workspace / p for p, e in case.manifest.files.items()}
        files = workspace_files(case.workspace, "fixtures")
        entries = hash_files(files)
        blobs.update({e.sha256: files[p] for p, e in entries.items()})
        client.upload(blobs)
    request = executor_pb2.ExecuteRequest(
        request_id="cancel-me",
        fixture_envelope=case.envelope.to_proto(),
        workspace=[
            executor_pb2.TreeEntry(path=p, digest=e.sha256, size=e.size) for p, e in entries.items()
        ],
        fixture_root="fixtures",
        properties=[common_pb2.PropertySpec(id="sleepy", command=list(case.properties[0].command))],
        runs=2,
    )
    with grpc.insecure_channel(executor_daemon.address) as ch:
        call = executor_pb2_grpc.ExecutorStub(ch).Execute(request, timeout=120)
        for event in call:
            if event.progress.phase == "start":
                break
        assert wait_for(lambda: bool(labeled_containers(executor_daemon.instance)), timeout=30.0)
        call.cancel()
    assert wait_for(lambda: labeled_containers(executor_daemon.instance) == [], timeout=20)


def test_startup_sweep_removes_leftovers(executor_daemon, operator_key, tmp_path):
    """A leftover container with a daemon's label is removed when a daemon with it starts."""
    with ExecutorClient(executor_daemon.address) as client:
        image = client.info().image
    executor_daemon.stop()
    cid = subprocess.run(
        ["docker", "create", "--label", f"{LABEL}={executor_daemon.instance}", image, "true"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert labeled_containers(executor_daemon.instance) == [cid[:12]]
    again = start_executor(
        tmp_path, operator_key.keyring_path, "--instance", executor_daemon.instance
    )
    try:
        assert labeled_containers(executor_daemon.instance) == []
    finally:
        again.stop()


def _one_run(daemon, signer, tmp_path):
    case = billing_case(tmp_path, signer)
    with ExecutorClient(daemon.address) as client:
        return client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
            )
        )


def test_missing_image_is_image_missing(docker_engine, operator_key, tmp_path):
    """An --image that is not present (and no --pull): `image_missing` per run, daemon serving."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--image", "patchgate-absent:0")
    assert "image not ready" in daemon.log()
    try:
        result = _one_run(daemon, operator_key.signer, tmp_path)
        assert _health(daemon.address) == health_pb2.HealthCheckResponse.SERVING
    finally:
        daemon.stop()
    assert result.outcomes == ()
    assert [t.kind for t in result.transport] == ["image_missing", "image_missing"]


def test_engine_refusing_the_sandbox_is_sandbox_start_failed(docker_engine, operator_key, tmp_path):
    """A runtime the engine does not have (runsc here): `sandbox_start_failed` per run."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--runtime", "runsc")
    try:
        result = _one_run(daemon, operator_key.signer, tmp_path)
    finally:
        daemon.stop()
    assert result.outcomes == ()
    assert [t.kind for t in result.transport] == ["sandbox_start_failed", "sandbox_start_failed"]
    assert labeled_containers(daemon.instance) == []
