"""The daemon's start and end: sweep what dead processes left, and stop within a bound.

Start: remove the containers labelled with this daemon's instance (a previous process of the same
instance left them; another instance's are never touched), claim this process's work directory
and remove the work directories of dead executor processes (``executord.store.workdir``).

Stop, on SIGTERM/SIGINT, within ``grace`` seconds of the signal:

1. take no new request and cancel every running one (each run kills its container within one wait
   slice, removes it, and its request directory goes);
2. the gRPC server stops accepting and drains in-flight calls until ``grace - reserve``, then
   cancels what is left (handlers notice within a quarter second);
3. wait for the request threads until the same point;
4. until ``grace``: remove every container of this process still there (label
   ``patchgate.owner=<host>-<pid>``) and this process's work directory;
5. if a request thread or that clean-up is stuck in a call that cannot be interrupted (a read that
   never returns, an engine that does not answer), log it and leave with ``os._exit(0)``: the
   next start-up sweep removes what is left. Otherwise return and exit 0.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from executord.errors import SandboxError
from executord.sandbox.container import ContainerRuntime, sweep
from executord.service.adapter import ExecutorService
from executord.settings import ExecutorSettings
from executord.store.workdir import WorkDir, sweep_work_dirs
from patchgate.server import DaemonServer

__all__ = ["Started", "clean_up", "drain_grace", "owner_name", "serve_until_stopped", "start_up"]

log = structlog.get_logger("executord.lifecycle")
_RESERVE_S = 2.0


def owner_name() -> str:
    """``<host>-<pid>``: this process's work directory and its containers' owner label."""
    return f"{socket.gethostname()}-{os.getpid()}"


def drain_grace(grace_s: float) -> float:
    """How long the server drains: the grace less what the clean-up keeps (at most half)."""
    return max(grace_s / 2, grace_s - _RESERVE_S)


@dataclass(frozen=True)
class Started:
    """What the start-up did: this process's work directory and what it swept."""

    work: WorkDir
    swept_containers: int
    swept_work_dirs: list[str]


def start_up(runtime: ContainerRuntime, settings: ExecutorSettings, owner: str) -> Started:
    """Sweep this instance's containers and dead processes' work dirs; claim our own."""
    containers = sweep(runtime, settings.label, settings.instance)
    work = WorkDir.claim(settings.work_dir, owner)
    try:
        dirs = sweep_work_dirs(settings.work_dir, own=owner, host=socket.gethostname())
    except BaseException:
        work.release()
        raise
    return Started(work, containers, dirs)


def clean_up(
    runtime: ContainerRuntime, settings: ExecutorSettings, owner: str, work: WorkDir
) -> None:
    """This process's work directory, then any container of this process still there."""
    try:
        work.release()
    except OSError as exc:
        log.warning("work dir not removed", work_dir=str(work.path), error=str(exc))
    try:
        left = sweep(runtime, settings.owner_label, owner)
    except SandboxError as exc:
        log.warning("containers not removed; the next start-up sweeps them", error=str(exc))
        return
    if left:
        log.warning("removed containers left by stuck runs", containers=left)


def serve_until_stopped(
    server: DaemonServer,
    service: ExecutorService,
    cleanup: Callable[[], None],
    grace_s: float,
    exit_hard: Callable[[int], object] = os._exit,
) -> None:
    """Serve until SIGTERM/SIGINT, then stop within ``grace_s`` (module docstring)."""
    signalled: list[float] = []

    def on_stop() -> None:
        signalled.append(time.monotonic())
        service.shutdown()

    server.serve_until_signal(on_stop=on_stop)
    t0 = signalled[0] if signalled else time.monotonic()
    idle = service.wait_idle(t0 + drain_grace(grace_s))
    worker = threading.Thread(target=cleanup, name="shutdown-cleanup", daemon=True)
    worker.start()
    worker.join(max(0.0, t0 + grace_s - time.monotonic()))
    if idle and not worker.is_alive():
        return
    log.error(
        "shutdown grace over; leaving stuck work behind (the next start-up sweeps it)",
        grace_s=grace_s,
        runs_stuck=not idle,
        cleanup_stuck=worker.is_alive(),
    )
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    exit_hard(0)
