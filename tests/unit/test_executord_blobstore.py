"""Content-addressed blob store: re-hash on arrival, atomic placement, bounded with eviction; the
bound kept by a running total and reservations (issue 12)."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from executord.errors import InvalidArgument, ResourceExhausted
from executord.store.blobstore import BlobStore, Chunk, StoredBlob, scan_store


def _chunks(data: bytes, size: int = 4) -> list[Chunk]:
    d = hashlib.sha256(data).hexdigest()
    return [Chunk(d, len(data), i, data[i : i + size]) for i in range(0, max(len(data), 1), size)]


def _leftover_temps(store: BlobStore) -> list[str]:
    return os.listdir(store.tmp_dir)


def test_stores_a_blob_under_its_hash(tmp_path: Path) -> None:
    """Chunks that hash to the name are stored and become present."""
    store = BlobStore(tmp_path, 1 << 20)
    stats = store.ingest(_chunks(b"hello world"))
    d = hashlib.sha256(b"hello world").hexdigest()
    assert (stats.blobs_stored, stats.bytes_stored) == (1, 11)
    assert store.missing([d]) == []
    assert store.open_blob(d).read_bytes() == b"hello world"


def test_empty_blob(tmp_path: Path) -> None:
    """A zero-byte blob is one empty chunk."""
    store = BlobStore(tmp_path, 1 << 20)
    assert store.ingest(_chunks(b"")).blobs_stored == 1


def test_mismatching_bytes_are_refused_and_leave_nothing(tmp_path: Path) -> None:
    """Bytes that do not hash to the claimed digest: InvalidArgument, no blob, no temp file."""
    store = BlobStore(tmp_path, 1 << 20)
    d = hashlib.sha256(b"good").hexdigest()
    with pytest.raises(InvalidArgument, match="hash"):
        store.ingest([Chunk(d, 4, 0, b"evil")])
    assert store.missing([d]) == [d]
    assert _leftover_temps(store) == []


def test_out_of_order_chunk_is_refused(tmp_path: Path) -> None:
    """Chunks must arrive in order."""
    store = BlobStore(tmp_path, 1 << 20)
    a, b = _chunks(b"12345678")
    with pytest.raises(InvalidArgument, match="order"):
        store.ingest([b, a])
    assert _leftover_temps(store) == []


def test_truncated_stream_is_refused(tmp_path: Path) -> None:
    """A stream that ends before a blob's last byte stores nothing."""
    store = BlobStore(tmp_path, 1 << 20)
    with pytest.raises(InvalidArgument, match="ended"):
        store.ingest(_chunks(b"12345678")[:1])
    assert _leftover_temps(store) == []


def test_malformed_digest_is_refused(tmp_path: Path) -> None:
    """Only lowercase sha256 hex names a blob (no path tricks)."""
    store = BlobStore(tmp_path, 1 << 20)
    with pytest.raises(InvalidArgument):
        store.missing(["../../etc/passwd"])


def test_second_upload_of_same_blob_stores_nothing_new(tmp_path: Path) -> None:
    """Already-present blobs are not stored twice."""
    store = BlobStore(tmp_path, 1 << 20)
    store.ingest(_chunks(b"same"))
    assert store.ingest(_chunks(b"same")).blobs_stored == 0


def test_unreferenced_lru_blob_is_evicted(tmp_path: Path) -> None:
    """Over the bound, the least recently used unreferenced blob goes."""
    store = BlobStore(tmp_path, 10)
    store.ingest(_chunks(b"aaaaaa"))
    old = hashlib.sha256(b"aaaaaa").hexdigest()
    os.utime(store.path(old), (1, 1))
    store.ingest(_chunks(b"bbbbbb"))
    assert store.missing([old]) == [old]


def test_referenced_blob_is_not_evicted(tmp_path: Path) -> None:
    """A blob an execution uses stays; the new upload is refused instead."""
    store = BlobStore(tmp_path, 10)
    store.ingest(_chunks(b"aaaaaa"))
    old = hashlib.sha256(b"aaaaaa").hexdigest()
    with store.referenced([old]), pytest.raises(ResourceExhausted):
        store.ingest(_chunks(b"bbbbbb"))
    assert store.missing([old]) == []


def test_blob_larger_than_bound_is_refused(tmp_path: Path) -> None:
    """A single blob beyond the bound is ResourceExhausted."""
    store = BlobStore(tmp_path, 4)
    with pytest.raises(ResourceExhausted):
        store.ingest(_chunks(b"123456789"))


