"""Tamper-evident audit log: one JSON line per request, hash-chained, fsync'd before the reply.

Each line is the compact, key-sorted JSON of a record carrying ``seq`` (its 1-based line number),
``prev`` (sha256 hex of the previous line's bytes; 64 zeros on line 1) and ``hash`` (sha256 hex of
the record's canonical JSON without ``hash``). Any one-byte edit of line *k* is therefore caught
at line *k* itself (invalid JSON, non-canonical bytes or a wrong ``hash``); a rewritten line with
a recomputed ``hash`` is caught at line *k+1* (``prev``). Cutting lines off the end is not visible
from the file alone: the daemon logs every line's hash, so compare the head with an external copy.

Writes use group commit: concurrent requests append under a lock, and one ``fdatasync`` makes a
batch durable (for an append-only file it flushes the data and the new size, which is what a
reader needs; it skips only the mtime update). ``append`` returns only once its own line is on
disk; after any write or sync failure the log is closed for good and every later ``append``
raises (fail closed) until a restart. A record whose line would exceed ``MAX_LINE_BYTES`` is
refused before anything is chained or written (the signer's core caps every free-text field so
that this never happens; it is the backstop against a line that grows with a request).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from signerd.errors import AuditChainError, AuditError, ConfigError

__all__ = ["GENESIS", "MAX_LINE_BYTES", "AuditLog", "ChainHead", "canonical_line", "verify_chain"]

GENESIS = "0" * 64
MAX_LINE_BYTES = 1024  # newline included; a longer record is refused, nothing written


def canonical_line(record: dict[str, Any]) -> bytes:
    """The exact bytes of one line (without the newline)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _seal(record: dict[str, Any]) -> bytes:
    body = {k: v for k, v in record.items() if k != "hash"}
    record["hash"] = hashlib.sha256(canonical_line(body)).hexdigest()
    return canonical_line(record)


@dataclass(frozen=True)
class ChainHead:
    """The last line of a verified log: how many lines, and the sha256 of the last line."""

    lines: int
    last_line_sha256: str


def verify_chain(path: Path) -> ChainHead:
    """Check every line of the log; raise ``AuditChainError`` naming the first broken line."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return ChainHead(0, GENESIS)
    except OSError as exc:
        raise AuditError(f"{path}: cannot read: {exc.strerror}") from None
    if not data:
        return ChainHead(0, GENESIS)
    lines = data.split(b"\n")
    complete = data.endswith(b"\n")
    if complete:
        lines.pop()
    prev = GENESIS
    for n, line in enumerate(lines, start=1):
        if n == len(lines) and not complete:
            raise AuditChainError(n, "last line is incomplete (no newline)")
        _check_line(n, line, prev)
        prev = hashlib.sha256(line).hexdigest()
    return ChainHead(len(lines), prev)


def _check_line(n: int, line: bytes, prev: str) -> None:
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise AuditChainError(n, "not a JSON line") from None
    if not isinstance(record, dict):
        raise AuditChainError(n, "not a JSON object")
    if canonical_line(record) != line:
        raise AuditChainError(n, "bytes are not the canonical form of the record")
    body = {k: v for k, v in record.items() if k != "hash"}
    if record.get("hash") != hashlib.sha256(canonical_line(body)).hexdigest():
        raise AuditChainError(n, "hash does not match the record")
    if record.get("seq") != n:
        raise AuditChainError(n, f"seq is {record.get('seq')!r}, expected {n}")
    if record.get("prev") != prev:
        raise AuditChainError(n, "prev does not match the sha256 of the previous line")


class AuditLog:
    """An append-only, hash-chained, fsync'd audit file (one process writes it)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            head = verify_chain(self.path)
        except AuditError as exc:
            raise ConfigError(
                f"audit log {self.path}: {exc}; run: patchgate-signerd audit-verify"
            ) from None
        try:
            created = not self.path.exists()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
            os.fsync(self._fd)
            if created:  # make the new directory entry durable too
                dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
        except OSError as exc:
            raise ConfigError(f"audit log {self.path}: cannot write: {exc.strerror}") from None
        self._lock = threading.Lock()  # seq, prev and the pending batch
        self._flush_lock = threading.Lock()  # one writer+fsync at a time
        self._seq = head.lines
        self._prev = head.last_line_sha256
        self._pending: list[bytes] = []
        self._durable = head.lines
        self._broken: str | None = None

    @property
    def head(self) -> ChainHead:
        """Lines written so far and the sha256 of the last one."""
        with self._lock:
            return ChainHead(self._seq, self._prev)

    def append(self, fields: dict[str, Any]) -> str:
        """Chain, write and fsync one record; return its line hash. Raises ``AuditError``."""
        with self._lock:
            if self._broken is not None:
                raise AuditError(f"audit log closed after an earlier failure: {self._broken}")
            seq = self._seq + 1
            record = {**fields, "seq": seq, "prev": self._prev}
            record.setdefault("time", datetime.now(UTC).isoformat(timespec="milliseconds"))
            line = _seal(record)
            if len(line) + 1 > MAX_LINE_BYTES:  # the caller caps its fields; this is the backstop
                raise AuditError(f"audit line of {len(line) + 1} bytes exceeds {MAX_LINE_BYTES}")
            self._seq = seq
            self._prev = hashlib.sha256(line).hexdigest()
            line_hash = self._prev
            self._pending.append(line + b"\n")
        self._flush_until(seq)
        return line_hash

    def _flush_until(self, seq: int) -> None:
        with self._flush_lock:
            if self._broken is not None:
                raise AuditError(f"audit log write failed: {self._broken}")
            if self._durable >= seq:
                return
            with self._lock:
                batch, self._pending = b"".join(self._pending), []
                last = self._seq
            try:
                view = memoryview(batch)
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
                os.fdatasync(self._fd)
            except Exception as exc:  # any failure leaves the file state unknown: close for good
                with self._lock:
                    why = exc.strerror if isinstance(exc, OSError) else None
                    self._broken = why or type(exc).__name__
                raise AuditError(f"audit log write failed: {self._broken}") from None
            self._durable = last

    def close(self) -> None:
        """Close the file (later appends raise)."""
        with self._flush_lock, self._lock:
            if self._broken is None:
                self._broken = "closed"
                os.close(self._fd)
