"""Local daemons for the laptop lane and the demo: start ``patchgate-signerd`` and
``patchgate-executord`` as two separate processes on unix sockets, wait until their gRPC health
service says SERVING, and stop them by pid (never by name).

The executor is given only the operator *public* keyring. The signer's socket lives in a directory
of mode 0750 that the executor's process has no business entering; see docs/lanes.md for what the
split does and does not protect against on one machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.atomicfile import atomic_write_json
from patchgate.errors import PatchgateError, TransportError

__all__ = [
    "DaemonProc", "LaneState", "console_script", "is_running", "process_identity", "start_daemon",
    "stop_pid", "wait_healthy",
]  # fmt: skip

_STATE_FILE = "lane.json"


@dataclass(frozen=True, kw_only=True)
class DaemonProc:
    """One started daemon: its name, pid, address and log file."""

    name: str
    pid: int
    address: str
    log: str
    #: who ``pid`` was when ``up`` started it: boot id and start time of ``/proc/<pid>/stat``
    #: ("" in a lane.json of an older ``up``: then ``down`` signals nothing, see ``stop_pid``)
    identity: str = ""


@dataclass(frozen=True, kw_only=True)
class LaneState:
    """What ``patchgate up`` started, persisted in the state directory."""

    state_dir: str
    operator_keyring: str
    signer: DaemonProc
    executor: DaemonProc
    instance: str = ""  # the executor's --instance (empty in a lane.json of an older `up`)

    def save(self) -> None:
        """Write ``lane.json`` in the state directory."""
        atomic_write_json(Path(self.state_dir) / _STATE_FILE, asdict(self))

    @classmethod
    def load(cls, state_dir: Path) -> LaneState | None:
        """The saved state, or None when nothing was started from this directory."""
        try:
            obj = json.loads((Path(state_dir) / _STATE_FILE).read_text(encoding="utf-8"))
            return cls(
                state_dir=obj["state_dir"],
                operator_keyring=obj["operator_keyring"],
                signer=DaemonProc(**obj["signer"]),
                executor=DaemonProc(**obj["executor"]),
                instance=str(obj.get("instance", "")),
            )
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            raise PatchgateError(
                f"{state_dir}/{_STATE_FILE}: unreadable lane state: {exc}"
            ) from None


def console_script(name: str) -> list[str]:
    """argv prefix that runs one of our console scripts with this interpreter."""
    exe = shutil.which(name, path=str(Path(sys.executable).parent))
    if exe:
        return [exe]
    module = {
        "patchgate": "client",
        "patchgate-signerd": "signerd",
        "patchgate-executord": "executord",
    }[name]
    return [sys.executable, "-m", module]


def start_daemon(name: str, args: list[str], address: str, log_path: Path) -> DaemonProc:
    """Start console script ``name`` with ``args`` in its own session, logging to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [*console_script(name), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    daemon = DaemonProc(
        name=name,
        pid=proc.pid,
        address=address,
        log=str(log_path),
        identity=process_identity(proc.pid) or "",
    )
    try:
        wait_healthy(address, proc=proc, timeout=120.0)
    except TransportError:
        stop_pid(proc.pid, grace=2.0)
        with contextlib.suppress(OSError):
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
            raise TransportError(
                "unavailable", f"{name} did not become healthy; last log lines: " + " | ".join(tail)
            ) from None
        raise
    except BaseException:  # interrupted while waiting: stop what was started, by its pid
        stop_pid(proc.pid, grace=2.0)
        if address.startswith("unix:"):  # a daemon killed after the grace leaves its socket
            Path(address[len("unix:") :]).unlink(missing_ok=True)
        raise
    return daemon


def wait_healthy(
    address: str, *, proc: subprocess.Popen[bytes] | None = None, timeout: float
) -> None:
    """Poll the gRPC health service at ``address`` until SERVING; TransportError on timeout/exit."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise TransportError("unavailable", f"exited with status {proc.returncode} at start")
        try:
            with grpc.insecure_channel(address) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=2.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
                last = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        except grpc.RpcError as exc:
            last = exc.code().name if hasattr(exc, "code") else str(exc)
        time.sleep(0.2)
    raise TransportError("unavailable", f"{address} not healthy after {timeout:.0f}s ({last})")


def process_identity(pid: int) -> str | None:
    """``<boot id>:<start time>`` of process ``pid`` (``/proc``), None when there is none: a pid
    names one process only for as long as it lives, this names it for good."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            boot = fh.read().strip()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after the command name, which may hold spaces
    if len(fields) < 20:  # starttime is field 22 of proc(5), index 19 here
        return None
    return f"{boot}:{fields[19]}"


def is_running(pid: int, identity: str) -> bool:
    """True when ``pid`` is still the process ``identity`` named (never for an empty identity)."""
    return bool(identity) and process_identity(pid) == identity


def stop_pid(pid: int, *, identity: str | None = None, grace: float = 15.0) -> bool:
    """SIGTERM ``pid``, wait up to ``grace`` seconds, then SIGKILL. True if it was running.

    With ``identity`` (what :func:`process_identity` said at start), a pid now naming another
    process — the daemon died and the pid was reused — is never signalled: the process is held by
    a pidfd (so the pid cannot change hands between the check and the signal) and its identity
    checked first. ``identity=None``: a child of this process, which cannot have been reused.
    """
    if identity is not None:
        return _stop_identified(pid, identity, grace)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    while _alive(pid):
        time.sleep(0.05)
    return True


def _stop_identified(pid: int, identity: str, grace: float) -> bool:
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    try:
        if not is_running(pid, identity):
            return False  # another process has the pid now (or no identity was recorded)
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGTERM)
        if not _exited(pidfd, grace):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            _exited(pidfd, None)
        _reaped(pid, grace)
        return True
    finally:
        os.close(pidfd)


def _reaped(pid: int, timeout: float) -> None:
    """Wait (bounded) until the exited process has left the process table: our own child
    (``demo``'s daemons) we reap here; one ``up`` started is init's, reaped a moment after it
    exits. The pidfd we hold keeps the pid from being reused meanwhile."""
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _exited(pidfd: int, timeout: float | None) -> bool:
    """Wait until the process of ``pidfd`` has exited (the fd turns readable)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else int(timeout * 1000)))


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child: probe it
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return done == 0
