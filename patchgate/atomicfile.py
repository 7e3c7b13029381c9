"""Atomic file writes: temp file in the same directory, fsync, rename, fsync the directory.

A reader sees the old file or the new one, never a half-written one; a failure leaves the old file
intact and removes the temp file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from patchgate.errors import LedgerError

__all__ = ["atomic_write_bytes", "atomic_write_json", "json_bytes"]


def json_bytes(obj: object) -> bytes:
    """Stable, human-readable JSON (sorted keys, 2-space indent, trailing newline)."""
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` atomically; LedgerError on failure, and the old file survives."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    tmp_name = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
        tmp_name = None
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise LedgerError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def atomic_write_json(path: Path, obj: object, mode: int = 0o644) -> None:
    """Atomically write ``obj`` as stable JSON."""
    atomic_write_bytes(path, json_bytes(obj), mode=mode)
