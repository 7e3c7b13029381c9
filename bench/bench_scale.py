"""How a check scales with the suite: ``patchgate check`` against one docker pytest, twice.

A generated repository (examples/billing with N ``pure_fn`` properties covering
``billing.prorate``, each one test of ``properties/test_gen.py``; the patch
``prorate_refactor.patch`` changes that one symbol), image ``host``, warm blob stores (one
unmeasured check first), the mutation stage off (``--mutants 0`` with ``allow_unmutated``: its
sandboxes are a separate cost, benchmarked on its own). For N = 1, 8, 32, 128 and each of
``--isolation run`` and ``--isolation property``, with one executor and with two (``--executor A
--executor B``; two executors on this one engine), the wall time of ``patchgate check`` beside the
baseline a CI user has today: the same N tests in one ``python -m pytest properties/test_gen.py``
inside ``docker run --rm --network none`` (the same image and read-only host mounts), twice.
Ratios and the cost per added property - (t(N_max) - t(N_prev)) / (N_max - N_prev) - are measured
in the same run, side by side; no timed assertion anywhere.

Usage: .venv/bin/python bench/bench_scale.py [--ns 1,8,32,128] [--reps 1] [--property-max 32]
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

from executord.sandbox.image import host_mounts, host_python_env

ROOT = Path(__file__).resolve().parent.parent
BILLING = ROOT / "examples" / "billing"
PATCH = BILLING / "patches" / "prorate_refactor.patch"
PATCHGATE = str(Path(sys.executable).parent / "patchgate")
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
CLOCK = "2026-09-10T12:00:00Z"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
ISOLATIONS = ("run", "property")
MUTATION_FLAG = (
    "--mutants"
    in subprocess.run(
        [PATCHGATE, "check", "--help"], capture_output=True, text=True, check=False
    ).stdout
)  # with a mutation stage, it is turned off (--mutants 0): this bench measures the runs

TEST = """

def test_prorate_{i}():
    amount = Decimal({cents}) / 100
    share = prorate(amount, {used}, {period})
    assert Decimal(0) <= share <= amount
