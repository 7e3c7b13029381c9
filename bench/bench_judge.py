"""What the judge apart costs (issue 20): ``patchgate check --judge on`` beside ``--judge off``.

The same check twice, in the same run, on the same lane (one signer, one executor, image
``host``, warm blob store: one unmeasured check first), the mutation stage off (``--mutants 0``
with ``allow_unmutated``, and ``allow_judge_off`` so that both modes are admitted): the billing
example with ``prorate_refactor.patch``, and the generated suite of ``bench_scale.py`` (N
``pure_fn`` properties covering ``billing.prorate``) at N = 1, 32, 128, ``--isolation run``.
The ratio is judge on / judge off; target ≤ 1.3x at N = 32. No timed assertion anywhere.

Usage: .venv/bin/python bench/bench_judge.py [--ns 1,32,128] [--reps 1]
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _lane import Lane, start_lane
from _table import Row, render
from bench_scale import BILLING, CLOCK, GIT, PATCH, PATCHGATE, make_repo

MODES = ("off", "on")
TARGETS = {32: "≤ 1.3x"}


def _allow_both(repo: Path) -> None:
    """The bench measures both modes admitted: the base allows judge off and no mutants."""
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    extra = "".join(
        f"{key} = true\n" for key in ("allow_judge_off", "allow_unmutated") if key not in text
    )
    pyproject.write_text(text.replace("[tool.patchgate]\n", f"[tool.patchgate]\n{extra}", 1))
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qam", "bench: both modes"], check=True)


def _billing(tmp: Path) -> Path:
    repo = tmp / "billing"
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*GIT, "-C", str(repo), *args], check=True)
    return repo


def check(lane: Lane, repo: Path, out: Path, judge: str) -> tuple[float, dict[str, Any]]:
    """Wall seconds and receipt of one scored ``patchgate check`` (exit 0 or 1, no transport)."""
    argv = [PATCHGATE, "check", "--repo", str(repo), "--base", "HEAD", "--patch", str(PATCH),
            "--draft-id", "bench", "--drafter", "model_lane", "--signer", lane.signer.address,
            "--executor", lane.executors[0].address, "--operator-keyring", str(lane.keyring),
            "--clock", CLOCK, "--out", str(out), "--mutants", "0", "--judge", judge]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1800)
    wall = time.perf_counter() - t0
    receipt = json.loads((out / "receipt.json").read_text(encoding="utf-8"))
    if proc.returncode not in (0, 1) or receipt["transport"] or receipt["judge"] != judge:
        raise RuntimeError(f"check exited {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr}")
    return wall, receipt


def judge_rows(tmp: Path, ns: Sequence[int], reps: int = 1) -> list[Row]:
    """judge on vs off for the billing example and each N of the generated suite."""
    lane = start_lane(tmp / "lane", executors=1)
    cases: list[tuple[str, Path]] = [("billing example", _billing(tmp))]
    cases += [(f"N={n}", make_repo(tmp, n)) for n in ns]
    times: dict[tuple[str, str], float] = {}
    statuses: dict[tuple[str, str], str] = {}
    try:
        for label, repo in cases:
            _allow_both(repo)
            check(lane, repo, tmp / f"warm-{repo.name}", "off")  # warm the blob store
            for mode in MODES:
                walls = []
                for r in range(reps):
                    wall, receipt = check(lane, repo, tmp / f"o-{repo.name}-{mode}-{r}", mode)
                    walls.append(wall)
                    statuses[label, mode] = "admitted" if receipt["admit"] else receipt["posture"]
                times[label, mode] = statistics.median(walls)
                print(f"{label} judge {mode}: {times[label, mode]:.2f} s", file=sys.stderr)
    finally:
        lane.stop()
    rows = []
    for label, _repo in cases:
        on, off = times[label, "on"], times[label, "off"]
        n = int(label[2:]) if label.startswith("N=") else 0
        rows.append(Row("judge", f"{label}, --judge on ({statuses[label, 'on']})", f"{on:.2f} s",
                        f"{off:.2f} s --judge off ({statuses[label, 'off']})", f"{on / off:.2f}x",
                        TARGETS.get(n, "reported")))  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default="1,32,128", help="suite sizes, comma-separated")
    ap.add_argument("--reps", type=int, default=1, help="checks per cell (median)")
    args = ap.parse_args()
    ns = sorted({int(x) for x in args.ns.split(",")})
    tmp = Path(tempfile.mkdtemp(prefix="pgbench-judge-"))
    try:
        print(render(judge_rows(tmp, ns, args.reps)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
