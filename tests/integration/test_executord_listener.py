"""The real executor daemon: plaintext TCP only on loopback; anything else needs mTLS."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.conftest import KeyPair
from tests.integration.fixtures_executor import start_executor

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0"])
def test_wildcard_tcp_without_mtls_refuses_to_start(
    listen: str, operator_key: KeyPair, tmp_path: Path
) -> None:
    """Exit 64, one line on stderr, no listener: every interface without mTLS is refused."""
    res = subprocess.run(
        [sys.executable, "-m", "executord", "serve", "--operator-keyring",
         str(operator_key.keyring_path), "--listen", listen, "--state-dir", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == 64, res.stderr
    assert res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1
    assert "refusing a TCP listener without mTLS off loopback" in res.stderr


def test_loopback_tcp_without_mtls_is_served(
    docker_engine: None, operator_key: KeyPair, tmp_path: Path
) -> None:
    """127.0.0.1:0 starts, reports the bound port, and answers health over plaintext."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--listen", "127.0.0.1:0")
    try:
        host, _, port = daemon.address.rpartition(":")
        assert host == "127.0.0.1"
        assert int(port) > 0
        with grpc.insecure_channel(daemon.address) as ch:
            reply = health_pb2_grpc.HealthStub(ch).Check(
                health_pb2.HealthCheckRequest(), timeout=10
            )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        assert daemon.stop() == 0
