"""Content-addressed blob store: blobs named by sha256, re-hashed on arrival, bounded in size.

Blobs are written to a temp file in the store and renamed into place only after their bytes hash
to their name, so several executor replicas may share one store directory: a reader sees a whole
blob or none.

The bound (``max_bytes``) is kept with a running total, not a scan per blob: the store is scanned
once at start-up into an index (digest → size, least recently used first), and the total is
updated on every add, eviction and removal seen. An upload **reserves** its declared size under
the lock before its first byte is written (the reservation counts in the total and is released
when the upload fails or becomes a stored blob), so concurrent uploads cannot overshoot: when a
new blob would not fit, the least recently used blobs that no in-flight execution references are
evicted; when that is not enough, or the disk itself is full, the upload is refused with
ResourceExhausted and nothing of it is left. Reservations grow as bytes arrive, so uploads in
flight together may outgrow the bound when each alone would fit: then the **oldest** upload in
flight waits (at most ``GROW_WAIT_S``) for the space the younger ones hold, and a younger one that
cannot grow is refused at once and gives its space back. Without that order, three uploads
growing side by side could all be refused.

Shared directory: the running total is per process. Each store holds a shared ``flock`` on
``<root>/.users``; when another process holds one too, the index is rebuilt by a scan before a
reservation at most once per ``rescan_interval`` (and always after ENOSPC), so blobs other
replicas stored or evicted are counted again within that interval. What stays per process: the
other replicas' in-flight reservations and references (see docs/executor.md).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import tempfile
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from executord.errors import FailedPrecondition, InvalidArgument, ResourceExhausted, disk_full
from patchgate.digest import SHA256_HEX

__all__ = [
    "RESERVE_STEP", "BlobStore", "Chunk", "IngestStats", "Scan", "StoredBlob", "is_digest",
    "scan_store",
]  # fmt: skip

TMP_PREFIX = ".upload-"

#: How far an upload's reservation runs ahead of the bytes it has written: a stalled upload that
#: declared 2 GiB holds what it wrote and at most this much more, never its whole declared size
#: (a thousand stalled uploads hold 64 MiB, not the store).
RESERVE_STEP = 64 << 10
GROW_WAIT_S = 30.0  # how long the oldest upload in flight waits for the younger ones' space


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


@dataclass(frozen=True)
class StoredBlob:
    """One blob found on disk by a scan."""

    digest: str
    size: int
    mtime: float


Scan = Callable[[Path], list[StoredBlob]]


def scan_store(root: Path) -> list[StoredBlob]:
    """Every blob under ``root/<aa>/`` (one listing per prefix directory)."""
    out = []
    for sub in os.scandir(root):
        if len(sub.name) != 2 or not sub.is_dir(follow_symlinks=False):
            continue
        for entry in os.scandir(sub.path):
            if not is_digest(entry.name):
                continue
            with contextlib.suppress(FileNotFoundError):
                st = entry.stat(follow_symlinks=False)
                out.append(StoredBlob(entry.name, st.st_size, st.st_mtime))
    return out


class _Users:
    """A shared ``flock`` on ``<root>/.users`` held for the store's lifetime; ``alone()`` tells
    whether any other process holds one (any failure to tell counts as "not alone")."""

    def __init__(self, root: Path) -> None:
        self._fd: int | None = None
        flags = os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self._fd = os.open(root / ".users", flags, 0o644)
            fcntl.flock(self._fd, fcntl.LOCK_SH)
        except OSError:  # no lock file or no flock here: behave as if always shared
            self.close()

    def alone(self) -> bool:
        if self._fd is None:
            return False
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.flock(self._fd, fcntl.LOCK_SH)
        return True

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


class _Reservation:
    """Space an upload holds in the running total until it is stored or released (once); it
    grows as bytes arrive (``grow``), never far ahead of them."""

    def __init__(self, store: BlobStore, size: int, seq: int = 0) -> None:
        self._store = store
        self.size = size
        self.seq = seq  # its place among the uploads in flight (the oldest may wait to grow)
        self._open = True

    def grow(self, more: int) -> None:
        """Hold ``more`` bytes too (evicting if needed; ResourceExhausted when they do not fit)."""
        self._store._grow(more, self)
        self.size += more

    def commit(self, digest: str) -> None:
        """The blob is in place: its bytes move from reserved to stored."""
        if self._open:
            self._open = False
            self._store._settle(self.size, digest, self.seq)

    def release(self) -> None:
        """The upload failed or was not needed: give the space back."""
        if self._open:
            self._open = False
            self._store._settle(self.size, None, self.seq)


class _Writer:
    """Streams one blob into a temp file, hashing as it goes."""

    def __init__(self, store: BlobStore, digest: str, size: int, room: _Reservation) -> None:
        self.digest = digest
        self.size = size
        self.written = 0
        self.room = room
        self._hash = hashlib.sha256()
        fd, name = tempfile.mkstemp(prefix=TMP_PREFIX, dir=store.tmp_dir)
        fcntl.flock(fd, fcntl.LOCK_EX)  # "being written": a sweep of another process skips it
        self._fh = os.fdopen(fd, "wb")
        self.tmp = Path(name)
        self._store = store
        store._track(name, True)

    def write(self, data: bytes) -> None:
        need = self.written + len(data) - self.room.size
        if need > 0:  # reserve the next step only when the bytes are here
            self.room.grow(min(max(need, RESERVE_STEP), self.size - self.room.size))
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
        self._store._track(str(self.tmp), False)
        self.room.release()


class BlobStore:
    """Blobs under ``root/<aa>/<sha256>``; temp files under ``root/tmp``."""

    def __init__(
        self,
        root: Path,
        max_bytes: int,
        *,
        scan: Scan = scan_store,
        rescan_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.tmp_dir = self.root / "tmp"
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)  # a reservation given back or settled
        self._flight: set[int] = set()  # the seqs of the reservations open
        self._seq = 0
        self._refs: Counter[str] = Counter()
        self._upload_ms: dict[str, int] = {}
        self._scan = scan
        self._rescan_interval = rescan_interval
        self._clock = clock
        self._users = _Users(self.root)
        self._index: OrderedDict[str, int] = OrderedDict()  # least recently used first
        self._stored = 0  # bytes of the indexed blobs
        self._reserved = 0  # bytes reserved by uploads in flight
        self._stale = False  # rescan before the next reservation (after ENOSPC)
        self._writing: set[str] = set()  # temp files of this process's uploads in flight
        self.swept = 0  # temp files left by a killed process, removed by the sweeps
        with self._lock:
            self._load()
        self._checked = clock()

    @property
    def used_bytes(self) -> int:
        """The running total: stored blobs plus reservations of uploads in flight."""
        with self._lock:
            return self._stored + self._reserved

    def close(self) -> None:
        """Let go of the store's ``.users`` lock (other replicas then see this one gone)."""
        self._users.close()

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
            self._forget(digest)
            return False
        with self._lock:
            known = digest in self._index
            if known:
                self._index.move_to_end(digest)
        if not known:  # stored by another process sharing the directory
            with contextlib.suppress(FileNotFoundError):
                self._note(digest, os.stat(p).st_size)
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
                    done, writer = writer, None
                    if self._commit(done):
                        stored.append(done.digest)
                        nbytes += done.size
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
        if not 0 <= chunk.size <= self.max_bytes:
            raise ResourceExhausted(
                f"blob {chunk.digest[:16]}: {chunk.size} bytes exceeds the store bound"
            )
        room = self._reserve(min(chunk.size, RESERVE_STEP))
        try:
            return _Writer(self, chunk.digest, chunk.size, room)
        except OSError as exc:
            room.release()
            raise self._os_error(exc) from exc

    def _write(self, writer: _Writer, data: bytes) -> None:
        try:
            writer.write(data)
        except OSError as exc:
            raise self._os_error(exc) from exc

    def _commit(self, writer: _Writer) -> bool:
        """Check the hash and rename into place; False when the blob was already there.
        On every path the writer's reservation is settled (stored or released)."""
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
            self._note(writer.digest, writer.size)
            return False
        try:
            final.parent.mkdir(exist_ok=True)
            os.chmod(writer.tmp, 0o444)
            os.replace(writer.tmp, final)
        except OSError as exc:
            writer.discard()
            raise self._os_error(exc) from exc
        self._track(str(writer.tmp), False)
        writer.room.commit(writer.digest)
        return True

    def _os_error(self, exc: OSError) -> Exception:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            with self._lock:
                self._stale = True  # the disk disagrees with the total: rescan before the next
            full = disk_full(exc)
            return ResourceExhausted(f"blob store: {full or 'no space left on the device'}")
        return ResourceExhausted(f"blob store: cannot write: {exc.strerror or exc}")

    # -- the running total (every method below that touches it holds self._lock) --

    def _load(self) -> None:
        """Rebuild the index from one scan of the directory (start-up, shared store, ENOSPC)."""
        blobs = sorted(self._scan(self.root), key=lambda b: b.mtime)
        self._index = OrderedDict((b.digest, b.size) for b in blobs)
        self._stored = sum(self._index.values()) + self._sweep()

    def _sweep(self) -> int:
        """Remove the temp files no live upload writes (a process killed mid-upload left them);
        return the bytes of those another process is writing, which count in the total."""
        held = 0
        try:
            names = [e for e in os.scandir(self.tmp_dir) if e.name.startswith(TMP_PREFIX)]
        except OSError:
            return 0
        for entry in names:
            if entry.path in self._writing:
                continue  # this process's own upload: its reservation counts it
            try:
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:  # another replica is writing it
                    held += os.fstat(fd).st_size
                    continue
                os.unlink(entry.path)
                self.swept += 1
            except OSError:
                with contextlib.suppress(OSError):
                    held += os.fstat(fd).st_size  # could not remove it: still counted
            finally:
                os.close(fd)
        return held

    def _reserve(self, size: int) -> _Reservation:
        """Make room for ``size`` more bytes (evicting if needed) and hold it for one upload."""
        with self._lock:
            self._refresh()
            self._make_room(size)
            self._reserved += size
            self._seq += 1
            self._flight.add(self._seq)
            return _Reservation(self, size, self._seq)

    def _track(self, tmp: str, writing: bool) -> None:
        with self._lock:
            if writing:
                self._writing.add(tmp)
            else:
                self._writing.discard(tmp)

    def _grow(self, size: int, room: _Reservation) -> None:
        """``size`` more bytes for ``room``: the oldest upload in flight waits for the space the
        younger ones hold (they are refused when they cannot grow, and give it back); any other
        is refused at once."""
        with self._lock:
            until = time.monotonic() + GROW_WAIT_S
            while True:
                try:
                    self._make_room(size)
                    break
                except ResourceExhausted:
                    others = self._reserved - room.size
                    oldest = room.seq == min(self._flight, default=room.seq)
                    left = until - time.monotonic()
                    if not oldest or others <= 0 or left <= 0:
                        raise
                    self._space.wait(timeout=min(left, 1.0))
            self._reserved += size

    def _settle(self, size: int, digest: str | None, seq: int = 0) -> None:
        with self._lock:
            self._reserved -= size
            self._flight.discard(seq)
            if digest is not None:
                self._add(digest, size)
            self._space.notify_all()

    def _note(self, digest: str, size: int) -> None:
        with self._lock:
            self._add(digest, size)

    def _add(self, digest: str, size: int) -> None:
        if digest in self._index:
            self._index.move_to_end(digest)
        else:
            self._index[digest] = size
            self._stored += size

    def _forget(self, digest: str) -> None:
        with self._lock:
            self._stored -= self._index.pop(digest, 0)

    def _refresh(self) -> None:
        """Rescan when the disk said ENOSPC, or when another process shares the directory and
        the last check is older than the rescan interval."""
        now = self._clock()
        if not self._stale:
            if now - self._checked < self._rescan_interval:
                return
            self._checked = now
            if self._users.alone():
                return
        self._stale = False
        self._checked = now
        self._load()

    def _make_room(self, size: int) -> None:
        """Evict least recently used unreferenced blobs until ``size`` more bytes fit; if even
        that cannot make room, evict nothing and refuse."""
        excess = self._stored + self._reserved + size - self.max_bytes
        if excess <= 0:
            return
        victims: list[tuple[str, int]] = []
        freed = 0
        for digest, bsize in self._index.items():
            if freed >= excess:
                break
            if digest not in self._refs:
                victims.append((digest, bsize))
                freed += bsize
        if freed < excess:
            raise ResourceExhausted(
                f"blob store full: {self._stored + self._reserved} of {self.max_bytes} bytes are "
                "referenced by running work or reserved by uploads in flight"
            )
        for digest, bsize in victims:
            try:
                (self.root / digest[:2] / digest).unlink()
            except FileNotFoundError:
                pass
            except OSError:
                continue  # still on disk: still counted
            del self._index[digest]
            self._stored -= bsize
        if self._stored + self._reserved + size > self.max_bytes:
            raise ResourceExhausted(f"blob store full: cannot evict enough of {self.max_bytes}")

    def open_blob(self, digest: str) -> Path:
        """The path of a stored blob, or FailedPrecondition when it is not (any longer) there."""
        p = self.path(digest)
        if not p.is_file():
            self._forget(digest)
            raise FailedPrecondition(f"blob {digest[:16]} is not in the store; upload it first")
        return p
