"""The mutation stage's added cost, real daemons and Docker (issue 15).

* billing: ``patchgate check`` of ``prorate_refactor.patch`` (one changed symbol) with
  ``--mutants 4`` against the same check with ``--mutants 0`` (the stage off; that check is not
  admitted, which changes nothing it runs).
* generated: the billing example plus a module of 20 small functions, each pinned with one strong
  property (exact values over a range) in the base commit; the patch rewrites N of them
  (equivalently, so the suite passes) for N = 1, 5, 20, 4 mutants each; the same ratio.
* mutants per second of the stage (``mutation.mutants_run`` / ``mutation.elapsed_ms`` of the
  receipt) against one bare ``docker run --rm --network none`` of the same pytest node ids on the
  executor's image with the same read-only host-Python mounts (``1 / wall`` runs per second).

Target: the stage adds at most 1.5x to a check of 5 changed symbols. One executor process
(``--max-parallel 1``, the default), so mutants run one at a time on this machine.

Usage: .venv/bin/python bench/bench_mutation.py [--reps N]
"""

from __future__ import annotations

import argparse
import json
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

__all__ = ["mutation_rows"]

REPO = Path(__file__).resolve().parents[1]
BILLING = REPO / "examples" / "billing"
PATCH = BILLING / "patches" / "prorate_refactor.patch"
PATCHGATE = str(Path(sys.executable).parent / "patchgate")
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
CLOCK = "2026-09-10T12:00:00Z"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
FUNCS = 20


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True).stdout


def _fn(i: int, tweak: bool) -> str:
    body = f"x * 2 - {i}" if not tweak else f"(x + x) - {i}"
    return f"def f{i}(x: int) -> int:\n    if x < {i}:\n        return x + {i}\n    return {body}\n"


def _module(tweaked: int) -> str:
    return '"""Generated functions."""\n\n\n' + "\n\n".join(
        _fn(i, i < tweaked) for i in range(FUNCS)
    )


def _tests() -> str:
    parts = ['"""Generated properties."""\n\nfrom billing import gen\n']
    for i in range(FUNCS):
        parts.append(
            f"\n\ndef test_f{i}():\n"
            f"    for x in range(-5, 40):\n"
            f"        want = x + {i} if x < {i} else x * 2 - {i}\n"
            f"        assert gen.f{i}(x) == want\n"
        )
    return "".join(parts)


def billing_repo(tmp: Path) -> Path:
    """The billing example committed as the base."""
    repo = tmp / "billing"
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        _git(repo, *args)
    return repo


def generated_repo(tmp: Path) -> Path:
    """billing + billing/gen.py (20 functions) + one pinned strong property per function."""
    repo = billing_repo(tmp / "gen")
    (repo / "billing" / "gen.py").write_text(_module(0), encoding="utf-8")
    (repo / "properties" / "test_gen.py").write_text(_tests(), encoding="utf-8")
    pins = repo / "pins" / "properties.json"
    doc = json.loads(pins.read_text(encoding="utf-8"))
    doc["properties"] += [
        {"id": f"gen.f{i}", "claim": f"f{i} computes its table", "class": "pure_fn",
         "covers": [f"billing.gen.f{i}"],
         "command": [*PYTEST, f"properties/test_gen.py::test_f{i}"]}
        for i in range(FUNCS)
    ]  # fmt: skip
    pins.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "generated functions and their properties")
    return repo


def generated_patch(repo: Path, n: int, dest: Path) -> Path:
    """A patch rewriting f0..f(n-1) equivalently (the repo's tree is left as HEAD)."""
    gen = repo / "billing" / "gen.py"
    gen.write_text(_module(n), encoding="utf-8")
    dest.write_bytes(_git(repo, "diff"))
    _git(repo, "checkout", "--", "billing/gen.py")
    return dest


def check(lane: Lane, repo: Path, patch: Path, out: Path, k: int) -> tuple[float, dict[str, Any]]:
    """Wall seconds and receipt of one ``patchgate check --mutants k``."""
    argv = [PATCHGATE, "check", "--repo", str(repo), "--base", "HEAD", "--patch", str(patch),
            "--draft-id", "bench", "--drafter", "model_lane", "--signer", lane.signer.address,
            "--operator-keyring", str(lane.keyring), "--clock", CLOCK, "--out", str(out),
            "--executor", lane.executors[0].address, "--mutants", str(k)]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1800)
    wall = time.perf_counter() - t0
    receipt = json.loads((out / "receipt.json").read_text(encoding="utf-8"))
    expected = 0 if k else 1  # --mutants 0 is not admitted without allow_unmutated
    if proc.returncode != expected:
        raise RuntimeError(f"check --mutants {k} exited {proc.returncode}: {proc.stdout}")
    return wall, receipt


