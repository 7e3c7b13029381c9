"""Digest throughput: ``patchgate digest`` vs ``find fixtures -type f | sort | xargs sha256sum |
sha256sum`` on (a) 64 files totalling 1 GiB and (b) 10,000 files of 4 KiB, warm page cache, median
of 3 runs each, plus the peak RSS of the ``patchgate digest`` process (os.wait4) on a 64 MiB tree
beside the 1 GiB tree (streaming: the two should be about equal).

Usage: .venv/bin/python bench/bench_digest.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import Row, render

from patchgate.digest import hash_files

__all__ = ["digest_rows"]

PATCHGATE = str(Path(sys.executable).parent / "patchgate")
SHELL = "find fixtures -type f | sort | xargs sha256sum | sha256sum"


def make_tree(root: Path, count: int, size: int) -> Path:
    """``count`` random files of ``size`` bytes under root/fixtures, and a pin listing them."""
    fx = root / "fixtures"
    fx.mkdir(parents=True)
    for i in range(count):
        with open(fx / f"f{i:05d}.bin", "wb") as f:
            left = size
            while left:
                n = min(left, 1 << 22)
                f.write(os.urandom(n))
                left -= n
    files = {f"fixtures/{p.name}": p for p in fx.iterdir()}
    pin = {
        "pin_id": "bench", "algorithm": "sha256",
        "files": {rel: e.sha256 for rel, e in sorted(hash_files(files).items())},
        "seed": 7, "clock_bound_ms": 30000, "allowed_commands": [["python", "-m", "pytest"]],
    }  # fmt: skip
    (root / "pins").mkdir()
    (root / "pins" / "fixtures.json").write_text(json.dumps(pin), encoding="utf-8")
    return root


def _timed(argv: list[str], cwd: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one process run to completion."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} exited {proc.returncode}: {err}")
    return wall, usage.ru_maxrss


FLOOR = """
import hashlib, os, sys
out = []
for name in sorted(os.listdir("fixtures")):
    fd = os.open("fixtures/" + name, os.O_RDONLY)
    h = hashlib.sha256()
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    os.close(fd)
    out.append(h.hexdigest() + "  fixtures/" + name)
print(hashlib.sha256("\\n".join(out).encode()).hexdigest())
"""
"""The least any Python command can do for the same answer: start, hash each file, print. No pin,
no path checks, no ledger; one process. What patchgate adds on top of this is its own work."""


def _patchgate(root: Path) -> list[str]:
    return [PATCHGATE, "digest", "--pin", str(root / "pins" / "fixtures.json"), "--root", str(root),
            "--out", str(root / "out.json")]  # fmt: skip


def measure(root: Path, reps: int = 3) -> tuple[float, float, int, float]:
    """Median wall of patchgate, of the shell pipeline and of the bare Python hash loop (after one
    warm-up each), and patchgate's peak RSS."""
    _timed(_patchgate(root), root)
    _timed(["bash", "-c", SHELL], root)
    ours, shell, floor, rss = [], [], [], 0
    for _ in range(reps):
        wall, kib = _timed(_patchgate(root), root)
        ours.append(wall)
        rss = max(rss, kib)
        shell.append(_timed(["bash", "-c", "set -o pipefail; " + SHELL], root)[0])
        floor.append(_timed([sys.executable, "-c", FLOOR], root)[0])
    return statistics.median(ours), statistics.median(shell), rss, statistics.median(floor)


def digest_rows(tmp: Path) -> list[Row]:
    """Rows for (a), (b) and the RSS flatness check."""
    rows = []
    cases = [
        ("(a) 64 files, 1 GiB", 64, 16 << 20, "≥ 4x"),
        ("(b) 10,000 files, 4 KiB", 10_000, 4096, "≥ 2x"),
    ]
    rss_by = {}
    for name, count, size, target in cases:
        root = make_tree(tmp / name[1], count, size)
        ours, shell, rss, floor = measure(root)
        total = count * size / (1 << 20)
        rows.append(Row("digest", f"{name}: wall", f"{ours:.2f} s ({total / ours:,.0f} MiB/s)",
                        f"{shell:.2f} s ({total / shell:,.0f} MiB/s)", f"{shell / ours:.2f}x",
                        target))  # fmt: skip
        rows.append(Row("digest", f"{name}: bare Python hash loop, 1 process (floor)",
                        f"{floor:.2f} s", f"{shell:.2f} s shell",
                        f"{shell / floor:.2f}x"))  # fmt: skip
        rss_by[name] = rss
        subprocess.run(["rm", "-rf", str(root)], check=True)
    small = make_tree(tmp / "c", 64, 1 << 20)
    _, _, rss_small, _ = measure(small, reps=1)
    subprocess.run(["rm", "-rf", str(small)], check=True)
    big = rss_by["(a) 64 files, 1 GiB"]
    rows.append(Row("digest", "peak RSS of `patchgate digest`, 1 GiB tree vs 64 MiB tree",
                    f"{big / 1024:.0f} MiB", f"{rss_small / 1024:.0f} MiB",
                    f"{big / rss_small:.2f}x (flat ≈ 1)", "flat"))  # fmt: skip
    rows.append(Row("digest", "peak RSS of `patchgate digest`, 10,000 x 4 KiB",
                    f"{rss_by['(b) 10,000 files, 4 KiB'] / 1024:.0f} MiB"))  # fmt: skip
    return rows


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="pgbench-digest-", dir="/tmp") as d:
        print(render(digest_rows(Path(d))))