def test_two_stores_share_one_directory(tmp_path: Path) -> None:
    """Replicas on one store dir see each other's blobs."""
    a, b = BlobStore(tmp_path, 1 << 20), BlobStore(tmp_path, 1 << 20)
    a.ingest(_chunks(b"shared"))
    assert b.missing([hashlib.sha256(b"shared").hexdigest()]) == []


# -- issue 12: a running total, reservations before writes, one scan --


class CountingScan:
    """The store's scan seam: counts directory scans, delegates to the real one."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, root: Path) -> list[StoredBlob]:
        self.calls += 1
        return scan_store(root)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _disk_bytes(store: BlobStore) -> int:
    return sum(p.stat().st_size for p in store.root.rglob("*") if p.is_file())


def test_store_is_scanned_once_not_per_blob(tmp_path: Path) -> None:
    """200 uploads, lookups and an eviction run on the running total: one scan, at start-up."""
    scan = CountingScan()
    store = BlobStore(tmp_path, 150 * 8, scan=scan)
    for i in range(200):
        store.ingest(_chunks(f"blob-{i:03d}".encode()))  # 8 bytes each; the last 50 evict
    store.missing([hashlib.sha256(b"blob-199").hexdigest()])
    assert scan.calls == 1
    assert store.used_bytes == 150 * 8 == _disk_bytes(store)


def test_running_total_starts_from_what_is_on_disk(tmp_path: Path) -> None:
    """A restarted store counts the blobs already there (one scan) and evicts the oldest first."""
    first = BlobStore(tmp_path, 1 << 20)
    first.ingest(_chunks(b"old-blob"))
    old = hashlib.sha256(b"old-blob").hexdigest()
    os.utime(first.path(old), (1, 1))
    first.close()
    store = BlobStore(tmp_path, 16)
    assert store.used_bytes == 8
    store.ingest(_chunks(b"new-blob-x"))  # 10 bytes: 18 > 16, the old one goes
    assert store.missing([old]) == [old]
    assert store.used_bytes == 10 == _disk_bytes(store)


def test_blob_removed_behind_the_store_leaves_the_total(tmp_path: Path) -> None:
    """A blob deleted from disk (e.g. by a sibling replica) is dropped from the total when seen."""
    store = BlobStore(tmp_path, 1 << 20)
    store.ingest(_chunks(b"vanishing"))
    d = hashlib.sha256(b"vanishing").hexdigest()
    store.path(d).unlink()
    assert store.missing([d]) == [d]
    assert store.used_bytes == 0


def _racing_chunks(data: bytes, gate: threading.Barrier) -> Iterator[Chunk]:
    """The first chunk, then wait until every racer has sent its first chunk, then the rest."""
    chunks = _chunks(data, size=len(data) // 4)
    yield chunks[0]
    gate.wait()
    yield from chunks[1:]


def _race(store: BlobStore, blobs: list[bytes], gate: threading.Barrier) -> list[str]:
    """Every racer reaches ``gate`` once: after its first chunk, or after its refusal. So no upload
    completes (and no stored blob could be evicted for a late one) before all have been decided,
    however slowly a loaded machine starts the threads."""

    def one(data: bytes) -> str:
        try:
            store.ingest(_racing_chunks(data, gate))
        except ResourceExhausted:
            gate.wait()
            return "full"
        return "stored"

    with ThreadPoolExecutor(len(blobs)) as pool:
        return sorted(pool.map(one, blobs))


def test_racing_uploads_keep_the_bound(tmp_path: Path) -> None:
    """Eight threads upload 1 KiB blobs at once under a 3 KiB bound: space is reserved before the
    first write, so exactly three are stored and the disk never held more than 3 KiB."""
    store = BlobStore(tmp_path, 3 << 10)
    blobs = [os.urandom(1 << 10) for _ in range(8)]
    gate = threading.Barrier(len(blobs), timeout=60)
    outcomes = _race(store, blobs, gate)
    assert outcomes == ["full"] * 5 + ["stored"] * 3
    assert store.used_bytes == 3 << 10 == _disk_bytes(store)
    assert _leftover_temps(store) == []


def test_reservation_counts_before_any_byte_is_written(tmp_path: Path) -> None:
    """While an upload is in flight its declared size is in the total; a second one that would
    not fit is refused at once, and nothing of it reaches the disk."""
    store = BlobStore(tmp_path, 100)
    data = os.urandom(80)
    chunks = iter(_chunks(data, size=10))
    stream = store.ingest  # the first upload is driven by hand through a generator
    held = threading.Event()
    release = threading.Event()

    def slow() -> Iterator[Chunk]:
        yield next(chunks)
        held.set()
        release.wait(10)
        yield from chunks

    t = threading.Thread(target=stream, args=(slow(),))
    t.start()
    assert held.wait(10)
    try:
        assert store.used_bytes == 80
        with pytest.raises(ResourceExhausted, match="reserved"):
            store.ingest(_chunks(os.urandom(30)))
    finally:
        release.set()
        t.join(10)
    assert store.used_bytes == 80 == _disk_bytes(store)


@pytest.mark.parametrize(
    "failure",
    ["truncated stream", "wrong bytes", "stream error", "out of order"],
)
def test_failed_upload_releases_its_reservation(tmp_path: Path, failure: str) -> None:
    """Every way an upload can fail after its reservation gives the space back."""
    store = BlobStore(tmp_path, 64)
    data = b"x" * 60
    d = hashlib.sha256(data).hexdigest()

    def broken() -> Iterator[Chunk]:
        yield Chunk(d, 60, 0, data[:20])
        raise OSError(errno.ECONNRESET, "client went away")

    streams: dict[str, Iterable[Chunk]] = {
        "truncated stream": _chunks(data, 20)[:2],
        "wrong bytes": [Chunk(d, 60, 0, b"y" * 60)],
        "stream error": broken(),
        "out of order": [Chunk(d, 60, 0, data[:20]), Chunk(d, 60, 40, data[40:])],
    }
    with pytest.raises((InvalidArgument, OSError)):
        store.ingest(streams[failure])
    assert store.used_bytes == 0
    assert _leftover_temps(store) == []
    assert store.ingest(_chunks(data)).blobs_stored == 1  # the full bound is usable again


def test_duplicate_upload_is_counted_once(tmp_path: Path) -> None:
    """The same blob uploaded by two racing streams is stored and counted once."""
    store = BlobStore(tmp_path, 1 << 20)
    data = os.urandom(512)
    gate = threading.Barrier(2, timeout=60)
    outcomes = _race(store, [data, data], gate)
    assert outcomes == ["stored", "stored"]
    assert store.used_bytes == 512 == _disk_bytes(store)


def test_alone_a_store_never_rescans(tmp_path: Path) -> None:
    """One process on the directory: the total is trusted, however much time passes."""
    scan, clock = CountingScan(), FakeClock()
    store = BlobStore(tmp_path, 1 << 20, scan=scan, clock=clock)
    for i in range(5):
        clock.now += 10
        store.ingest(_chunks(f"a{i}".encode()))
    assert scan.calls == 1


def test_shared_directory_is_rescanned_at_most_once_per_interval(tmp_path: Path) -> None:
    """Two stores on one directory see each other (the .users lock): before a reservation each
    rescans when its last check is older than the interval, so a sibling's blobs count again."""
    scan, clock = CountingScan(), FakeClock()
    a = BlobStore(tmp_path, 1 << 20, scan=scan, clock=clock, rescan_interval=1.0)
    b = BlobStore(tmp_path, 1 << 20)
    b.ingest(_chunks(b"from-b" * 10))  # 60 bytes a does not know about yet
    a.ingest(_chunks(b"a-one"))  # within the interval: no rescan
    assert (scan.calls, a.used_bytes) == (1, 5)
    clock.now += 1.5
    a.ingest(_chunks(b"a-two"))
    assert scan.calls == 2
    assert a.used_bytes == 70  # b's blob, a-one and a-two
    b.close()
    clock.now += 1.5
    a.ingest(_chunks(b"a-three"))  # alone again: no rescan
    assert scan.calls == 2


