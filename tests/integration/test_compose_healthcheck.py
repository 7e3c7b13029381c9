"""``python -m patchgate.healthcheck``: the compose services' health check, against real daemons."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import KeyPair
from tests.integration.fixtures_signer import SignerDaemon, TestPKI, start_signer

pytestmark = pytest.mark.integration


def _check(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchgate.healthcheck", *argv],
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_serving_signer_exits_0(signer_daemon: SignerDaemon) -> None:
    """A running daemon on a unix socket is SERVING: exit 0."""
    got = _check(signer_daemon.address)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "SERVING" in got.stdout


def test_unreachable_address_exits_1(tmp_path: Path) -> None:
    """Nothing listening: exit 1, the status names the transport failure."""
    got = _check(f"unix:{tmp_path}/nobody.sock", "--timeout", "2")
    assert got.returncode == 1
    assert "UNREACHABLE" in got.stdout


def test_unknown_service_exits_1(signer_daemon: SignerDaemon) -> None:
    """A service the daemon does not serve is not SERVING: exit 1."""
    got = _check(signer_daemon.address, "--service", "no.such.Service")
    assert got.returncode == 1
    assert "NOT_FOUND" in got.stdout


def test_half_of_the_tls_flags_is_a_usage_error(tmp_path: Path) -> None:
    """--tls-ca without --tls-cert/--tls-key: exit 64 before dialing."""
    got = _check("localhost:1", "--tls-ca", str(tmp_path / "ca.crt"))
    assert got.returncode == 64
    assert "go together" in got.stderr


def test_mtls_signer_is_serving_to_a_certificate_of_its_ca(
    operator_key: KeyPair, pki: TestPKI, tmp_path: Path
) -> None:
    """Over mTLS on TCP the check presents a certificate of the CA and sees SERVING."""
    daemon = start_signer(
        [operator_key.key_path], listen="127.0.0.1:0", extra_args=pki.server_args(),
        workdir=tmp_path,
    )  # fmt: skip
    try:
        tls = [
            "--tls-ca", str(pki.ca.cert), "--tls-cert", str(pki.signer.cert),
            "--tls-key", str(pki.signer.key), "--server-name", "localhost",
        ]  # fmt: skip
        got = _check(daemon.address, *tls)
        assert got.returncode == 0, got.stdout + got.stderr
        plain = _check(daemon.address, "--timeout", "2")
        assert plain.returncode == 1
    finally:
        daemon.stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(daemon.socket_dir)
