"""What a sandbox printed: a capped tail of its stdout and stderr, kept by the executor itself.

The engine keeps no container log (``log_config`` type ``none``), so nothing a run prints lands on
the host's disk. The runtime attaches to the container before starting it and feeds the stream
here; only the last ``limit`` bytes of each stream are kept (and a count of all of them), so
memory stays bounded however much a run prints. The tail is for people reading a report; outcomes
never come from it.
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["TAIL_BYTES", "OutputCapture", "OutputPump", "printable", "pump_frames"]

TAIL_BYTES = 64 << 10
_HEADER = struct.Struct(">BxxxI")  # the engine's multiplexed stream: type, 3 pad bytes, length
_STDOUT, _STDERR = 1, 2
_UNPRINTABLE = re.compile(r"[^\t\n\x20-\x7e\u00a0-\U0010ffff]|\ufffd")


def printable(data: bytes) -> str:
    """Text for a report: UTF-8 where it decodes, ``?`` for anything else and for control bytes."""
    return _UNPRINTABLE.sub("?", data.decode("utf-8", "replace"))


class _Tail:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._buf = bytearray()

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self._buf += data
        if len(self._buf) > 2 * self.limit:
            del self._buf[: len(self._buf) - self.limit]

    def value(self) -> bytes:
        return bytes(self._buf[-self.limit :]) if self.limit else b""


class OutputCapture:
    """The two tails of one run; written by one reader thread, read after the run."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self._lock = threading.Lock()
        self._out = _Tail(limit)
        self._err = _Tail(limit)
        self.done = threading.Event()

    def add(self, stream: int, data: bytes) -> None:
        """Append bytes of stream 1 (stdout) or 2 (stderr); other streams are ignored."""
        with self._lock:
            if stream == _STDOUT:
                self._out.add(data)
            elif stream == _STDERR:
                self._err.add(data)

    def set_limit(self, limit: int) -> None:
        """Lower the kept tail (a report's budget for many runs)."""
        with self._lock:
            self._out.limit = min(self._out.limit, limit)
            self._err.limit = min(self._err.limit, limit)

    def tails(self) -> tuple[bytes, bytes, int, int]:
        """(stdout tail, stderr tail, stdout bytes seen, stderr bytes seen)."""
        with self._lock:
            return self._out.value(), self._err.value(), self._out.total, self._err.total


def pump_frames(
    read: Callable[[int], bytes], capture: OutputCapture, chunk: int = 64 << 10
) -> None:
    """Demultiplex the engine's attach stream into ``capture`` until the stream ends.

    A frame's payload is read in chunks of at most ``chunk`` bytes, so a frame header claiming
    gigabytes allocates nothing. ``read(n)`` returns at most ``n`` bytes, ``b""`` at the end.
    """
    try:
        while True:
            header = _read_exactly(read, _HEADER.size)
            if header is None:
                return
            stream, size = _HEADER.unpack(header)
            while size > 0:
                data = read(min(size, chunk))
                if not data:
                    return
                size -= len(data)
                capture.add(stream, data)
    finally:
        capture.done.set()


def _read_exactly(read: Callable[[int], bytes], n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        data = read(n - len(buf))
        if not data:
            return None
        buf += data
    return buf


class OutputPump:
    """A thread that pumps one attached stream (a socket from the engine) into a capture."""

    def __init__(self, sock: Any, capture: OutputCapture) -> None:
        self._sock = sock
        self._closed = threading.Event()
        self.capture = capture
        self._thread = threading.Thread(
            target=pump_frames, args=(self._read, capture), name="output-pump", daemon=True
        )
        self._thread.start()

    def _read(self, n: int) -> bytes:
        while not self._closed.is_set():
            try:
                data = self._sock.read(n) if hasattr(self._sock, "read") else self._sock.recv(n)
            except TimeoutError:
                continue  # a quiet run: keep waiting until the stream ends or we stop
            except (OSError, ValueError):
                return b""
            return bytes(data or b"")
        return b""

    def stop(self, grace_s: float) -> None:
        """Let the stream end by itself for up to ``grace_s``, then cut it; never blocks longer."""
        self.capture.done.wait(grace_s)
        self._closed.set()
        raw = getattr(self._sock, "_sock", self._sock)
        with contextlib.suppress(OSError, AttributeError):
            raw.shutdown(socket.SHUT_RDWR)
        self._thread.join(1.0)
        for closable in (self._sock, raw):  # a SocketIO alone does not close its socket's fd
            with contextlib.suppress(OSError, AttributeError):
                closable.close()
