"""Blob store limits: a really full disk (a 64 KiB tmpfs) is a clean refusal with no partial blob
left; concurrent uploads through the real executor keep ``--store-max``."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from executord.errors import ResourceExhausted
from executord.store.blobstore import BlobStore, Chunk
from patchgate.v1 import executor_pb2, executor_pb2_grpc
from tests.conftest import KeyPair
from tests.integration.fixtures_executor import start_executor

pytestmark = pytest.mark.integration


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A 64 KiB tmpfs mounted for this test only (needs root, as CI runs)."""
    if os.geteuid() != 0:
        pytest.fail("this test mounts a tmpfs and must run as root (CI does)")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def test_disk_full_is_resource_exhausted_and_leaves_nothing(tiny_disk: Path) -> None:
    """ENOSPC while writing a blob: ResourceExhausted; no temp file, no blob."""
    store = BlobStore(tiny_disk / "store", 1 << 30)  # the bound is not what stops it
    data = os.urandom(256 << 10)
    digest = hashlib.sha256(data).hexdigest()
    chunks = [Chunk(digest, len(data), i, data[i : i + 4096]) for i in range(0, len(data), 4096)]
    try:
        with pytest.raises(ResourceExhausted, match="no space"):
            store.ingest(chunks)
        assert os.listdir(store.tmp_dir) == []
        assert store.missing([digest]) == [digest]
        assert store.used_bytes == 0  # the failed upload's reservation was released
    finally:
        store.close()  # its .users lock file is on the tmpfs


def _usage(root: Path) -> int:
    """Bytes of every file under the store (blobs and temp uploads), as the disk sees them."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(os.path.join(dirpath, name)).st_size
    return total


def test_concurrent_uploads_keep_store_max(
    docker_engine: None, operator_key: KeyPair, tmp_path: Path
) -> None:
    """Issue 12: three concurrent 20 MiB uploads under --store-max 30m. Space is reserved before a
    write, so the store never holds more than 30 MiB (temp files included) and the uploads that do
    not fit are RESOURCE_EXHAUSTED, not written."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--store-max", "30m")
    size, piece = 20 << 20, 1 << 20
    blobs = [os.urandom(size) for _ in range(3)]
    peak = [0]
    done = threading.Event()
    # Each stream either sent its first chunk (and was asked for its second) or ended (a refused
    # stream may never be asked again): the accepted one goes on only once all three are in, an
    # event, not a sleep (a slow thread start on a loaded machine let one finish first).
    accounted = threading.Condition()
    seen = [0]

    def account() -> None:
        with accounted:
            seen[0] += 1
            accounted.notify_all()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _usage(daemon.store_dir))
            time.sleep(0.01)

    def chunks(data: bytes) -> Iterator[executor_pb2.BlobChunk]:
        digest = hashlib.sha256(data).hexdigest()
        yield executor_pb2.BlobChunk(digest=digest, size=len(data), offset=0, data=data[:piece])
        account()
        with accounted:
            assert accounted.wait_for(lambda: seen[0] >= len(blobs), timeout=120)
        for off in range(piece, len(data), piece):
            yield executor_pb2.BlobChunk(
                digest=digest, size=len(data), offset=off, data=data[off : off + piece]
            )

    def upload(data: bytes) -> str:
        sent = [False]

        def tracked() -> Iterator[executor_pb2.BlobChunk]:
            for n, chunk in enumerate(chunks(data)):
                yield chunk
                if n == 0:
                    sent[0] = True

        with grpc.insecure_channel(daemon.address) as ch:
            try:
                executor_pb2_grpc.ExecutorStub(ch).UploadBlobs(tracked(), timeout=120)
            except grpc.RpcError as exc:
                return exc.code().name
            finally:
                if not sent[0]:  # ended before it was asked for its second chunk
                    account()
        return "OK"

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with ThreadPoolExecutor(3) as pool:
            outcomes = sorted(pool.map(upload, blobs))
    finally:
        done.set()
        watcher.join(5)
        daemon.stop()
    assert outcomes == ["OK", "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"], outcomes
    assert peak[0] <= 30 << 20, f"store reached {peak[0]} bytes"
    assert _usage(daemon.store_dir) == size
    assert os.listdir(daemon.store_dir / "tmp") == []
