"""Concurrency and shutdown: 1,000 signatures from 16 threads; SIGTERM in the middle of a burst."""

from __future__ import annotations

import json
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from patchgate.envelope import verify_fixture_envelope
from patchgate.errors import TransportError
from patchgate.keys import Keyring
from patchgate.signer_client import SignerClient
from tests.integration.fixtures_signer import SignerDaemon, numbered_manifest, run_signerd

pytestmark = pytest.mark.integration

THREADS = 16


def test_1000_concurrent_sign_requests_from_16_threads(signer_daemon: SignerDaemon) -> None:
    """All 1,000 requests return an envelope over their own digest; the audit chain holds."""
    ring = Keyring.load(signer_daemon.keyring_path)
    clients = [SignerClient(signer_daemon.address, timeout=60) for _ in range(THREADS)]

    def one(i: int) -> tuple[int, str]:
        env, digest = clients[i % THREADS].sign_fixture_digest(numbered_manifest(i))
        return i, verify_fixture_envelope(env, ring).digest if digest else ""

    try:
        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(one, range(1000)))
    finally:
        for c in clients:
            c.close()
    assert all(digest == numbered_manifest(i).digest() for i, digest in results)
    lines = signer_daemon.audit_log.read_text().splitlines()
    assert len(lines) == 1000
    assert {json.loads(x)["decision"] for x in lines} == {"granted"}
    res = run_signerd("audit-verify", str(signer_daemon.audit_log))
    assert res.returncode == 0, res.stderr


def test_sigterm_mid_burst_every_accepted_request_gets_a_complete_reply(
    signer_daemon: SignerDaemon,
) -> None:
    """After SIGTERM: exit 0; each request either got a verified envelope or 'unavailable'."""
    ring = Keyring.load(signer_daemon.keyring_path)
    ok: list[str] = []
    refused: list[str] = []
    other: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()

    def worker(t: int) -> None:
        with SignerClient(signer_daemon.address, timeout=30) as c:
            i = 0
            while not stop.is_set():
                i += 1
                m = numbered_manifest(t * 100_000 + i)
                try:
                    env, _ = c.sign_fixture_digest(m)
                    assert verify_fixture_envelope(env, ring).digest == m.digest()
                    with lock:
                        ok.append(m.pin_id)
                except TransportError as exc:
                    with lock:
                        (refused if exc.kind == "unavailable" else other).append(exc)
                    if exc.kind == "unavailable":
                        return
                except BaseException as exc:
                    with lock:
                        other.append(exc)
                    return

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    deadline = time.monotonic() + 30
    while len(ok) < 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    signer_daemon.proc.send_signal(signal.SIGTERM)
    assert signer_daemon.proc.wait(30) == 0
    stop.set()
    for th in threads:
        th.join(30)
    assert other == []
    assert len(ok) >= 200
    granted = [
        json.loads(x)["pin_id"]
        for x in signer_daemon.audit_log.read_text().splitlines()
        if json.loads(x)["decision"] == "granted"
    ]
    assert sorted(granted) == sorted(ok)  # nothing granted without a reply, no reply unaudited
    assert "stopped" in signer_daemon.stderr()
