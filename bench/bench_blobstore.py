"""Blob store: 10,000 small blobs through the real store, beside the fsync floor.

* **fsync floor** — the same number of files, same size, written, fsync'd and renamed into
  ``<aa>/<sha256>`` by a bare Python loop: what any durable content-addressed store pays per blob
  on this disk. No hashing check, no lock, no bound.
* **store, in process** — ``BlobStore.ingest`` once per blob (one stream per blob, the worst case
  for per-blob overhead: reservation, eviction check, temp file, fsync, hash check, rename).
* **UploadBlobs RPC** — streams of 1,000 blobs to a real ``patchgate-executord`` over its unix
  socket (the client's path when a workspace is new: one stream of what is missing).

The three run interleaved, 1,000 blobs at a time with the order rotated each round, so that they
share the disk's and the neighbours' moods (fsync rates on a shared machine move by 2-3x within
minutes). It stops at ``--n`` blobs or once one way has spent ``--budget`` seconds, and reports
rates, so the ratios stay comparable when the budget cuts it short. Issue 12 measured the store
before the running total at 10,000 blobs in 286 s (35 blobs/s: a scan of the store per blob).

Usage: .venv/bin/python bench/bench_blobstore.py [--n 10000] [--size 256] [--budget 120]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import grpc
from _lane import start_lane
from _table import Row, render

from executord.store.blobstore import BlobStore, Chunk
from patchgate.addr import parse_address
from patchgate.logs import configure_logging
from patchgate.v1 import executor_pb2, executor_pb2_grpc

__all__ = ["blob_rows"]


def _blobs(n: int, size: int) -> list[tuple[str, bytes]]:
    out = []
    for _ in range(n):
        data = os.urandom(size)
        out.append((hashlib.sha256(data).hexdigest(), data))
    return out


class _Floor:
    """Write + fsync + rename into ``<aa>/<digest>``, nothing else."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self.tmp.mkdir(parents=True)
        self.count = 0

    def put(self, batch: list[tuple[str, bytes]]) -> int:
        for digest, data in batch:
            part = self.tmp / f".upload-{self.count}"
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            final = self.root / digest[:2]
            final.mkdir(exist_ok=True)
            os.replace(part, final / digest)
            self.count += 1
        return len(batch)


class _InProcess:
    """``BlobStore.ingest`` once per blob (one stream per blob)."""

    def __init__(self, root: Path) -> None:
        self.store = BlobStore(root, 1 << 40)

    def put(self, batch: list[tuple[str, bytes]]) -> int:
        for digest, data in batch:
            self.store.ingest([Chunk(digest, len(data), 0, data)])
        return len(batch)


class _Rpc:
    """One UploadBlobs stream per batch to a real executor daemon."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(parse_address(address).grpc_target)
        self.stub = executor_pb2_grpc.ExecutorStub(self.channel)  # type: ignore[no-untyped-call]

    def put(self, batch: list[tuple[str, bytes]]) -> int:
        chunks = (
            executor_pb2.BlobChunk(digest=d, size=len(data), offset=0, data=data)
            for d, data in batch
        )
        return int(self.stub.UploadBlobs(chunks, timeout=600).blobs_stored)


def measure(
    tmp: Path, blobs: list[tuple[str, bytes]], budget: float, batch: int = 1000
) -> dict[str, tuple[int, float]]:
    """(blobs done, seconds) per way, run in interleaved batches (order rotated each round) so
    that all three see the same disk and the same neighbours' load; stops after ``budget``
    seconds of measured time per way."""
    lane = start_lane(tmp / "lane")
    inproc: _InProcess | None = None
    rpc: _Rpc | None = None
    try:
        inproc, rpc = _InProcess(tmp / "store"), _Rpc(lane.executors[0].address)
        ways: dict[str, Callable[[list[tuple[str, bytes]]], int]] = {
            "floor": _Floor(tmp / "floor").put, "store": inproc.put, "rpc": rpc.put,
        }  # fmt: skip
        names = list(ways)
        done = dict.fromkeys(names, 0)
        spent = dict.fromkeys(names, 0.0)
        for i, start in enumerate(range(0, len(blobs), batch)):
            if max(spent.values()) > budget:
                break
            for name in names[i % 3 :] + names[: i % 3]:
                t0 = time.perf_counter()
                done[name] += ways[name](blobs[start : start + batch])
                spent[name] += time.perf_counter() - t0
    finally:
        if rpc is not None:
            rpc.channel.close()
        if inproc is not None:
            inproc.store.close()
        lane.stop()
    return {name: (done[name], spent[name]) for name in names}


def blob_rows(tmp: Path, n: int = 10_000, size: int = 256, budget: float = 120.0) -> list[Row]:
    """The floor, the in-process store and the RPC, as rows of the one benchmark table."""
    got = measure(tmp, _blobs(n, size), budget)
    (floor_n, floor_s), (store_n, store_s), (rpc_n, rpc_s) = (
        got["floor"],
        got["store"],
        got["rpc"],
    )
    floor = floor_n / floor_s
    store, rpc = store_n / store_s, rpc_n / rpc_s
    return [
        Row("blobstore", f"fsync floor: {floor_n:,} of {size} B files write+fsync+rename",
            f"{floor:,.0f} files/s", "", "1.00x floor"),
        Row("blobstore", f"BlobStore.ingest, {store_n:,} of {size} B, one stream each",
            f"{store:,.0f} blobs/s", f"{floor:,.0f} files/s fsync floor",
            f"{store / floor:.2f}x floor", "no scan per blob (was 35 blobs/s)"),
        Row("blobstore", f"UploadBlobs RPC, {rpc_n:,} of {size} B, 1,000 a stream, unix socket",
            f"{rpc:,.0f} blobs/s", f"{floor:,.0f} files/s fsync floor",
            f"{rpc / floor:.2f}x floor", "no scan per blob (was 35 blobs/s)"),
    ]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000, help="blobs per measure")
    ap.add_argument("--size", type=int, default=256, help="bytes per blob")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per measure at most")
    args = ap.parse_args()
    configure_logging("warning", json_lines=True)
    with tempfile.TemporaryDirectory(prefix="pgbench-blob-", dir="/tmp") as d:
        rows = blob_rows(Path(d), args.n, args.size, args.budget)
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
