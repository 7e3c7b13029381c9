"""Blob store on a really full disk (a 64 KiB tmpfs): a clean refusal, no partial blob left."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from executord.blobstore import BlobStore, Chunk
from executord.errors import ResourceExhausted

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
    with pytest.raises(ResourceExhausted, match="no space"):
        store.ingest(chunks)
    assert os.listdir(store.tmp_dir) == []
    assert store.missing([digest]) == [digest]
