"""Content-addressed blob store: re-hash on arrival, atomic placement, bounded with eviction."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from executord.blobstore import BlobStore, Chunk
from executord.errors import InvalidArgument, ResourceExhausted


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
