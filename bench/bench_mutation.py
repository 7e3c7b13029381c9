"""The mutation stage beside mutmut 3.8.1, in the same run, on the same generated module and tests.

The target is ``bench/_calcgen.py``'s repository: ``calc/gen.py`` (20 small helpers: arithmetic,
comparisons, branches, loops), one strong test per helper in ``properties/test_calc_gen.py``
(exact values over a table that holds every boundary), each pinned as a ``pure_fn`` property
covering its helper, the base allowing ``allow_unmutated``; patches rewrite 1, 5 or 20 helpers
keeping their behaviour.

* **mutmut**: ``mutmut run`` (``--max-children``, default 1: one mutant at a time, as the
  executor runs them over one unix socket) in a copy of the base tree with ``[tool.mutmut]``
  ``source_paths = ["calc/"]`` and ``pytest_add_cli_args_test_selection`` naming the test file:
  every mutant of calc/gen.py. Mutants are counted from ``mutmut results --all true``; the rate is
  mutants / wall seconds of the whole ``mutmut run`` (mutant generation, its stats and clean runs
  included, as the stage's ``elapsed_ms`` includes making its mutants). mutmut is a
  benchmark-only dependency (extra ``bench`` of pyproject.toml): installed into the project's
  .venv on first use, and the bench says so.
* **patchgate**: ``patchgate check`` through a real signer and executor (image ``host``, blob store
  warmed by one unmeasured check), ``--mutants 16`` beside ``--mutants 0`` on the same patch:
  the rate is the receipt's ``mutation.mutants_run / elapsed_ms``, the stage's added cost
  wall(16) / wall(0). One more row: one bare ``docker run --rm --network none`` of one test
  after another (same image, same read-only host mounts), 1 / its wall: what one fresh sandbox
  per mutant (the first stage's way) would allow at best. Mutation v2 packs the symbols'
  mutants and controls into a few batches, one sandbox each, each pair forked by the roles'
  zygotes.

Targets printed beside the rows: patchgate mutants/s ≥ 0.5x mutmut's; added cost ≤ 2x at 5
symbols. A benchmark reports, it does not assert: exit 0 whatever the numbers.

Usage: .venv/bin/python bench/bench_mutation.py [--symbols 1,5,20] [--reps 1] [--quick]
       [--mutmut-children 1]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _calcgen import FUNCS, MODULE, PYTEST, TESTS, make_repo, write_patch
from _lane import Lane, start_lane
from _table import Row, render

__all__ = ["MUTMUT", "MutmutRun", "ensure_mutmut", "mutation_rows", "mutmut_run"]

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PATCHGATE = str(BIN / "patchgate")
CLOCK = "2026-09-10T12:00:00Z"
MUTMUT = "3.8.1"
K = 16
KILLED = re.compile(r"^\[mutation \d+/\d+\] .*: killed by ", re.MULTILINE)
MUTMUT_CONFIG = f"""
[tool.mutmut]
source_paths = ["calc/"]
pytest_add_cli_args_test_selection = ["{TESTS}"]
also_copy = ["properties/"]
"""


def ensure_mutmut() -> None:
    """mutmut==3.8.1 in this interpreter's environment (the project's .venv), installed if not."""
    try:
        if importlib.metadata.version("mutmut") == MUTMUT:
            return
    except importlib.metadata.PackageNotFoundError:
        pass
    print(f"bench_mutation: installing mutmut=={MUTMUT} into {BIN.parent} (benchmark-only "
          "dependency, extra 'bench' of pyproject.toml)", file=sys.stderr, flush=True)  # fmt: skip
    subprocess.run([str(BIN / "python"), "-m", "pip", "install", "-q", f"mutmut=={MUTMUT}"],
                   check=True)  # fmt: skip


@dataclass(frozen=True)
class MutmutRun:
    """One ``mutmut run``: wall seconds and the mutants by status (``mutmut results --all``)."""

    wall: float
    statuses: dict[str, int]
    loop_rate: float  # the mutations/second mutmut prints for its own mutant loop

    @property
    def mutants(self) -> int:
        return sum(self.statuses.values())


def mutmut_run(repo: Path, dest: Path, children: int = 1) -> MutmutRun:
    """``mutmut run`` over every mutant of calc/gen.py in a fresh copy of ``repo``'s HEAD."""
    dest.mkdir(parents=True)
    tree = subprocess.run(["git", "-C", str(repo), "archive", "HEAD"], check=True,
                          capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tree, check=True)
    with (dest / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(MUTMUT_CONFIG)
    mutmut = str(BIN / "mutmut")
    t0 = time.perf_counter()
    proc = subprocess.run([mutmut, "run", "--max-children", str(children)], cwd=dest,
                          capture_output=True, text=True, check=False, timeout=3600)  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"mutmut run exited {proc.returncode}: {proc.stdout[-2000:]}")
    listed = subprocess.run([mutmut, "results", "--all", "true"], cwd=dest, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    statuses = Counter(ln.rsplit(": ", 1)[1] for ln in listed.splitlines() if ": " in ln)
    rate = re.search(r"([\d.]+) mutations/second", proc.stdout)
    return MutmutRun(wall, dict(statuses), float(rate.group(1)) if rate else 0.0)


@dataclass(frozen=True)
class Check:
    """One ``patchgate check``: wall seconds, its receipt, and kills counted from its progress."""

    wall: float
    receipt: dict[str, Any]
    killed: int

    @property
    def status(self) -> str:
        return "admitted" if self.receipt["admit"] else str(self.receipt.get("posture"))


def check(lane: Lane, repo: Path, patch: Path, out: Path, k: int) -> Check:
    """One scored ``patchgate check --mutants k`` (exit 0 or 1, no transport record)."""
    argv = [PATCHGATE, "check", "--repo", str(repo), "--base", "HEAD", "--patch", str(patch),
            "--draft-id", "bench", "--drafter", "model_lane", "--signer", lane.signer.address,
            "--operator-keyring", str(lane.keyring), "--clock", CLOCK, "--out", str(out),
            "--executor", lane.executors[0].address, "--mutants", str(k)]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=3600)
    wall = time.perf_counter() - t0
    receipt_path = out / "receipt.json"
    receipt = json.loads(receipt_path.read_text(encoding="utf-8")) if receipt_path.exists() else {}
    if proc.returncode not in (0, 1) or not receipt or receipt.get("transport"):
        raise RuntimeError(f"check --mutants {k} exited {proc.returncode}: "
                           f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")  # fmt: skip
    return Check(wall, receipt, len(KILLED.findall(proc.stdout + proc.stderr)))


def docker_once(image: str, tree: Path, node_id: str) -> float:
    """One bare ``docker run --rm --network none`` of ``pytest node_id``."""
    from executord.sandbox.image import host_mounts, host_python_env  # noqa: PLC0415

    env = host_python_env()
    mounts = [f"-v{m.source}:{m.target}:ro" for m in host_mounts(env)]
    argv = ["docker", "run", "--rm", "--network", "none", "-u", "10001", *mounts,
            f"-v{tree}:/workspace:ro", "-w", "/workspace",
            "-e", f"PATH={env.bin_dir}:/usr/bin:/bin", "-e", "PYTHONDONTWRITEBYTECODE=1",
            "-e", "PYTHONHASHSEED=7", image, *PYTEST, "-p", "no:patchgate", node_id]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, timeout=300)
    return time.perf_counter() - t0


