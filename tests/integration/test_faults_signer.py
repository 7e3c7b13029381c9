"""Fault injection at the signer: kill -9 in the middle of a 16-thread burst of sign requests."""

from __future__ import annotations

import json
import threading
import time

import pytest

from patchgate.envelope import verify_fixture_envelope
from patchgate.errors import TransportError
from patchgate.keys import Keyring
from patchgate.signer_client import SignerClient
from tests.integration.fixtures_signer import SignerDaemon, numbered_manifest, run_signerd

pytestmark = pytest.mark.integration

THREADS = 16


def test_signer_killed_mid_burst_fails_as_transport_and_audit_chain_verifies(
    signer_daemon: SignerDaemon,
) -> None:
    """SIGKILL mid-burst: every failure is a TransportError (no refusal, no bare exception), every
    returned envelope verifies and was audited, and ``audit-verify`` accepts the log."""
    ring = Keyring.load(signer_daemon.keyring_path)
    ok: list[str] = []
    transport: list[TransportError] = []
    other: list[BaseException] = []
    lock = threading.Lock()

    def worker(t: int) -> None:
        with SignerClient(signer_daemon.address, timeout=10) as c:
            for i in range(100_000):
                m = numbered_manifest(t * 100_000 + i)
                try:
                    env, _ = c.sign_fixture_digest(m)
                    assert verify_fixture_envelope(env, ring).digest == m.digest()
                except TransportError as exc:
                    with lock:
                        transport.append(exc)
                    return
                except BaseException as exc:
                    with lock:
                        other.append(exc)
                    return
                with lock:
                    ok.append(m.pin_id)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    deadline = time.monotonic() + 30
    while len(ok) < 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    signer_daemon.proc.kill()
    signer_daemon.proc.wait(10)
    for th in threads:
        th.join(30)
    assert other == []
    assert len(ok) >= 200
    assert len(transport) == THREADS  # every thread ended on a transport error
    assert {e.kind for e in transport} <= {"unavailable", "deadline", "internal", "empty_response"}
    lines = signer_daemon.audit_log.read_text(encoding="utf-8").splitlines()
    granted = {json.loads(x)["pin_id"] for x in lines if json.loads(x)["decision"] == "granted"}
    assert set(ok) <= granted  # no envelope left the signer unaudited
    res = run_signerd("audit-verify", str(signer_daemon.audit_log))
    assert res.returncode == 0, res.stdout + res.stderr