def test_shared_store_total_is_enforced_over_a_siblings_blobs(tmp_path: Path) -> None:
    """After a rescan, a sibling's blobs are evicted like one's own to keep the bound."""
    clock = FakeClock()
    a = BlobStore(tmp_path, 100, clock=clock)
    b = BlobStore(tmp_path, 100)
    b.ingest(_chunks(b"b" * 90))
    clock.now += 2
    a.ingest(_chunks(b"a" * 50))
    sibling = hashlib.sha256(b"b" * 90).hexdigest()
    assert a.missing([sibling]) == [sibling]
    assert _disk_bytes(a) == a.used_bytes == 50


def test_unlockable_users_file_counts_as_shared(tmp_path: Path) -> None:
    """A .users that cannot be opened and locked (here a planted symlink, never followed) makes
    the store assume siblings: it rescans at the interval instead of trusting its own total."""
    tmp_path.joinpath("elsewhere").write_text("x")
    tmp_path.joinpath(".users").symlink_to(tmp_path / "elsewhere")
    scan, clock = CountingScan(), FakeClock()
    store = BlobStore(tmp_path, 1 << 20, scan=scan, clock=clock)
    clock.now += 2
    store.ingest(_chunks(b"one"))
    assert scan.calls == 2


def test_a_stalled_upload_of_a_huge_declared_size_does_not_lock_others_out(
    tmp_path: Path,
) -> None:
    """Issue 25: an upload declaring 2 GiB - 8 MiB that sends one chunk and stalls held its whole
    declared size; now it holds what it wrote and at most one step, and others still fit."""
    from executord.store.blobstore import RESERVE_STEP  # noqa: PLC0415

    store = BlobStore(tmp_path, 2 << 30)
    arrived, release = threading.Event(), threading.Event()
    huge = "ab" * 32

    def stalled() -> Iterator[Chunk]:
        yield Chunk(huge, (2 << 30) - (8 << 20), 0, b"x")
        arrived.set()
        release.wait()  # the caller hangs on; then its stream ends early
        return

    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(store.ingest, stalled())
        arrived.wait()
        assert store.used_bytes <= RESERVE_STEP
        for i in range(3):  # others upload while it hangs on
            data = os.urandom(1 << 20) + bytes([i])
            assert store.ingest(_chunks(data, 1 << 18)).blobs_stored == 1
        release.set()
        with pytest.raises(InvalidArgument, match="ended"):
            job.result()
    assert _leftover_temps(store) == []
    assert store.used_bytes == 3 * ((1 << 20) + 1)


