"""The executor's settings: one frozen object built once in ``cli`` (flags → env → defaults)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from patchgate.callguard import CallLimits

__all__ = ["ExecutorSettings", "default_state_dir", "parse_bytes"]

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_bytes(text: str) -> int:
    """``"512m"`` → 536870912. Accepts a plain integer or a k/m/g suffix (powers of 1024)."""
    t = text.strip().lower().removesuffix("b")
    unit = t[-1:] if t[-1:] in _UNITS and not t[-1:].isdigit() else ""
    number = t[: len(t) - len(unit)]
    if not number.isdigit():
        raise ValueError(f"not a size: {text!r}")
    return int(number) * _UNITS[unit]


def default_state_dir() -> Path:
    """``$PATCHGATE_EXECUTORD_STATE`` or ``~/.cache/patchgate-executord``."""
    env = os.environ.get("PATCHGATE_EXECUTORD_STATE")
    return Path(env) if env else Path.home() / ".cache" / "patchgate-executord"


@dataclass(frozen=True, kw_only=True)
class ExecutorSettings:
    """Everything the executor needs to know, fixed at start-up."""

    operator_keyring: Path
    listen: str
    image: str = "host"
    key: Path | None = None
    max_parallel: int = 1
    runtime: str = "runc"
    host_python: Path | None = None
    pull: bool = False
    state_dir: Path = Path("/var/lib/patchgate-executord")
    store_dir: Path | None = None
    store_max_bytes: int = 2 << 30
    memory_bytes: int = 512 << 20
    pids_limit: int = 256
    nano_cpus: int = 1_000_000_000
    tmpfs_bytes: int = 64 << 20
    sandbox_uid: int = 10001
    label: str = "patchgate.executord"
    instance: str = "default"
    owner_label: str = "patchgate.owner"  # value ``<host>-<pid>`` of the process that created it
    shutdown_grace_s: float = 10.0
    tls_cert: Path | None = None
    tls_key: Path | None = None
    client_ca: Path | None = None
    #: admission, idle limit and total deadline of every call (``PATCHGATE_MAX_CALLS``, ...)
    limits: CallLimits = field(default_factory=CallLimits)

    @property
    def blob_dir(self) -> Path:
        """Where blobs live: ``--store-dir`` (shareable by replicas), else under the state dir."""
        return self.store_dir if self.store_dir is not None else self.state_dir / "blobs"

    @property
    def work_dir(self) -> Path:
        """Where each process's work directory ``<host>-<pid>`` (its requests' trees) lives."""
        return self.state_dir / "work"
