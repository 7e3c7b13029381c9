"""Gate overhead, re-upload and fleet scaling on the billing example, real daemons and Docker.

* overhead: a full ``patchgate check`` of ``prorate_refactor.patch`` (admitted; every suite
  property twice) vs the same property commands run twice each, sequentially (the executor's
  default ``--max-parallel 1``), in plain ``docker run --rm --network none`` on the executor's own
  image with the same read-only host-Python mounts, vs the same commands run twice as bare pytest.
* re-upload: the second ``check`` of the unchanged repo; bytes from the receipt,
  ``lanes.local.executors.<address>.uploaded_bytes`` (= ``ExecutionResult.uploaded_bytes``).
* fleet: properties per minute of one ``check`` with ``--executor A`` vs
  ``--executor A --executor B`` (two executor processes on this machine, blob stores warm).

Usage: .venv/bin/python bench/bench_gate.py
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _lane import Lane, start_lane
from _table import Row, render

from executord.sandbox.image import host_mounts, host_python_env
from patchgate.executor_client import ExecutorClient

__all__ = ["gate_rows"]

REPO = Path(__file__).resolve().parents[1]
BILLING = REPO / "examples" / "billing"
PATCH = BILLING / "patches" / "prorate_refactor.patch"
PATCHGATE = str(Path(sys.executable).parent / "patchgate")
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
CLOCK = "2026-09-10T12:00:00Z"


def _repo(tmp: Path) -> tuple[Path, Path]:
    """A git repo with billing as its base, and a patched copy (the bytes the suite sees)."""
    repo = tmp / "repo"
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*GIT, "-C", str(repo), *args], check=True)
    patched = tmp / "patched"
    shutil.copytree(repo, patched, ignore=shutil.ignore_patterns(".git"))
    subprocess.run(["git", "apply", str(PATCH)], cwd=patched, check=True)
    return repo, patched


def _suite() -> list[list[str]]:
    pins = json.loads((BILLING / "pins" / "properties.json").read_text(encoding="utf-8"))
    return [p["command"] for p in pins["properties"] if p["class"] != "external_probe"]


def check(lane: Lane, repo: Path, out: Path, executors: list[str]) -> tuple[float, dict[str, Any]]:
    """Wall seconds and receipt of one ``patchgate check``; raises unless admitted."""
    argv = [PATCHGATE, "check", "--repo", str(repo), "--base", "HEAD", "--patch", str(PATCH),
            "--draft-id", "bench", "--drafter", "model_lane", "--signer", lane.signer.address,
            "--operator-keyring", str(lane.keyring), "--clock", CLOCK,
            "--out", str(out)]  # fmt: skip
    for address in executors:
        argv += ["--executor", address]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=900)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"check exited {proc.returncode}: {proc.stdout}{proc.stderr}")
    return wall, json.loads((out / "receipt.json").read_text(encoding="utf-8"))


def uploaded(receipt: dict[str, Any]) -> int:
    """Blob bytes the client uploaded, summed over the local lane's executors."""
    execs = receipt["lanes"]["local"]["executors"]
    return sum(int(e["uploaded_bytes"]) for e in execs.values())


def docker_baseline(image: str, patched: Path, suite: list[list[str]]) -> float:
    """Each command twice in ``docker run --rm --network none``, sequentially."""
    env = host_python_env()
    mounts = [f"-v{m.source}:{m.target}:ro" for m in host_mounts(env)]
    base = ["docker", "run", "--rm", "--network", "none", "-u", "10001", *mounts,
            f"-v{patched}:/workspace:ro", "-w", "/workspace",
            "-e", f"PATH={env.bin_dir}:/usr/bin:/bin", "-e", "PYTHONDONTWRITEBYTECODE=1",
            "-e", "PYTHONHASHSEED=7", image]  # fmt: skip
    t0 = time.perf_counter()
    for command in suite:
        for _ in range(2):
            subprocess.run([*base, *command], check=True, capture_output=True, timeout=300)
    return time.perf_counter() - t0


def bare(patched: Path, suite: list[list[str]]) -> float:
    """Each command twice as a plain subprocess on the host (python = this interpreter)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "7"}
    env.pop("PYTHONWARNINGS", None)
    t0 = time.perf_counter()
    for command in suite:
        for _ in range(2):
            argv = [sys.executable, *command[1:]] if command[0] == "python" else command
            subprocess.run(argv, cwd=patched, check=True, capture_output=True, env=env, timeout=300)
    return time.perf_counter() - t0


def gate_rows(tmp: Path, reps: int = 3) -> list[Row]:
    """Overhead, re-upload and fleet rows (each wall a median of ``reps``)."""
    repo, patched = _repo(tmp)
    suite = _suite()
    n = len(suite)
    lane = start_lane(tmp / "lane", executors=2)
    try:
        a, b = (e.address for e in lane.executors)
        with ExecutorClient(a) as c:
            image = c.info().image
        cold, r1 = check(lane, repo, tmp / "out-0", [a])
        warm, r2 = check(lane, repo, tmp / "out-1", [a])
        ones = [warm] + [check(lane, repo, tmp / f"out-a{i}", [a])[0] for i in range(reps - 1)]
        check(lane, repo, tmp / "out-b", [b])  # warm B's blob store too
        twos = [check(lane, repo, tmp / f"out-ab{i}", [a, b])[0] for i in range(reps)]
        docker = statistics.median(docker_baseline(image, patched, suite) for _ in range(reps))
        plain = statistics.median(bare(patched, suite) for _ in range(reps))
    finally:
        lane.stop()
    one, two = statistics.median(ones), statistics.median(twos)
    return [
        Row("gate overhead", f"`patchgate check` billing, {n} properties x 2 runs (warm store)",
            f"{one:.1f} s", f"{docker:.1f} s docker run --network none", f"{one / docker:.2f}x",
            "≤ 1.3x"),
        Row("gate overhead", "same, first check (cold blob store, uploads)", f"{cold:.1f} s",
            f"{docker:.1f} s docker run", f"{cold / docker:.2f}x"),
        Row("gate overhead", f"`patchgate check` vs bare pytest ({n} x 2 subprocesses)",
            f"{one:.1f} s", f"{plain:.1f} s bare pytest", f"{one / plain:.2f}x", "reported"),
        Row("re-upload", "blob bytes uploaded: first check → second check, unchanged repo",
            f"{uploaded(r2):,} B", f"{uploaded(r1):,} B first", "", "0 B"),
        Row("fleet", "properties per minute, 1 executor process", f"{n * 60 / one:.1f}/min"),
        Row("fleet", "properties per minute, 2 executor processes (--executor A --executor B)",
            f"{n * 60 / two:.1f}/min", f"{n * 60 / one:.1f}/min with 1", f"{one / two:.2f}x",
            "reported"),
    ]  # fmt: skip


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="pgbench-gate-", dir="/tmp") as d:
        print(render(gate_rows(Path(d))))
