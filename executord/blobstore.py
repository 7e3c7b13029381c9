"""Content-addressed blob store: blobs named by sha256, re-hashed on arrival, bounded in size.

Blobs are written to a temp file in the store and renamed into place only after their bytes hash
to their name, so several executor replicas may share one store directory: a reader sees a whole
blob or none. The store is bounded: when a new blob would exceed ``max_bytes``, the least recently
used blobs that no in-flight execution references are evicted; when that is not enough, or the disk
itself is full, the upload is refused with ResourceExhausted and the temp file is removed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from executord.errors import FailedPrecondition, InvalidArgument, ResourceExhausted
from patchgate.digest import SHA256_HEX

__all__ = ["BlobStore", "Chunk", "IngestStats", "is_digest"]


def is_digest(text: str) -> bool:
    """True for a lowercase sha256 hex string."""
    return bool(SHA256_HEX.fullmatch(text))


@dataclass(frozen=True)
class Chunk:
    """One piece of an uploaded blob (the wire BlobChunk without grpc)."""

    digest: str
    size: int
    offset: int
    data: bytes


@dataclass(frozen=True)
class IngestStats:
    """What one upload stream stored."""

    blobs_stored: int
    bytes_stored: int
    digests: tuple[str, ...]
    elapsed_ms: int


class _Writer:
    """Streams one blob into a temp file, hashing as it goes."""

    def __init__(self, store: BlobStore, digest: str, size: int) -> None:
        self.digest = digest
        self.size = size
        self.written = 0
        self._hash = hashlib.sha256()
        fd, name = tempfile.mkstemp(prefix=".upload-", dir=store.tmp_dir)
        self._fh = os.fdopen(fd, "wb")
        self.tmp = Path(name)

    def write(self, data: bytes) -> None:
        self._hash.update(data)
        self._fh.write(data)
        self.written += len(data)

    def finish(self) -> str:
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        return self._hash.hexdigest()

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self._fh.close()
        with contextlib.suppress(OSError):
            self.tmp.unlink()


class BlobStore:
    """Blobs under ``root/<aa>/<sha256>``; temp files under ``root/tmp``."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.tmp_dir = self.root / "tmp"
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._refs: Counter[str] = Counter()
        self._upload_ms: dict[str, int] = {}

    def path(self, digest: str) -> Path:
        """Where blob ``digest`` lives (it may not exist)."""
        if not is_digest(digest):
            raise InvalidArgument(f"not a sha256 hex digest: {digest[:80]!r}")
        return self.root / digest[:2] / digest

    def has(self, digest: str) -> bool:
        """True when the blob is stored; touching it marks it recently used."""
        p = self.path(digest)
        try:
            os.utime(p)
        except FileNotFoundError:
            return False
        return True

    def missing(self, digests: Iterable[str]) -> list[str]:
        """The digests not stored, in first-seen order, without duplicates."""
        return [d for d in dict.fromkeys(digests) if not self.has(d)]

    def upload_ms(self, digests: Iterable[str]) -> int:
        """Milliseconds the upload streams that delivered ``digests`` took (each stream once)."""
        with self._lock:
            return sum({self._upload_ms[d] for d in set(digests) if d in self._upload_ms})

    @contextlib.contextmanager
    def referenced(self, digests: Iterable[str]) -> Iterator[None]:
        """Protect ``digests`` from eviction while an execution uses them."""
        ds = list(set(digests))
        with self._lock:
            self._refs.update(ds)
        try:
            yield
        finally:
            with self._lock:
                self._refs.subtract(ds)
                self._refs += Counter()  # drop zero counts

    def ingest(self, chunks: Iterable[Chunk]) -> IngestStats:
        """Store the blobs of one upload stream; a blob's chunks arrive in order, offset 0 first."""
        start = time.monotonic()
        writer: _Writer | None = None
        stored: list[str] = []
        nbytes = 0
        try:
            for chunk in chunks:
                if writer is None:
                    writer = self._open(chunk)
                elif chunk.digest != writer.digest:
                    raise InvalidArgument(
                        f"blob {writer.digest[:16]}: stream moved on before its end"
                    )
                if chunk.offset != writer.written:
                    raise InvalidArgument(f"blob {chunk.digest[:16]}: chunk out of order")
                if writer.written + len(chunk.data) > writer.size:
                    raise InvalidArgument(f"blob {chunk.digest[:16]}: more bytes than its size")
                self._write(writer, chunk.data)
                if writer.written == writer.size:
                    if self._commit(writer):
                        stored.append(writer.digest)
                        nbytes += writer.size
                    writer = None
            if writer is not None:
                raise InvalidArgument(
                    f"blob {writer.digest[:16]}: stream ended before its last byte"
                )
        finally:
            if writer is not None:
                writer.discard()
        elapsed = int((time.monotonic() - start) * 1000)
        with self._lock:
            for d in stored:
                self._upload_ms[d] = elapsed
            while len(self._upload_ms) > 100_000:
                self._upload_ms.pop(next(iter(self._upload_ms)))
        return IngestStats(len(stored), nbytes, tuple(stored), elapsed)

    def _open(self, chunk: Chunk) -> _Writer:
        self.path(chunk.digest)  # validates the name
        if chunk.size > self.max_bytes:
            raise ResourceExhausted(
                f"blob {chunk.digest[:16]}: {chunk.size} bytes exceeds the store bound"
            )
        self._make_room(chunk.size)
        try:
            writer = _Writer(self, chunk.digest, chunk.size)
        except OSError as exc:
            raise self._os_error(exc) from exc
        return writer

    def _write(self, writer: _Writer, data: bytes) -> None:
        try:
            writer.write(data)
        except OSError as exc:
            raise self._os_error(exc) from exc

    def _commit(self, writer: _Writer) -> bool:
        """Check the hash and rename into place; False when the blob was already there."""
        try:
            actual = writer.finish()
        except OSError as exc:
            writer.discard()
            raise self._os_error(exc) from exc
        if actual != writer.digest:
            writer.discard()
            raise InvalidArgument(
                f"blob {writer.digest[:16]}: bytes hash to {actual[:16]}; refused"
            )
        final = self.path(writer.digest)
        if final.exists():
            writer.discard()
            return False
        try:
            final.parent.mkdir(exist_ok=True)
            os.chmod(writer.tmp, 0o444)
            os.replace(writer.tmp, final)
        except OSError as exc:
            writer.discard()
            raise self._os_error(exc) from exc
        return True

    @staticmethod
    def _os_error(exc: OSError) -> Exception:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return ResourceExhausted("blob store: no space left on the device")
        return ResourceExhausted(f"blob store: cannot write: {exc.strerror or exc}")

    def usage(self) -> list[tuple[float, int, Path]]:
        """(mtime, size, path) of every stored blob."""
        out = []
        for sub in self.root.iterdir():
            if len(sub.name) != 2 or not sub.is_dir():
                continue
            for entry in os.scandir(sub):
                with contextlib.suppress(FileNotFoundError):
                    st = entry.stat()
                    out.append((st.st_mtime, st.st_size, Path(entry.path)))
        return out

    def _make_room(self, size: int) -> None:
        """Evict least recently used unreferenced blobs until ``size`` more bytes fit."""
        blobs = self.usage()
        total = sum(s for _, s, _ in blobs)
        if total + size <= self.max_bytes:
            return
        with self._lock:
            protected = set(self._refs)
        for _mtime, bsize, path in sorted(blobs):
            if total + size <= self.max_bytes:
                break
            if path.name in protected:
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                total -= bsize
        if total + size > self.max_bytes:
            raise ResourceExhausted(
                f"blob store full: {total} of {self.max_bytes} bytes are referenced by running work"
            )

    def open_blob(self, digest: str) -> Path:
        """The path of a stored blob, or FailedPrecondition when it is not (any longer) there."""
        p = self.path(digest)
        if not p.is_file():
            raise FailedPrecondition(f"blob {digest[:16]} is not in the store; upload it first")
        return p