def test_temp_files_of_a_killed_upload_are_swept_at_start(tmp_path: Path) -> None:
    """A SIGKILL mid-upload leaves ``tmp/.upload-*``: the next start removes it, and a temp file
    another live process is writing (locked) is kept and counted against the bound."""
    import fcntl  # noqa: PLC0415

    BlobStore(tmp_path, 1 << 20).close()
    orphan = tmp_path / "tmp" / ".upload-orphan"
    orphan.write_bytes(b"z" * 5000)
    live = tmp_path / "tmp" / ".upload-live"
    live.write_bytes(b"y" * 3000)
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        store = BlobStore(tmp_path, 1 << 20)
        assert not orphan.exists()
        assert live.exists()
        assert store.swept == 1
        assert store.used_bytes == 3000
    finally:
        os.close(fd)


def test_uploads_that_outgrow_the_bound_together_leave_the_oldest_one_to_finish(
    tmp_path: Path,
) -> None:
    """Three uploads of 20 units under a bound of 30, grown side by side to 10 each: the oldest
    waits for the space the younger ones hold, the younger ones are refused when they next grow
    and give it back, and the oldest then fits (before, all three could be refused at once)."""
    store = BlobStore(tmp_path, 30)
    a, b, c = (store._reserve(10) for _ in range(3))
    waiting = threading.Event()
    grown: list[object] = []
    real_wait = store._space.wait

    def wait(timeout: float | None = None) -> bool:
        waiting.set()
        return real_wait(timeout)

    store._space.wait = wait  # type: ignore[method-assign]

    def oldest() -> None:
        try:
            a.grow(10)
            grown.append("a")
        except ResourceExhausted as exc:
            grown.append(exc)

    t = threading.Thread(target=oldest)
    t.start()
    assert waiting.wait(timeout=60)  # the oldest is waiting, not refused
    with pytest.raises(ResourceExhausted):
        b.grow(10)  # a younger one never waits
    b.release()
    t.join(timeout=60)
    assert grown == ["a"]  # b's space went to the oldest
    with pytest.raises(ResourceExhausted):
        c.grow(10)  # refused at once, though the oldest is not waiting now
    c.release()
    assert store.used_bytes == 20


def test_the_oldest_upload_alone_that_does_not_fit_is_refused_at_once(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, 30)
    a = store._reserve(25)
    with pytest.raises(ResourceExhausted):
        a.grow(10)  # nobody else holds space: waiting would not help
    a.release()
    assert store.used_bytes == 0
