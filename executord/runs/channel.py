"""The per-run report channel: a unix socket the sandbox's reporter connects to, read live.

The executor creates one directory per run holding ``report.sock`` (and ``targets.json`` when the
request names target code) and bind-mounts it **read-only** at ``/patchgate/run``: the code under
test can connect to the socket but cannot replace, remove or rename it. A thread reads records as
they arrive and hands each line to a ``RecordLog``. Only the first connection is read; any later
one is closed at once and noted as a problem. Lines, records and bytes are capped; past a cap the
connection is closed (the reporter's next send fails, the run goes on) and the problem makes the
run's properties ``error``. The reader never blocks: non-blocking sockets under a short ``select``,
and ``finish`` waits a bounded grace for the end of the stream after the container has ended.
``finish`` and ``close`` wake that ``select`` through a pipe of the channel's own, so a run's end
is seen at once, not at the end of the reader's slice.

The socket is bound through ``/proc/self/fd/<dir fd>/report.sock``, so a long state directory
never runs into the 108-byte limit of unix socket paths.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from executord.runs.records import MAX_RECORD_BYTES, MAX_RECORDS, RecordLog

__all__ = [
    "MAX_CHANNEL_BYTES",
    "SOCKET_NAME",
    "TARGETS_NAME",
    "Channel",
    "ChannelFactory",
    "ReportChannel",
    "write_targets",
]

SOCKET_NAME = "report.sock"
TARGETS_NAME = "targets.json"
MAX_CHANNEL_BYTES = 8 << 20
VARIANT_CHANNEL_BYTES = 1 << 20  # with variants: this much more per variant
_SLICE_S = 0.05
_RECV = 64 << 10


class Channel(Protocol):
    """What a run needs from its report channel."""

    def finish(self, grace_s: float) -> RecordLog:
        """Stop reading (after at most ``grace_s`` waiting for the stream's end); the records."""

    def close(self) -> None:
        """Release everything (idempotent)."""


class ChannelFactory(Protocol):
    """Opens the report channel of one run (``judged``: the supervisor relays, judge on;
    ``variants``: the run holds that many variants, each with its records, so the caps grow)."""

    def __call__(
        self, directory: Path, nonce: str, *, judged: bool = False, variants: int = 0
    ) -> Channel: ...


def write_targets(directory: Path, targets: Sequence[tuple[str, int, int, str]]) -> None:
    """``targets.json`` for the reporter: (workspace path, first line, last line, name) each."""
    path = directory / TARGETS_NAME
    doc = [{"path": p, "first": f, "last": la, "name": n} for p, f, la, n in targets]
    path.write_text(json.dumps(doc), encoding="utf-8")
    path.chmod(0o444)


class ReportChannel:
    """A live, capped reader of one run's records (see the module doc)."""

    def __init__(
        self, directory: Path, nonce: str, *, judged: bool = False, variants: int = 0
    ) -> None:
        self.log = RecordLog(nonce=nonce, judged=judged, max_records=MAX_RECORDS * (1 + variants))
        self._max_bytes = MAX_CHANNEL_BYTES + variants * VARIANT_CHANNEL_BYTES
        self._stop = threading.Event()
        self._ended = threading.Event()  # the stream ended (or was cut): nothing more to read
        self._finishing = threading.Event()  # the container ended: no new writer can appear
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                path = f"/proc/self/fd/{fd}/{SOCKET_NAME}"
                self._listener.bind(path)
                # judge off: the sandbox user connects; judge on: only the supervisor reaches the
                # directory (docs/executor.md); the mount is read-only either way
                os.chmod(path, 0o600 if judged and os.geteuid() == 0 else 0o666)
            finally:
                os.close(fd)
            self._listener.listen(4)
            self._listener.setblocking(False)
        except BaseException:
            self._listener.close()
            raise
        self._conn: socket.socket | None = None
        self._connected = False
        self._buf = bytearray()
        self._total = 0
        # finish/close wake the reader's select at once (it otherwise saw them at the end of
        # its slice: ~25 ms of every run's end, on average, spent waiting)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._thread = threading.Thread(target=self._serve, name="report-channel", daemon=True)
        self._thread.start()

    @classmethod
    def open(
        cls, directory: Path, nonce: str, *, judged: bool = False, variants: int = 0
    ) -> ReportChannel:
        """The ``ChannelFactory`` of the real executor."""
        return cls(directory, nonce, judged=judged, variants=variants)

    def _serve(self) -> None:
        try:
            while not self._stop.is_set():
                watched: list[int | socket.socket] = [self._wake_r, self._listener]
                if self._conn is not None:
                    watched.append(self._conn)
                ready, _, _ = select.select(watched, [], [], _SLICE_S)
                if self._wake_r in ready:
                    with contextlib.suppress(OSError):
                        os.read(self._wake_r, 64)
                    ready.remove(self._wake_r)
                    if self._stop.is_set():
                        break
                if not ready and self._conn is None and self._finishing.is_set():
                    break  # nothing pending and nothing open: all that was sent has been read
                if self._listener in ready:
                    self._accept()
                if self._conn is not None and self._conn in ready:
                    self._read()
        except Exception as exc:  # the channel fails closed: a problem, never a crash
            self.log.problem(f"report channel failed: {type(exc).__name__}")
        finally:
            self._drop()
            self._ended.set()

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        if self._connected:
            conn.close()
            self.log.problem("a second connection to the report channel")
            return
        self._connected = True
        conn.setblocking(False)
        self._conn = conn

    def _read(self) -> None:
        assert self._conn is not None  # noqa: S101 - checked by the caller
        try:
            data = self._conn.recv(_RECV)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            if self._buf:
                self.log.problem("a report record cut off at the end of the stream")
            self._drop()
            self._ended.set()
            return
        self._total += len(data)
        if self._total > self._max_bytes:
            self.log.problem(f"more than {self._max_bytes} bytes on the report channel")
            self._cut()
            return
        self._buf += data
        while (end := self._buf.find(b"\n")) >= 0:
            line = bytes(self._buf[:end])
            del self._buf[: end + 1]
            self.log.feed(line)
        if len(self._buf) > MAX_RECORD_BYTES:
            self.log.problem(f"a report record over {MAX_RECORD_BYTES} bytes")
            self._cut()

    def _cut(self) -> None:
        self._buf.clear()
        self._drop()
        self._ended.set()

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
            self._conn = None

    def finish(self, grace_s: float) -> RecordLog:
        """After the container ended: wait up to ``grace_s`` for the stream's end, then stop."""
        self._finishing.set()
        self._wake()
        if not self._ended.wait(grace_s):
            self.log.problem("the report stream did not end with the test process")
        self.close()
        if self._thread.is_alive():
            self.log.problem("the report channel did not stop")
        return self.log

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def close(self) -> None:
        self._stop.set()
        self._wake()
        if self._thread is not threading.current_thread():
            deadline = time.monotonic() + 2.0
            self._thread.join(max(0.0, deadline - time.monotonic()))
        with contextlib.suppress(OSError):
            self._listener.close()
        if not self._thread.is_alive():  # (a reader still in select keeps its pipe)
            for fd in (self._wake_r, self._wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._wake_r = self._wake_w = -1
