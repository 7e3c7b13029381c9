"""Stalled callers against both daemons (issue 25): with N callers hanging on at each daemon —
signer calls that never send their message, executor uploads that send one byte of a blob
declared 2 GiB - 8 MiB and stall — how long a normal signature, health check, GetInfo and
upload take beside the same calls with nobody stalled, and what the daemons hold meanwhile.

Run twice: with the default call limits (beyond them stalled callers are refused with
RESOURCE_EXHAUSTED; health and GetInfo have their own bound), and with the limits raised above N
(``PATCHGATE_MAX_CALLS``), where every stalled caller is admitted. Loopback unix sockets only;
the stalled calls ride on 50 channels per daemon; everything stops by itself.

Usage: .venv/bin/python bench/bench_stall.py [--n 1000]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
from _lane import Lane, start_lane
from _table import Row, render
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.digest import Manifest
from patchgate.errors import TransportError
from patchgate.signer_client import SignerClient
from patchgate.v1 import executor_pb2, executor_pb2_grpc, signer_pb2

__all__ = ["stall_rows"]

CHANNELS = 50
HUGE = (2 << 30) - (8 << 20)


def _manifest(i: int) -> Manifest:
    return Manifest(pin_id=f"fixpin-{i}", files={}, seed=i, clock_bound_ms=1000,
                    allowed_commands=(("python", "-m", "pytest"),))  # fmt: skip


def _hold(stop: threading.Event, first: list[Any]) -> Iterator[Any]:
    yield from first
    stop.wait()


def _usage(pid: int) -> tuple[int, int, int]:
    fields = dict(
        ln.split(":", 1) for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in ln
    )
    return (
        int(fields["Threads"]),
        len(os.listdir(f"/proc/{pid}/fd")),
        int(fields["VmRSS"].split()[0]),
    )


def _median_ms(fn: Callable[[], object], reps: int = 20) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


class _Calls:
    """The normal calls, each timed."""

    def __init__(self, lane: Lane) -> None:
        self.signer = SignerClient(lane.signer.address, timeout=120)
        self.ch = grpc.insecure_channel(lane.executors[0].address)
        self.ex = executor_pb2_grpc.ExecutorStub(self.ch)
        self.health = health_pb2_grpc.HealthStub(self.ch)
        self.i = 0

    def sign(self) -> None:
        self.i += 1
        self.signer.sign_fixture_digest(_manifest(self.i))

    def check(self) -> None:
        self.health.Check(health_pb2.HealthCheckRequest(), timeout=120)

    def info(self) -> None:
        self.ex.GetInfo(executor_pb2.GetInfoRequest(), timeout=120)

    def upload(self) -> None:
        data = os.urandom(64 << 10)
        d = hashlib.sha256(data).hexdigest()
        self.ex.UploadBlobs(iter([executor_pb2.BlobChunk(digest=d, size=len(data), data=data)]),
                            timeout=120)  # fmt: skip

    def measure(self) -> dict[str, float | str]:
        out: dict[str, float | str] = {}
        for name, fn in (("sign", self.sign), ("health", self.check), ("GetInfo", self.info),
                         ("upload", self.upload)):  # fmt: skip
            try:
                out[name] = _median_ms(fn)
            except grpc.RpcError as exc:
                out[name] = exc.code().name  # type: ignore[union-attr]
            except TransportError as exc:  # the signer client's view of a refusal
                out[name] = str(exc).split(": ")[1] if ": " in str(exc) else str(exc)
        return out

    def close(self) -> None:
        self.signer.close()
        self.ch.close()


def _stall(lane: Lane, n: int) -> tuple[threading.Event, list[grpc.Channel], list[Any]]:
    stop = threading.Event()
    chans = [grpc.insecure_channel(a) for a in (lane.signer.address, lane.executors[0].address)
             for _ in range(CHANNELS)]  # fmt: skip
    for ch in chans:
        grpc.channel_ready_future(ch).result(timeout=60)
    futures = []
    for i in range(n):
        s = chans[i % CHANNELS].stream_unary(
            "/patchgate.v1.Signer/SignFixtureDigest",
            signer_pb2.SignFixtureDigestRequest.SerializeToString,
        )
        futures.append(s.future(_hold(stop, [])))
        u = chans[CHANNELS + i % CHANNELS].stream_unary(
            "/patchgate.v1.Executor/UploadBlobs", executor_pb2.BlobChunk.SerializeToString
        )
        chunk = executor_pb2.BlobChunk(digest=f"{i:064x}", size=HUGE, offset=0, data=b"x")
        futures.append(u.future(_hold(stop, [chunk])))
    return stop, chans, futures


def _run(tmp: Path, n: int, raised: bool) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
    saved = dict(os.environ)
    if raised:
        os.environ["PATCHGATE_MAX_CALLS"] = str(n + 64)
        os.environ["PATCHGATE_MAX_CALLS_PER_PEER"] = str(n + 64)
    try:
        lane = start_lane(tmp)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    calls = _Calls(lane)
    try:
        quiet = calls.measure()
        stop, chans, futures = _stall(lane, n)
        refused_at_once = 0
        try:
            loaded = calls.measure()
            held = [_usage(lane.signer.proc.pid), _usage(lane.executors[0].proc.pid)]
            refused_at_once = sum(1 for f in futures if f.done())
        finally:
            stop.set()
            for f in futures:
                f.code()
            for ch in chans:
                ch.close()
        loaded["refused"] = refused_at_once
        return quiet, loaded, held
    finally:
        calls.close()
        lane.stop()


def _fmt(v: float | str) -> str:
    return f"{v:.2f} ms" if isinstance(v, float) else str(v)


def stall_rows(tmp: Path, n: int = 1000) -> list[Row]:
    """The table rows: each call's median beside the same call with nobody stalled."""
    rows: list[Row] = []
    for raised in (False, True):
        quiet, loaded, held = _run(tmp / ("raised" if raised else "default"), n, raised)
        limits = f"limits raised to {n + 64}" if raised else "default limits"
        for name in ("sign", "health", "GetInfo", "upload"):
            q, v = quiet[name], loaded[name]
            ratio = f"{v / q:.1f}x" if isinstance(v, float) and isinstance(q, float) else ""
            rows.append(Row("stall", f"{name}, {n} stalled per daemon, {limits}", _fmt(v),
                            f"{_fmt(q)} nobody stalled", ratio, "answered"))  # fmt: skip
        (st, sf, sr), (et, ef, er) = held
        refused = f"{loaded['refused']} of {2 * n} stalled calls refused at once"
        rows.append(Row("stall", f"held while {n} stalled ({limits}): threads / fds / RSS",
                        f"signer {st} / {sf} / {sr // 1024} MiB; executor {et} / {ef} / "
                        f"{er // 1024} MiB", refused))  # fmt: skip
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pgbench-stall-", dir="/tmp") as d:
        print(render(stall_rows(Path(d), args.n)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
