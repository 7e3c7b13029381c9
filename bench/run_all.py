"""Run every benchmark once and print ONE table (ratios measured side by side in this run).

Digest throughput (bench_digest), signer latency/throughput (functions of bench_signer, called as
they are), gate overhead + re-upload + fleet scaling (bench_gate), the mutation stage beside
mutmut 3.8.1 (bench_mutation, changed symbols from ``--mutation-symbols``; it installs mutmut, a
benchmark-only dependency, into the .venv on first use), 10,000 blobs through the blob
store beside the fsync floor (bench_blobstore, at most ``--blob-budget`` seconds per measure),
how a check scales with the suite against one docker pytest twice (bench_scale, N from
``--scale-ns``), normal calls while 1,000 stalled callers hang on at each daemon (bench_stall,
``--stall-n``), the judge apart beside the single-process run (bench_judge, N from
``--judge-ns``), then the machine it ran on.
If bench/bench_sandbox.py exists, its own table is printed after ours (run as it is, with
``--n 4 --repeat 1`` to stay inside the time budget; ``--no-sandbox`` skips it).
Temp data lives under /tmp/pgbench-* and is removed at the end. About 8 minutes on 2 cores (more
with bench_mutation at 20 changed symbols: one sandbox per mutant today), plus
about 10 for bench_scale.

Usage: .venv/bin/python bench/run_all.py [--signer-requests N] [--reps N]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_signer
from _table import Row, render
from bench_blobstore import blob_rows
from bench_digest import digest_rows
from bench_gate import gate_rows
from bench_judge import judge_rows
from bench_mutation import mutation_rows
from bench_scale import scale_rows
from bench_stall import stall_rows

from patchgate.keys import generate_key_file
from patchgate.logs import configure_logging

HERE = Path(__file__).resolve().parent


def signer_rows(tmp: Path, requests: int, threads: int = 16) -> list[Row]:
    """bench_signer's measurements: RPC p50/p99 and sig/s at 16 clients beside in-process sign,
    and sig/s from lean asyncio clients beside the same load on a no-work canned-reply server."""
    generate_key_file(tmp / "op.key", "operator")
    floor = bench_signer.floor_us(3000)
    inproc = bench_signer.in_process_us(tmp, requests)
    proc, address = bench_signer.start(tmp, tmp / "op.key")
    try:
        lat = bench_signer.latency_us(address, requests)
        tput = bench_signer.throughput(address, requests * 2, threads, 2)
        lean = bench_signer.lean_throughput(address, requests * 2, threads)
        ceiling = bench_signer.canned_ceiling(tmp, address, requests * 2)
    finally:
        proc.terminate()
        proc.wait(30)
    p50, p99 = lat[len(lat) // 2], lat[int(len(lat) * 0.99) - 1]
    return [
        Row("signer", "sign RPC p50, unix socket, 1 client", f"{p50 / 1000:.2f} ms",
            f"{floor:.0f} µs Ed25519 in process", f"{p50 / floor:.0f}x floor", "≤ 2 ms"),
        Row("signer", "sign RPC p99, unix socket, 1 client", f"{p99 / 1000:.2f} ms",
            f"{inproc:.0f} µs validate+sign+audit in process", f"{p99 / inproc:.1f}x in-proc"),
        Row("signer", f"signatures/s, {threads} concurrent clients (2 client procs)",
            f"{tput:,.0f} sig/s", f"{1e6 / floor:,.0f} sig/s Ed25519 floor (1 core)",
            f"{tput * floor / 1e6:.2f}x floor", "≥ 2,000 sig/s"),
        Row("signer", f"signatures/s, {threads} lean asyncio clients (2 procs)",
            f"{lean:,.0f} sig/s",
            f"{ceiling:,.0f} rpc/s same load, canned reply", f"{lean / ceiling:.2f}x ceiling",
            "≥ 2,000 sig/s"),
    ]  # fmt: skip


def machine() -> list[str]:
    """nproc, memory, kernel, docker version, Python."""
    mem = next(
        ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal")
    )
    docker = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                            capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.machine())  # fmt: skip
    return [
        f"nproc: {os.cpu_count()} ({cpu})",
        f"memory: {int(mem.split()[1]) // 1024:,} MiB",
        f"kernel: {platform.release()}",
        f"docker: {docker or 'not answering'}",
        f"python: {platform.python_version()}",
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--signer-requests", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-sandbox", action="store_true", help="skip bench_sandbox.py")
    ap.add_argument("--blob-budget", type=float, default=90.0, help="seconds per blob measure")
    ap.add_argument("--scale-ns", default="1,8,32,128", help="suite sizes of bench_scale")
    ap.add_argument("--stall-n", type=int, default=1000, help="stalled callers of bench_stall")
    ap.add_argument("--judge-ns", default="1,32,128", help="suite sizes of bench_judge")
    ap.add_argument("--mutation-symbols", default="1,5,20", help="patch sizes of bench_mutation")
    args = ap.parse_args()
    configure_logging("warning", json_lines=True)
    t0 = time.monotonic()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="pgbench-", dir="/tmp") as d:
        tmp = Path(d)
        for name in (
            "digest",
            "signer",
            "gate",
            "mutation",
            "blobstore",
            "scale",
            "stall",
            "judge",
        ):
            (tmp / name).mkdir()
        print("digest ...", file=sys.stderr, flush=True)
        rows += digest_rows(tmp / "digest")
        print("signer ...", file=sys.stderr, flush=True)
        rows += signer_rows(tmp / "signer", args.signer_requests)
        print("gate, re-upload, fleet ...", file=sys.stderr, flush=True)
        rows += gate_rows(tmp / "gate", reps=args.reps)
        print("mutation stage ...", file=sys.stderr, flush=True)
        sizes = sorted({int(n) for n in args.mutation_symbols.split(",")})
        rows += mutation_rows(tmp / "mutation", symbols=sizes)
        print("blob store ...", file=sys.stderr, flush=True)
        rows += blob_rows(tmp / "blobstore", budget=args.blob_budget)
        print("scale (batched vs per-property sandboxes) ...", file=sys.stderr, flush=True)
        rows += scale_rows(tmp / "scale", sorted({int(n) for n in args.scale_ns.split(",")}))
        print("stalled callers ...", file=sys.stderr, flush=True)
        rows += stall_rows(tmp / "stall", args.stall_n)
        print("judge on vs --judge off ...", file=sys.stderr, flush=True)
        rows += judge_rows(tmp / "judge", sorted({int(n) for n in args.judge_ns.split(",")}))
    print(render(rows))
    print()
    for line in machine():
        print(f"- {line}")
    print(f"- total bench wall time: {(time.monotonic() - t0) / 60:.1f} min")
    sandbox = HERE / "bench_sandbox.py"
    if sandbox.exists() and not args.no_sandbox:
        print("\nbench_sandbox.py (its own table):", flush=True)
        subprocess.run([sys.executable, str(sandbox), "--n", "4", "--repeat", "1"], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