def _image(lane: Lane) -> str:
    from patchgate.executor_client import ExecutorClient  # noqa: PLC0415 - after the lane is up

    with ExecutorClient(lane.executors[0].address) as client:
        return client.info().image


def _rate(c: Check) -> float:
    m = c.receipt["mutation"]
    return float(m["mutants_run"]) / max(m["elapsed_ms"] / 1000, 1e-9)


def _pairs(lane: Lane, repo: Path, tmp: Path, n: int, reps: int) -> tuple[list[Check], list[Check]]:
    patch = write_patch(repo, n, tmp / f"calc-{n}.patch")
    on: list[Check] = []
    off: list[Check] = []
    for r in range(reps):
        off.append(check(lane, repo, patch, tmp / f"out-{n}-off-{r}", 0))
        on.append(check(lane, repo, patch, tmp / f"out-{n}-on-{r}", K))
        ran = on[-1].receipt["mutation"]["mutants_run"]
        print(f"{n} changed: --mutants 0 {off[-1].wall:.1f} s, --mutants {K} {on[-1].wall:.1f} s "
              f"({ran} mutants)", file=sys.stderr)  # fmt: skip
    return on, off


def mutation_rows(
    tmp: Path, reps: int = 1, symbols: Sequence[int] = (1, 5, 20), children: int = 1
) -> list[Row]:
    """mutmut's rate, then per size the stage's rate against it and its added cost."""
    ensure_mutmut()
    repo = make_repo(tmp)
    mm = [mutmut_run(repo, tmp / f"mutmut-{r}", children) for r in range(reps)]
    mm_wall = statistics.median(m.wall for m in mm)
    mm_rate = mm[-1].mutants / mm_wall
    print(f"mutmut: {mm[-1].mutants} mutants in {mm_wall:.1f} s", file=sys.stderr)
    lane = start_lane(tmp / "lane", executors=1)
    results: dict[int, tuple[list[Check], list[Check]]] = {}
    try:
        image = _image(lane)
        check(lane, repo, write_patch(repo, 1, tmp / "warm.patch"), tmp / "warm", 0)  # blob store
        for n in symbols:
            results[n] = _pairs(lane, repo, tmp, n, reps)
        tree = tmp / "tree"
        shutil.copytree(repo, tree, ignore=shutil.ignore_patterns(".git"))
        bare = statistics.median(
            docker_once(image, tree, f"{TESTS}::test_{FUNCS[0].name}") for _ in range(reps)
        )
    finally:
        lane.stop()
    counts = ", ".join(f"{v} {k}" for k, v in sorted(mm[-1].statuses.items()))
    rows = [Row("mutation", f"mutmut {MUTMUT} run, all of {MODULE} ({len(FUNCS)} functions, "
                f"--max-children {children}): {counts}", "",
                f"{mm[-1].mutants} mutants in {mm_wall:.1f} s = {mm_rate:.2f}/s (its mutant loop "
                f"alone: {mm[-1].loop_rate:.2f}/s)", "", "baseline")]  # fmt: skip
    for n, (on, off) in results.items():
        last = on[-1]
        ran = last.receipt["mutation"]["mutants_run"]
        rate = statistics.median(_rate(c) for c in on)
        what = f"{n} changed symbol{'s' if n > 1 else ''}"
        rows.append(Row("mutation", f"mutants/s, {what}, --mutants {K}: {ran} run, "
                        f"{last.killed} killed ({last.status})", f"{rate:.2f}/s",
                        f"{mm_rate:.2f}/s mutmut", f"{rate / mm_rate:.2f}x", "≥ 0.5x"))  # fmt: skip
        w_on = statistics.median(c.wall for c in on)
        w_off = statistics.median(c.wall for c in off)
        rows.append(Row("mutation", f"added cost, {what}: check --mutants {K}",
                        f"{w_on:.1f} s", f"{w_off:.1f} s --mutants 0 ({off[-1].status})",
                        f"{w_on / w_off:.2f}x", "≤ 2x" if n == 5 else "reported"))  # fmt: skip
    rows.append(Row("mutation", "one bare `docker run` (CLI) of one test after another",
                    f"{1 / bare:.2f}/s", f"{mm_rate:.2f}/s mutmut", f"{1 / bare / mm_rate:.2f}x",
                    "reported"))  # fmt: skip
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--symbols", default="1,5,20", help="changed functions per patch")
    ap.add_argument("--reps", type=int, default=1, help="measures per cell (median)")
    ap.add_argument("--quick", action="store_true", help="1 and 5 changed functions only")
    ap.add_argument("--mutmut-children", type=int, default=1, help="mutmut run --max-children")
    args = ap.parse_args()
    symbols = (1, 5) if args.quick else tuple(sorted({int(x) for x in args.symbols.split(",")}))
    tmp = Path(tempfile.mkdtemp(prefix="pgbench-mutation-", dir="/tmp"))
    try:
        print(render(mutation_rows(tmp, args.reps, symbols, args.mutmut_children)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
