"""Bench helper: start a signer and executors as real subprocesses on unix sockets in a temp dir.

Stops them by pid. Not a test fixture (tests use tests/integration/fixtures_*.py); the benchmarks
run outside pytest, so they keep this small copy of the start-and-wait-for-``listening`` logic.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from patchgate.keys import generate_key_file

__all__ = ["Daemon", "Lane", "start_lane"]


@dataclass
class Daemon:
    """One running daemon subprocess."""

    address: str
    proc: subprocess.Popen[str]

    def stop(self) -> None:
        """SIGTERM by pid, then SIGKILL if it does not drain."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _start(argv: list[str], log: Path) -> Daemon:
    env = {**os.environ, "PATCHGATE_LOG_LEVEL": "warning", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONWARNINGS", None)
    with open(log, "w", encoding="utf-8") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: lines.put(proc.stdout.readline() if proc.stdout else ""), daemon=True
    ).start()
    try:
        first = lines.get(timeout=120)
    except queue.Empty:
        first = ""
    if not first.startswith("listening "):
        proc.kill()
        proc.wait(10)
        raise RuntimeError(f"{argv[2]} did not start: {log.read_text()}")
    return Daemon(first.split(" ", 1)[1].strip(), proc)


@dataclass
class Lane:
    """A signer and N executors sharing one operator key."""

    keyring: Path
    signer: Daemon
    executors: list[Daemon] = field(default_factory=list)

    def stop(self) -> None:
        """Stop every daemon (executors first)."""
        for d in [*self.executors, self.signer]:
            d.stop()


def start_lane(tmp: Path, executors: int = 1) -> Lane:
    """Operator key, one signer, ``executors`` executors (own state dirs, one shared image)."""
    tmp.mkdir(parents=True, exist_ok=True)
    key = tmp / "operator.key"
    if not key.exists():
        generate_key_file(key, "operator")
    keyring = Path(f"{key}.pub")
    sock = tmp / "sock"
    sock.mkdir(mode=0o700, exist_ok=True)
    py = sys.executable
    signer = _start(
        [py, "-m", "signerd", "serve", "--key", str(key), "--listen", f"unix:{sock}/signer.sock",
         "--audit-log", str(tmp / "audit.jsonl")],
        tmp / "signerd.log",
    )  # fmt: skip
    lane = Lane(keyring=keyring, signer=signer)
    try:
        for i in range(executors):
            state = tmp / f"executord-{i}"
            argv = [py, "-m", "executord", "serve", "--operator-keyring", str(keyring),
                    "--listen", f"unix:{sock}/executor-{i}.sock", "--image", "host",
                    "--state-dir", str(state), "--store-dir", str(state / "blobs"),
                    "--instance", f"bench-{os.getpid()}-{i}"]  # fmt: skip
            lane.executors.append(_start(argv, tmp / f"executord-{i}.log"))
    except BaseException:
        lane.stop()
        raise
    return lane