"""


def make_repo(tmp: Path, n: int) -> Path:
    """examples/billing with N generated properties as its only pinned properties, committed."""
    repo = tmp / f"repo-{n}"
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    body = "from decimal import Decimal\n\nfrom billing import prorate\n" + "".join(
        TEST.format(i=i, cents=1000 + 37 * i, used=i % 31, period=30) for i in range(n)
    )
    (repo / "properties" / "test_gen.py").write_text(body, encoding="utf-8")
    props = [
        {"id": f"gen.prorate.{i}", "claim": f"prorate stays within the amount, case {i}",
         "class": "pure_fn", "covers": ["billing.prorate"],
         "command": [*PYTEST, f"properties/test_gen.py::test_prorate_{i}"]}
        for i in range(n)
    ]  # fmt: skip
    (repo / "pins" / "properties.json").write_text(
        json.dumps({"properties": props}, indent=2) + "\n", encoding="utf-8"
    )
    if MUTATION_FLAG:  # the run stage is measured, not the mutation stage: the config allows it
        pyproject = repo / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8")
        pyproject.write_text(
            text.replace("[tool.patchgate]\n", "[tool.patchgate]\nallow_unmutated = true\n", 1),
            encoding="utf-8",
        )
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*GIT, "-C", str(repo), *args], check=True)
    return repo


def check(
    lane: Lane, repo: Path, out: Path, executors: Sequence[str], isolation: str
) -> tuple[float, dict[str, Any]]:
    """Wall seconds and receipt of one admitted ``patchgate check``."""
    argv = [PATCHGATE, "check", "--repo", str(repo), "--base", "HEAD", "--patch", str(PATCH),
            "--draft-id", "bench", "--drafter", "model_lane", "--signer", lane.signer.address,
            "--operator-keyring", str(lane.keyring), "--clock", CLOCK, "--out", str(out),
            "--isolation", isolation, *(["--mutants", "0"] if MUTATION_FLAG else [])]  # fmt: skip
    for address in executors:
        argv += ["--executor", address]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1800)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"check exited {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr}")
    return wall, json.loads((out / "receipt.json").read_text(encoding="utf-8"))


def docker_pytest_twice(image: str, patched: Path) -> float:
    """The baseline: ``python -m pytest properties/test_gen.py`` in ``docker run``, twice."""
    env = host_python_env()
    mounts = [f"-v{m.source}:{m.target}:ro" for m in host_mounts(env)]
    base = ["docker", "run", "--rm", "--network", "none", "-u", "10001", *mounts,
            f"-v{patched}:/workspace:ro", "-w", "/workspace",
            "-e", f"PATH={env.bin_dir}:/usr/bin:/bin", "-e", "PYTHONDONTWRITEBYTECODE=1",
            "-e", "PYTHONHASHSEED=7", image, *PYTEST,
            "-p", "no:patchgate",  # the marker plugin's entry point: patchgate is not mounted
            "properties/test_gen.py"]  # fmt: skip
    t0 = time.perf_counter()
    for _ in range(2):
        subprocess.run(base, check=True, capture_output=True, timeout=600)
    return time.perf_counter() - t0


def _patched(repo: Path, tmp: Path) -> Path:
    patched = tmp / f"{repo.name}-patched"
    shutil.copytree(repo, patched, ignore=shutil.ignore_patterns(".git"))
    subprocess.run(["git", "apply", str(PATCH)], cwd=patched, check=True)
    return patched


def _image(lane: Lane) -> str:
    from patchgate.executor_client import ExecutorClient  # noqa: PLC0415 - after the lane is up

    with ExecutorClient(lane.executors[0].address) as client:
        return client.info().image


def scale_rows(tmp: Path, ns: Sequence[int], reps: int = 1, property_max: int = 32) -> list[Row]:
    """The scale table: for each N, both isolations (``property`` up to ``property_max``: at
    ~0.4 s or more per sandbox it is the slow column), one and two executors, the baseline."""
    lane = start_lane(tmp / "lane", executors=2)
    times: dict[tuple[str, int, int], float] = {}
    base: dict[int, float] = {}
    try:
        a, b = (d.address for d in lane.executors)
        image = _image(lane)
        for n in ns:
            repo = make_repo(tmp, n)
            patched = _patched(repo, tmp)
            check(lane, repo, tmp / f"warm-{n}", [a, b], "run")  # warm both blob stores
            for iso in ISOLATIONS if n <= property_max else ISOLATIONS[:1]:
                for k, execs in ((1, [a]), (2, [a, b])):
                    walls = []
                    for r in range(reps):
                        wall, receipt = check(lane, repo, tmp / f"o-{n}-{iso}-{k}-{r}", execs, iso)
                        assert receipt["admit"] is True, receipt.get("uncredited")
                        walls.append(wall)
                    times[iso, k, n] = statistics.median(walls)
                    print(f"N={n} {iso} x{k}: {times[iso, k, n]:.2f} s", file=sys.stderr)
            base[n] = statistics.median(docker_pytest_twice(image, patched) for _ in range(reps))
            print(f"N={n} docker pytest x2: {base[n]:.2f} s", file=sys.stderr)
    finally:
        lane.stop()
    return _rows(ns, times, base)


def _rows(
    ns: Sequence[int], times: dict[tuple[str, int, int], float], base: dict[int, float]
) -> list[Row]:
    targets = {32: "≤ 2x", 128: "≤ 3x"}
    rows = []
    for iso in ISOLATIONS:
        for k in (1, 2):
            label = f"--isolation {iso}, {k} executor{'s' if k > 1 else ''}"
            mine = [n for n in ns if (iso, k, n) in times]
            for n in mine:
                t = times[iso, k, n]
                target = targets.get(n, "reported") if iso == "run" else "reported"
                rows.append(Row("scale", f"N={n}, {label}", f"{t:.2f} s",
                                f"{base[n]:.2f} s docker pytest x2", f"{t / base[n]:.2f}x",
                                target))  # fmt: skip
            if len(mine) >= 2:
                lo, hi = mine[-2], mine[-1]
                per = (times[iso, k, hi] - times[iso, k, lo]) / (hi - lo) * 1000
                base_per = (base[hi] - base[lo]) / (hi - lo) * 1000
                rows.append(Row("scale", f"cost per added property (N {lo}→{hi}), {label}",
                                f"{per:.1f} ms", f"{base_per:.1f} ms docker pytest x2", "",
                                "< 30 ms" if iso == "run" else "reported"))  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default="1,8,32,128", help="suite sizes, comma-separated")
    ap.add_argument("--reps", type=int, default=1, help="checks per cell (median)")
    ap.add_argument("--property-max", type=int, default=32, help="largest N for isolation property")
    args = ap.parse_args()
    ns = sorted({int(x) for x in args.ns.split(",")})
    tmp = Path(tempfile.mkdtemp(prefix="pgbench-scale-"))
    try:
        print(render(scale_rows(tmp, ns, args.reps, args.property_max)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
