"""pytest fixtures (signer): real ``patchgate-signerd`` daemons over real sockets.

Loaded by tests/conftest.py. ``operator_key`` comes from tests/conftest.py. Provides:

- ``start_signer(keys, ...)``: start ``python -m signerd serve`` on a unix socket in a fresh 0700
  directory and wait for its ``listening`` line; returns a ``SignerDaemon``.
- ``run_signerd(*args)``: run one ``patchgate-signerd`` command to completion (refusal tests).
- ``signer_daemon``: a running daemon with ``operator_key``; stopped (by pid) after the test.
- ``pki``: a test CA with signer/client/executor certificates (``patchgate.pki``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from patchgate.digest import FileEntry, Manifest
from patchgate.pki import CertPaths, issue, make_ca
from patchgate.tls import ClientTLS

__all__ = ["SignerDaemon", "TestPKI", "numbered_manifest", "run_signerd", "start_signer"]

SIGNERD = [sys.executable, "-m", "signerd"]
READY_TIMEOUT = 20.0


def numbered_manifest(i: int) -> Manifest:
    """A small canonical manifest, different for every ``i`` (load and burst tests)."""
    return Manifest(
        pin_id=f"fixpin-{i}",
        files={f"fixtures/{i}.json": FileEntry(f"{i:064x}", i)},
        seed=i,
        clock_bound_ms=1000,
        allowed_commands=(("python", "-m", "pytest"),),
    )


@dataclasses.dataclass
class SignerDaemon:
    """A running signer subprocess."""

    address: str
    keyring_path: Path
    audit_log: Path
    proc: subprocess.Popen[str]
    stderr_path: Path
    socket_dir: Path
    reader: threading.Thread | None = None

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM by pid, wait, return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.reader is not None:
            self.reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode

    def stderr(self) -> str:
        """The daemon's log so far."""
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def socket_dir() -> Path:
    """A short (sun_path is ~108 bytes) private directory for a socket."""
    return Path(tempfile.mkdtemp(prefix="pgs-", dir="/tmp"))


def start_signer(
    keys: Sequence[Path],
    *,
    keyring_path: Path | None = None,
    audit_log: Path | None = None,
    extra_args: Sequence[str] = (),
    listen: str | None = None,
    workdir: Path | None = None,
    env: dict[str, str] | None = None,
) -> SignerDaemon:
    """Start ``serve`` and wait for ``listening``; raise with the daemon's stderr if it exits."""
    sdir = socket_dir()
    workdir = workdir or sdir
    audit_log = audit_log or (workdir / "audit.jsonl")
    listen = listen or f"unix:{sdir}/signer.sock"
    argv = [*SIGNERD, "serve", "--listen", listen, "--audit-log", str(audit_log)]
    for k in keys:
        argv += ["--key", str(k)]
    argv += list(extra_args)
    stderr_path = workdir / f"signerd-{os.urandom(4).hex()}.log"
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=err, text=True, env=env or _env()
        )
    lines: queue.Queue[str] = queue.Queue()

    def _read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    reader = threading.Thread(target=_read, daemon=True)
    reader.start()
    try:
        first = lines.get(timeout=READY_TIMEOUT)
    except queue.Empty:
        first = ""
        proc.kill()
    if not first.startswith("listening "):
        proc.wait(10)
        reader.join(5)
        assert proc.stdout is not None
        proc.stdout.close()
        raise RuntimeError(f"signerd exited {proc.returncode}: {stderr_path.read_text()}")
    keyring = keyring_path or Path(f"{keys[0]}.pub")
    return SignerDaemon(
        address=first.split(" ", 1)[1].strip(),
        keyring_path=keyring,
        audit_log=audit_log,
        proc=proc,
        stderr_path=stderr_path,
        socket_dir=sdir,
        reader=reader,
    )


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    return env


def run_signerd(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run one ``patchgate-signerd`` command to completion."""
    return subprocess.run(
        [*SIGNERD, *args], capture_output=True, text=True, timeout=timeout, env=_env(), check=False
    )


@dataclasses.dataclass(frozen=True)
class TestPKI:
    """A test CA and one certificate per role, plus a client ``ClientTLS`` builder."""

    __test__ = False  # not a test class

    directory: Path
    ca: CertPaths
    signer: CertPaths
    client: CertPaths
    executor: CertPaths

    def client_tls(self, who: CertPaths) -> ClientTLS:
        """mTLS client credentials presenting ``who``."""
        return ClientTLS(ca_cert=self.ca.cert, cert=who.cert, key=who.key)

    def server_args(self) -> list[str]:
        """``serve`` flags for mTLS with this CA."""
        return [
            "--tls-cert", str(self.signer.cert),
            "--tls-key", str(self.signer.key),
            "--client-ca", str(self.ca.cert),
        ]  # fmt: skip


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPKI:
    """One test CA with signer, client and executor certificates."""
    d = tmp_path_factory.mktemp("pki")
    ca = make_ca(d)
    return TestPKI(
        directory=d,
        ca=ca,
        signer=issue(d, "signer", ["localhost"]),
        client=issue(d, "client"),
        executor=issue(d, "executor"),
    )


@pytest.fixture
def signer_daemon(operator_key: object, tmp_path: Path) -> Iterator[SignerDaemon]:
    """A running signer with ``operator_key`` on a private unix socket; stopped after the test."""
    key_path: Path = operator_key.key_path  # type: ignore[attr-defined]
    daemon = start_signer([key_path], workdir=tmp_path)
    try:
        yield daemon
    finally:
        daemon.stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(daemon.socket_dir)
