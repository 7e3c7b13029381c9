"""The laptop lane: ``patchgate up`` starts the signer and the executor as two processes on unix
sockets under a state directory; ``patchgate down`` stops them by pid.

Layout of the state directory (default ``$XDG_STATE_HOME/patchgate/<lane>``, see
:mod:`client.lanes.state`; refused inside a git work tree unless git ignores it)::

    operator.key          the operator private key (0600), created on first ``up``
    operator.key.pub      its public keyring: the only thing the executor is given
    signer/               0750: the signer's socket lives here (kernel-enforced access)
    signer/signer.sock
    executor/executor.sock
    audit.log             the signer's hash-chained audit log
    logs/*.log            daemon logs (JSON lines)
    lane.json             pids and addresses of what ``up`` started, and the executor's instance
    check.toml            the [check] table that lets ``patchgate check`` find the daemons

The executor's ``--instance`` (the container label value its start-up sweep removes) is derived
from the resolved state directory, so two lanes on one Docker engine never sweep each other's
sandboxes, and a lane restarted from the same directory sweeps what its previous executor left.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from client.lanes.daemons import (
    DaemonProc,
    LaneState,
    console_script,
    is_running,
    process_identity,
    start_daemon,
    stop_pid,
)
from client.lanes.state import check_state_dir, settings_path, write_settings
from patchgate.errors import PatchgateError

__all__ = ["LaneSettings", "check_table", "lane_down", "lane_instance", "lane_up"]


@dataclass(frozen=True, kw_only=True)
class LaneSettings:
    """Where the lane lives and how the executor runs its sandboxes."""

    state_dir: Path
    image: str = "host"
    runtime: str = "runc"
    max_parallel: int | None = None


def lane_instance(state_dir: Path) -> str:
    """``lane-`` + 12 hex of the sha256 of the resolved state directory: the executor's instance."""
    resolved = str(Path(state_dir).resolve())
    return "lane-" + hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def _keygen(state: Path) -> Path:
    key = state / "operator.key"
    if not key.exists():
        proc = subprocess.run(
            [*_signerd(), "keygen", "--out", str(key)],
            check=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if proc.returncode != 0:
            why = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
            raise PatchgateError(f"could not create the operator key {key}: {why}")
    return key


def _signerd() -> list[str]:
    return console_script("patchgate-signerd")


def check_table(lane: LaneState) -> dict[str, object]:
    """The ``[check]`` settings that point ``patchgate check`` at this lane."""
    return {
        "signer": lane.signer.address,
        "executor": [lane.executor.address],
        "operator_keyring": lane.operator_keyring,
    }


def lane_up(settings: LaneSettings, say: Callable[[str], None]) -> LaneState:
    """Start both daemons (refusing if this state dir already runs some) and persist the state.

    Refused before anything is written when the state directory is in a git work tree and not
    git-ignored.
    """
    state = settings.state_dir.resolve()
    check_state_dir(state)
    existing = LaneState.load(state)
    if existing is not None and any(
        is_running(d.pid, d.identity) for d in (existing.signer, existing.executor)
    ):
        raise PatchgateError(f"a lane is already up in {state}; run `patchgate down` first")
    state.mkdir(parents=True, exist_ok=True, mode=0o750)
    os.chmod(state, 0o750)  # noqa: S103 - group access is the patchgate-clients model
    key = _keygen(state)
    keyring = Path(f"{key}.pub")
    sock_dir = state / "signer"
    sock_dir.mkdir(exist_ok=True)
    os.chmod(sock_dir, 0o750)  # noqa: S103 - only the signer user and its client group
    (state / "executor").mkdir(exist_ok=True)
    signer_addr = f"unix:{sock_dir / 'signer.sock'}"
    executor_addr = f"unix:{state / 'executor' / 'executor.sock'}"
    instance = lane_instance(state)
    started: list[DaemonProc] = []
    try:  # a failure or Ctrl-C/SIGTERM: no daemon is left running without a lane.json
        say(f"starting patchgate-signerd on {signer_addr}")
        started.append(
            start_daemon(
                "patchgate-signerd",
                ["serve", "--key", str(key), "--listen", signer_addr,
                 "--audit-log", str(state / "audit.log")],
                signer_addr,
                state / "logs" / "signerd.log",
            )
        )  # fmt: skip
        say(f"starting patchgate-executord on {executor_addr} (image {settings.image}, {instance})")
        started.append(
            start_daemon(
                "patchgate-executord",
                _executor_args(settings, keyring, executor_addr, instance),
                executor_addr,
                state / "logs" / "executord.log",
            )
        )
        lane = LaneState(
            state_dir=str(state),
            operator_keyring=str(keyring),
            signer=started[0],
            executor=started[1],
            instance=instance,
        )
        lane.save()
        write_settings(state, check_table(lane))
    except BaseException:
        for d in reversed(started):
            stop_pid(d.pid, identity=d.identity)
            _remove_socket(d)
        (state / "lane.json").unlink(missing_ok=True)
        raise
    return lane


def _executor_args(settings: LaneSettings, keyring: Path, address: str, instance: str) -> list[str]:
    args = [
        "serve", "--operator-keyring", str(keyring), "--listen", address,
        "--image", settings.image, "--runtime", settings.runtime, "--instance", instance,
    ]  # fmt: skip
    if settings.max_parallel:
        args += ["--max-parallel", str(settings.max_parallel)]
    return args


def lane_down(state_dir: Path, say: Callable[[str], None]) -> bool:
    """Stop what ``up`` started in ``state_dir`` (by pid); True if anything was running."""
    state = state_dir.resolve()
    lane = LaneState.load(state)
    if lane is None:
        say(f"nothing to stop: no lane state in {state}")
        return False
    stopped = False
    for d in (lane.executor, lane.signer):
        if stop_pid(d.pid, identity=d.identity):
            say(f"stopped {d.name} (pid {d.pid})")
            stopped = True
        elif process_identity(d.pid) is not None:
            say(
                f"not stopping pid {d.pid}: it is no longer the {d.name} `up` started "
                "(the daemon ended and the pid was reused, or the lane state is older)"
            )
        _remove_socket(d)
    (state / "lane.json").unlink(missing_ok=True)
    settings_path(state).unlink(missing_ok=True)  # else `check` would dial dead sockets
    return stopped


def _remove_socket(d: DaemonProc) -> None:
    if d.address.startswith("unix:"):
        Path(d.address[len("unix:") :]).unlink(missing_ok=True)