def docker_once(image: str, tree: Path, node_ids: list[str]) -> float:
    """One bare ``docker run --rm --network none`` of ``pytest node_ids``."""
    env = host_python_env()
    mounts = [f"-v{m.source}:{m.target}:ro" for m in host_mounts(env)]
    mounts.append(f"-v{REPO}:{REPO}:ro")  # the venv's editable install names this checkout
    argv = ["docker", "run", "--rm", "--network", "none", "-u", "10001", *mounts,
            f"-v{tree}:/workspace:ro", "-w", "/workspace",
            "-e", f"PATH={env.bin_dir}:/usr/bin:/bin", "-e", "PYTHONDONTWRITEBYTECODE=1",
            "-e", "PYTHONHASHSEED=7", image, *PYTEST, *node_ids]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, timeout=300)
    return time.perf_counter() - t0


def _pair(
    lane: Lane, repo: Path, patch: Path, out: Path, reps: int
) -> tuple[float, float, dict[str, Any]]:
    """Median walls of the check with 4 mutants and with 0, and the last receipt with 4."""
    check(lane, repo, patch, out / "warm", 0)  # warm the blob store and the durations
    on: list[float] = []
    off: list[float] = []
    receipt: dict[str, Any] = {}
    for i in range(reps):
        w0, _ = check(lane, repo, patch, out / f"off-{i}", 0)
        w4, receipt = check(lane, repo, patch, out / f"on-{i}", 4)
        off.append(w0)
        on.append(w4)
    return statistics.median(on), statistics.median(off), receipt


def _rate(receipt: dict[str, Any]) -> float:
    m = receipt["mutation"]
    return m["mutants_run"] / max(m["elapsed_ms"] / 1000, 1e-9)


def mutation_rows(tmp: Path, reps: int = 3, sizes: tuple[int, ...] = (1, 5, 20)) -> list[Row]:
    """The billing row and one row per generated size, then mutants per second."""
    lane = start_lane(tmp / "lane", executors=1)
    rows: list[Row] = []
    try:
        with ExecutorClient(lane.executors[0].address) as c:
            image = c.info().image
        billing = billing_repo(tmp)
        on, off, r = _pair(lane, billing, PATCH, tmp / "out-billing", reps)
        n = r["mutation"]["mutants_run"]
        rows.append(Row("mutation", f"billing prorate_refactor, 1 symbol, {n} mutants",
                        f"{on:.1f} s", f"{off:.1f} s --mutants 0", f"{on / off:.2f}x"))  # fmt: skip
        gen = generated_repo(tmp)
        tree = tmp / "gen-tree"
        shutil.copytree(gen, tree, ignore=shutil.ignore_patterns(".git"))
        rates: list[tuple[int, float]] = []
        for size in sizes:
            patch = generated_patch(gen, size, tmp / f"gen-{size}.patch")
            on, off, r = _pair(lane, gen, patch, tmp / f"out-gen-{size}", reps)
            if r["coverage"] != 1.0:
                raise RuntimeError(
                    f"generated {size}: not every symbol credited: {r['uncredited']}"
                )
            n = r["mutation"]["mutants_run"]
            rows.append(Row("mutation", f"generated, {size} changed symbols, {n} mutants",
                            f"{on:.1f} s", f"{off:.1f} s --mutants 0", f"{on / off:.2f}x",
                            "≤ 1.5x" if size == 5 else "reported"))  # fmt: skip
            rates.append((size, _rate(r)))
        bare = statistics.median(
            docker_once(image, tree, ["properties/test_gen.py::test_f0"]) for _ in range(reps)
        )
        for size, rate in rates:
            rows.append(Row("mutation", f"mutants per second, generated {size} symbols",
                            f"{rate:.2f}/s", f"{1 / bare:.2f}/s one bare docker run",
                            f"{rate * bare:.2f}x", "reported"))  # fmt: skip
    finally:
        lane.stop()
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="1,5,20")
    args = ap.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="pgbench-mutation-", dir="/tmp") as d:
        print(render(mutation_rows(Path(d), reps=args.reps, sizes=sizes)))
