"""Per-run overhead of the executor sandbox (issue 4 benchmark).

N trivial properties, each run twice, through

  1. patchgate: ``patchgate-executord`` (image ``host``) via ``ExecutorClient.execute``;
  2. plain ``docker run --rm --network none`` of the same commands on the same image and mounts
     (the physical floor of this design), with the same parallelism as the daemon;
  3. bare ``python -m pytest`` without a container (reported, no target).

Prints a table of wall times and ratios (target: patchgate / docker run <= 1.25) and the median
container start time (create + start through the engine API). Usage::

    .venv/bin/python bench/bench_sandbox.py [--n 8] [--repeat 3] [--parallel 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from executord.sandbox.container import ContainerSpec, DockerRuntime, SandboxPolicy
from executord.sandbox.image import ensure_image, host_mounts, host_python_env
from patchgate.digest import Manifest, hash_files, scan_fixture_tree
from patchgate.envelope import fixture_statement, sign_envelope
from patchgate.executor_client import ExecutorClient
from patchgate.keys import generate_key_file
from patchgate.ledgers import now_utc
from patchgate.pins import PropertyPin
from patchgate.request import ExecuteRequest

REPO = Path(__file__).resolve().parents[1]
PYTEST = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")


def _workspace(root: Path, n: int) -> Path:
    ws = root / "billing"
    shutil.copytree(REPO / "examples" / "billing", ws, ignore=shutil.ignore_patterns("__pycache__"))
    body = "".join(f"\ndef test_trivial_{i}():\n    assert {i} == {i}\n" for i in range(n))
    (ws / "properties" / "test_trivial.py").write_text(body, encoding="utf-8")
    return ws


def _commands(n: int) -> list[tuple[str, ...]]:
    return [(*PYTEST, f"properties/test_trivial.py::test_trivial_{i}") for i in range(n)]


def _start_daemon(root: Path, keyring: Path, parallel: int) -> tuple[subprocess.Popen[str], str]:
    sock = root / "x.sock"  # inside the run's temp dir, removed with it
    proc = subprocess.Popen(
        [sys.executable, "-m", "executord", "serve", "--operator-keyring", str(keyring),
         "--listen", f"unix:{sock}", "--image", "host", "--state-dir", str(root / "state"),
         "--max-parallel", str(parallel), "--instance", f"bench-{os.getpid()}"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening "):
        proc.kill()
        raise SystemExit("executord did not start")
    return proc, line.split(" ", 1)[1].strip()


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _parallel(jobs: list[list[str]], parallel: int, cwd: Path | None = None) -> None:
    def one(argv: list[str]) -> None:
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True)

    with ThreadPoolExecutor(parallel) as pool:
        list(pool.map(one, jobs))


def _docker_argv(image: str, ws: Path, command: tuple[str, ...], bin_dir: str) -> list[str]:
    argv = ["docker", "run", "--rm", "--network", "none", "--user", "10001:10001"]
    for m in host_mounts(host_python_env()):
        argv += ["-v", f"{m.source}:{m.target}:ro"]
    argv += ["-v", f"{ws}:/workspace:ro", "-w", "/workspace", "-e", f"PATH={bin_dir}:/usr/bin:/bin"]
    argv += ["-e", "PYTHONDONTWRITEBYTECODE=1", image, *command]
    return argv


def _median_start_ms(runtime: DockerRuntime, image: str, ws: Path, samples: int) -> float:
    policy = SandboxPolicy(image=image)
    times = []
    mounts = host_mounts(host_python_env())
    for _ in range(samples):
        spec = ContainerSpec(argv=("true",), mounts=mounts, env={}, workdir="/", labels={})
        t0 = time.perf_counter()
        cid = runtime.create(spec, policy)
        runtime.start(cid)
        times.append((time.perf_counter() - t0) * 1000)
        runtime.wait(cid, 30)
        runtime.remove(cid)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="trivial properties (each run twice)")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions; the median is reported")
    ap.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    ws = _workspace(root, args.n)
    key = generate_key_file(root / "operator.key", "operator")
    pinned = [p.relative_to(ws).as_posix() for p in (ws / "fixtures").rglob("*") if p.is_file()]
    manifest = Manifest(
        pin_id="bench", files=hash_files(scan_fixture_tree(ws, "fixtures", pinned)),
        seed=7, clock_bound_ms=60000, allowed_commands=(PYTEST,),
    )  # fmt: skip
    envelope = sign_envelope(fixture_statement(manifest, key, now_utc()), key)
    props = [
        PropertyPin(id=f"trivial.{i}", claim="", property_class="pure_fn", covers=(), command=c)
        for i, c in enumerate(_commands(args.n))
    ]
    proc, address = _start_daemon(root, Path(f"{root}/operator.key.pub"), args.parallel)
    runtime = DockerRuntime()
    image = ensure_image(runtime, "host", uid=10001, pull=False)
    env = host_python_env()
    timings: dict[str, list[float]] = {"patchgate": [], "docker run": [], "bare pytest": []}
    start_sums: list[float] = []
    try:
        with ExecutorClient(address) as client:

            def via_patchgate() -> None:
                r = client.execute(
                    ExecuteRequest(
                        envelope=envelope, workspace=ws, fixture_root="fixtures", properties=props
                    )
                )
                assert len(r.outcomes) == 2 * args.n, r.transport
                assert all(o.outcome == "pass" for o in r.outcomes)
                start_sums.append(r.timings.get("container_start_ms", 0) / (2 * args.n))

            via_patchgate()  # warm-up: uploads the blobs once
            docker_jobs = [
                _docker_argv(image, ws, c, env.bin_dir) for c in _commands(args.n) for _ in (1, 2)
            ]
            bare_jobs = [[sys.executable, *c[1:]] for c in _commands(args.n) for _ in (1, 2)]
            modes: list[tuple[str, Callable[[], object]]] = [
                ("patchgate", via_patchgate),
                ("docker run", lambda: _parallel(docker_jobs, args.parallel)),
                ("bare pytest", lambda: _parallel(bare_jobs, args.parallel, ws)),
            ]
            for rep in range(args.repeat):  # rotate the order: a load burst hits each mode alike
                for name, fn in modes[rep % 3 :] + modes[: rep % 3]:
                    timings[name].append(_timed(fn))
        median_start = _median_start_ms(runtime, image, ws, 10)
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(root, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in timings.items()}
    best = {k: min(v) for k, v in timings.items()}
    runs = 2 * args.n
    print(f"\nsandbox overhead: {args.n} trivial properties x 2 runs = {runs} runs, "
          f"parallel {args.parallel}, {args.repeat} repetitions\n")  # fmt: skip
    print(f"{'mode':<13}{'median s':>9}{'per run ms':>11}{'vs docker':>10}{'vs bare':>9}"
          f"{'best s':>8}{'vs docker':>10}{'vs bare':>9}")  # fmt: skip
    for k, v in med.items():
        w = best[k]
        print(
            f"{k:<13}{v:>9.2f}{v / runs * 1000:>11.0f}"
            f"{v / med['docker run']:>10.2f}{v / med['bare pytest']:>9.2f}"
            f"{w:>8.2f}{w / best['docker run']:>10.2f}{w / best['bare pytest']:>9.2f}"
        )
    ratio = med["patchgate"] / med["docker run"]
    ratio_best = best["patchgate"] / best["docker run"]
    print(
        f"\npatchgate / docker run: median {ratio:.2f}, best {ratio_best:.2f}"
        f" (target <= 1.25 on the median: {'met' if ratio <= 1.25 else 'NOT met'})"
    )
    print(f"median container start (create+start, engine API): {median_start:.0f} ms")
    print(
        f"patchgate mean container start per run (report): {statistics.median(start_sums):.0f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
