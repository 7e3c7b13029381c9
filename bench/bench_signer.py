"""Signer benchmark: sign RPC latency and throughput over a unix socket vs the bare Ed25519 floor.

Starts a real ``patchgate-signerd serve`` (audit log fsync'd per request, group-committed) in a
temp dir, then measures:
  * p50 / p99 of one SignFixtureDigest round trip, one client, sequential;
  * throughput with 16 concurrent client threads (one channel each);
  * the same work in-process (validate + digest + statement + sign + audit, no gRPC);
  * the floor: one in-process Ed25519 signature over a fixture statement's PAE.
Prints a table with ratios to the floor. Not a test: nothing is asserted.

Usage: .venv/bin/python bench/bench_signer.py [--requests N] [--threads T]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.addr import parse_address
from patchgate.digest import FileEntry, Manifest
from patchgate.envelope import fixture_statement, pae
from patchgate.keys import Signer, generate_key_file
from patchgate.logs import configure_logging
from patchgate.signer_client import SignerClient
from signerd.audit import AuditLog
from signerd.canonical import RawFile, RawManifest
from signerd.core import Caller, SignerCore
from signerd.keystore import KeyStore


def manifest(i: int) -> Manifest:
    files = {f"fixtures/f{j}.json": FileEntry(f"{i + j:064x}", 100 + j) for j in range(8)}
    return Manifest(
        pin_id=f"fixpin-{i}",
        files=files,
        seed=7,
        clock_bound_ms=30000,
        allowed_commands=(("python", "-m", "pytest", "-q", "-p", "no:cacheprovider"),),
    )


def start(tmp: Path, key: Path) -> tuple[subprocess.Popen[str], str]:
    sock = tmp / "sock"
    sock.mkdir(mode=0o700)
    argv = [sys.executable, "-m", "signerd", "serve", "--key", str(key)]
    argv += ["--listen", f"unix:{sock}/s.sock", "--audit-log", str(tmp / "audit.jsonl")]
    env = {**os.environ, "PATCHGATE_LOG_LEVEL": "warning"}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    q: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: q.put(proc.stdout.readline() if proc.stdout else ""), daemon=True
    ).start()
    line = q.get(timeout=30)
    if not line.startswith("listening "):
        raise SystemExit(f"signer did not start: {line!r}")
    return proc, line.split(" ", 1)[1].strip()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def floor_us(n: int) -> float:
    signer = Signer.generate("operator")
    message = pae("application/vnd.in-toto+json", fixture_statement(manifest(0), signer, "t"))
    samples = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        signer.sign(message)
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1000


def in_process_us(tmp: Path, n: int) -> float:
    core = SignerCore(KeyStore([Signer.generate("operator")]), AuditLog(tmp / "inproc.jsonl"))
    caller = Caller("bench", "client")
    raws = []
    for i in range(n):
        m = manifest(i)
        raws.append(
            RawManifest(
                pin_id=m.pin_id, algorithm="sha256",
                files=[RawFile(p, e.sha256, e.size) for p, e in m.files.items()],
                seed=m.seed, clock_bound_ms=m.clock_bound_ms,
                allowed_commands=[list(c) for c in m.allowed_commands],
            )
        )  # fmt: skip
    samples = []
    for r in raws:
        t0 = time.perf_counter_ns()
        core.sign_fixture(caller, r)
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1000


def latency_us(address: str, n: int) -> list[float]:
    samples = []
    with SignerClient(address) as c:
        for i in range(50):  # warm-up: channel connect, first handshake
            c.sign_fixture_digest(manifest(i))
        for i in range(n):
            m = manifest(i)
            t0 = time.perf_counter_ns()
            c.sign_fixture_digest(m)
            samples.append((time.perf_counter_ns() - t0) / 1000)
    return sorted(samples)


def _client_proc(address: str, n: int, threads: int, health: bool, start: Any, out: Any) -> None:
    clients = [SignerClient(address, timeout=60) for _ in range(threads)]
    channels = [grpc.insecure_channel(parse_address(address).grpc_target) for _ in range(threads)]
    checks = [health_pb2_grpc.HealthStub(ch) for ch in channels]  # type: ignore[no-untyped-call]
    for c in clients:
        c.get_keyring()  # connect before timing
    for h in checks:
        h.Check(health_pb2.HealthCheckRequest())

    def one(i: int) -> object:
        if health:
            return checks[i % threads].Check(health_pb2.HealthCheckRequest())
        return clients[i % threads].sign_fixture_digest(manifest(i))

    start.wait()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(n)))
    out.put(time.perf_counter())
    for c in clients:
        c.close()
    for ch in channels:
        ch.close()


def _lean_client_proc(address: str, n: int, clients: int, start: Any, out: Any) -> None:
    """``clients`` channels in one asyncio loop, each sending its share of prepared requests one
    after another: a load generator that spends as little of the shared CPUs as Python allows
    (no envelope parsing, requests serialized before the clock starts)."""
    import asyncio  # noqa: PLC0415 - only the load generator's processes need it

    from patchgate.signer_client import manifest_to_proto  # noqa: PLC0415
    from patchgate.v1 import signer_pb2, signer_pb2_grpc  # noqa: PLC0415

    target = parse_address(address).grpc_target
    requests = [
        signer_pb2.SignFixtureDigestRequest(manifest=manifest_to_proto(manifest(i)))
        for i in range(n)
    ]

    async def run() -> None:
        channels = [grpc.aio.insecure_channel(target) for _ in range(clients)]
        stubs = [signer_pb2_grpc.SignerStub(ch) for ch in channels]  # type: ignore[no-untyped-call]
        for stub in stubs:
            await stub.SignFixtureDigest(requests[0], timeout=60)  # connect before timing
        await asyncio.get_running_loop().run_in_executor(None, start.wait)

        async def client(k: int) -> None:
            for i in range(k, n, clients):
                await stubs[k].SignFixtureDigest(requests[i], timeout=60)

        await asyncio.gather(*(client(k) for k in range(clients)))
        out.put(time.perf_counter())
        for ch in channels:
            await ch.close(None)

    asyncio.run(run())


def lean_throughput(address: str, n: int, clients: int = 16, procs: int = 2) -> float:
    """Sign RPCs/s from ``clients`` concurrent channels over ``procs`` asyncio processes."""
    return _rate(_lean_client_proc, (address, n // procs, clients // procs), n // procs, procs)


def _rate(target: Any, args: tuple[Any, ...], per: int, procs: int) -> float:
    """Start ``procs`` spawned processes running ``target(*args, start, out)`` (each sends ``per``
    requests once ``start`` is set, then puts its end time on ``out``); release them together
    once all have connected; requests per second until the last one is done."""
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=target, args=(*args, start, out)) for _ in range(procs)]
    for w in workers:
        w.start()
    time.sleep(3)  # let every process build its requests and connect
    t0 = time.perf_counter()
    start.set()
    end = max(out.get(timeout=300) for _ in workers)
    for w in workers:
        w.join(30)
    return float(per * procs / (end - t0))


def _canned_server(path: str, reply: bytes, ready: Any, stop: Any) -> None:
    """A Signer server on the same grpcio sync server settings that answers every
    SignFixtureDigest with one fixed signed reply: the RPC cost with no signer work at all."""
    from concurrent import futures  # noqa: PLC0415

    from patchgate.v1 import signer_pb2, signer_pb2_grpc  # noqa: PLC0415

    canned = signer_pb2.SignFixtureDigestResponse.FromString(reply)

    class Canned(signer_pb2_grpc.SignerServicer):
        def SignFixtureDigest(self, request: Any, context: Any) -> Any:
            return canned

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    signer_pb2_grpc.add_SignerServicer_to_server(Canned(), server)  # type: ignore[no-untyped-call]
    server.add_insecure_port(f"unix:{path}")
    server.start()
    ready.set()
    stop.wait()
    server.stop(0).wait()


def canned_ceiling(tmp: Path, address: str, n: int) -> float:
    """lean_throughput against a server that returns a real signer reply without doing any work."""
    from patchgate.signer_client import manifest_to_proto  # noqa: PLC0415
    from patchgate.v1 import signer_pb2, signer_pb2_grpc  # noqa: PLC0415

    with grpc.insecure_channel(parse_address(address).grpc_target) as ch:
        stub = signer_pb2_grpc.SignerStub(ch)  # type: ignore[no-untyped-call]
        req = signer_pb2.SignFixtureDigestRequest(manifest=manifest_to_proto(manifest(0)))
        reply = stub.SignFixtureDigest(req, timeout=30).SerializeToString()
    ctx = multiprocessing.get_context("spawn")
    ready, stop = ctx.Event(), ctx.Event()
    path = str(tmp / "canned.sock")
    server = ctx.Process(target=_canned_server, args=(path, reply, ready, stop))
    server.start()
    try:
        if not ready.wait(30):
            raise SystemExit("canned server did not start")
        return lean_throughput(f"unix:{path}", n)
    finally:
        stop.set()
        server.join(30)


def throughput(address: str, n: int, threads: int, procs: int, health: bool = False) -> float:
    """``threads`` concurrent clients over ``procs`` processes (a Python client is GIL-bound)."""
    per = n // procs
    return _rate(_client_proc, (address, per, threads // procs, health), per, procs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=16)
    args = ap.parse_args()
    configure_logging("warning", json_lines=True)
    with tempfile.TemporaryDirectory(prefix="pgbench-") as d:
        tmp = Path(d)
        generate_key_file(tmp / "op.key", "operator")
        floor = floor_us(5000)
        inproc = in_process_us(tmp, args.requests)
        proc, address = start(tmp, tmp / "op.key")
        try:
            lat = latency_us(address, args.requests)
            tput1 = throughput(address, args.requests * 2, args.threads, 1)
            cpu0 = cpu_seconds(proc.pid)
            tput2 = throughput(address, args.requests * 2, args.threads, 2)
            server_cpu_us = (cpu_seconds(proc.pid) - cpu0) / (args.requests * 2) * 1e6
            cpu0 = cpu_seconds(proc.pid)
            bare = throughput(address, args.requests * 2, args.threads, 2, health=True)
            bare_cpu_us = (cpu_seconds(proc.pid) - cpu0) / (args.requests * 2) * 1e6
            cpu0 = cpu_seconds(proc.pid)
            lean = lean_throughput(address, args.requests * 2, args.threads)
            lean_cpu_us = (cpu_seconds(proc.pid) - cpu0) / (args.requests * 2) * 1e6
            ceiling = canned_ceiling(tmp, address, args.requests * 2)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    p50 = lat[len(lat) // 2]
    p99 = lat[int(len(lat) * 0.99) - 1]
    cpu = platform.processor() or platform.machine()
    system = f"{platform.system()} {platform.release()}"
    print(f"machine: {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, {system}")
    print(f"{'measure':<52}{'value':>14}{'x floor':>10}")
    rows = [
        ("Ed25519 sign, in process (floor)", f"{floor:.1f} us", 1.0),
        ("validate+digest+sign+audit sync, in process", f"{inproc:.1f} us", inproc / floor),
        ("sign RPC p50, unix socket, 1 client", f"{p50 / 1000:.2f} ms", p50 / floor),
        ("sign RPC p99, unix socket, 1 client", f"{p99 / 1000:.2f} ms", p99 / floor),
        (f"throughput, {args.threads} clients in 1 process", f"{tput1:,.0f} sig/s", None),
        (f"throughput, {args.threads} clients in 2 processes", f"{tput2:,.0f} sig/s", None),
        (
            "signer CPU per signature under load (both cores)",
            f"{server_cpu_us:.0f} us",
            server_cpu_us / floor,
        ),
        (
            f"baseline: health Check RPC, {args.threads} clients, 2 procs",
            f"{bare:,.0f} rpc/s",
            None,
        ),
        ("baseline: signer CPU per health Check", f"{bare_cpu_us:.0f} us", bare_cpu_us / floor),
        (f"throughput, {args.threads} lean asyncio clients, 2 procs", f"{lean:,.0f} sig/s", None),
        ("signer CPU per signature, lean clients", f"{lean_cpu_us:.0f} us", lean_cpu_us / floor),
        ("ceiling: same lean load, canned reply, no work", f"{ceiling:,.0f} rpc/s", None),
        ("floor throughput (1 core, 1e6/floor)", f"{1e6 / floor:,.0f} sig/s", None),
    ]
    for name, value, ratio in rows:
        print(f"{name:<52}{value:>14}{'' if ratio is None else f'{ratio:.1f}':>10}")
    print("targets: p50 <= 2 ms, >= 2,000 signatures/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
