"""The reporter's channel to the executor, opened at interpreter start in the sandbox.

Imported by the mounted ``sitecustomize`` before any other code of the process runs — before
pytest, its plugins (an ``addopts = -p ...`` plugin of the workspace included), conftests and test
modules. It takes the per-run nonce, the socket path, the targets path and the batch path out of
the environment, blanks the nonce in the process's initial environment block (what
``/proc/self/environ`` shows; best effort, through ``ctypes``), and connects: the executor reads
only the first connection, so whoever connects later is flagged. A process without the nonce (a
test's subprocess: the environment it inherits is already clean) connects to nothing. Stdlib
only; never raises.

In a judged run (``wire.py``) the judge never sees the nonce or the socket: the supervisor holds
them. ``PATCHGATE_REPORT_FD`` names an inherited pipe to the supervisor instead, and records go
there as JSON lines; the supervisor stamps each with the nonce and its own sequence number and
relays it. ``JUDGED`` says which mode the process is in.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from typing import Any

__all__ = ["BATCH", "CHANNEL", "JUDGED", "TARGETS", "Channel"]

NONCE_ENV = "PATCHGATE_REPORT_NONCE"
SOCKET_ENV = "PATCHGATE_REPORT_SOCKET"
TARGETS_ENV = "PATCHGATE_REPORT_TARGETS"
BATCH_ENV = "PATCHGATE_REPORT_BATCH"
FD_ENV = "PATCHGATE_REPORT_FD"


class Channel:
    """The connection to the executor; sending never raises into pytest."""

    def __init__(self, path: str, nonce: str, fd: int = -1) -> None:
        self._nonce = nonce
        self._seq = 0
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        if fd >= 0:  # a judged run: the pipe to the supervisor
            self._sock = _PipeWriter(fd)  # type: ignore[assignment]
            return
        if not path:
            return
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(path)
        except OSError:
            return
        self._sock = sock

    def send(self, kind: str, **fields: Any) -> None:
        with self._lock:
            if self._sock is None:
                return
            record = {"v": 1, "nonce": self._nonce, "seq": self._seq, "kind": kind, **fields}
            self._seq += 1
            line = json.dumps(record, separators=(",", ":"), ensure_ascii=True) + "\n"
            try:
                self._sock.sendall(line.encode("ascii"))
            except OSError:
                self.close_locked()

    def close_locked(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None

    def close(self) -> None:
        with self._lock:
            self.close_locked()


class _PipeWriter:
    """A pipe's write end with the two socket methods the channel uses."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        os.close(self._fd)


def _take_env(name: str) -> str:
    """Remove ``name`` from the environment; blank it in the initial environment block too."""
    value = os.environ.get(name, "")
    with contextlib.suppress(Exception):  # ctypes may be missing from a slim image
        import ctypes  # noqa: PLC0415 - only here

        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_void_p
        addr = libc.getenv(name.encode())
        if addr:  # the C string, which /proc/self/environ shows: overwrite it in place
            ctypes.memset(addr, ord("0"), len(value.encode()))
    os.environ.pop(name, None)
    return value


_nonce = _take_env(NONCE_ENV)
_path = _take_env(SOCKET_ENV)
TARGETS = _take_env(TARGETS_ENV)
BATCH = _take_env(BATCH_ENV)
_fd = _take_env(FD_ENV)
JUDGED = _fd.isdigit()
if JUDGED:
    CHANNEL = Channel("", "", int(_fd))
else:
    CHANNEL = Channel(_path, _nonce) if _nonce and _path else Channel("", "")
del _nonce, _path, _fd
