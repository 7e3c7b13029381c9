"""Soak: 24 consecutive ``patchgate check`` runs against ONE signer and ONE executor.

A tiny target repository (one fixture, one trivial property) keeps each check short. Each check
runs the suite twice and the mutation stage: every mutant of ``tiny.add``'s changed line and the
hidden controls in one batch, one sandbox (the property pins ``a + b`` as well as commuting, so
its predicate, not a crash, kills them; the base asks ``min_mutation_score = 1.0``, which needs 2
controls, not 7: this test is about leaks, not about the stage). 24 checks drive about 70
sandboxes and as many executor RPCs; after a warm-up of 8 (gRPC pools, first channels) a leak of
one descriptor or thread per check shows eight times over the allowed slack: the daemons' open
file descriptors (/proc/PID/fd), threads (/proc/PID/status ``Threads``) and labeled containers
must not grow; every check must admit (nothing lost or misreported). The figures are printed
(run with ``-s``). ``PATCHGATE_SOAK_RUNS`` overrides the count (default 24). (80 checks once ran
past the 600 s per-test limit on a loaded CI machine; the budget leaves room for a slow day.)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.fixtures_executor import ExecutorProc, labeled_containers
from tests.integration.fixtures_gate import Gate, _git
from tests.integration.fixtures_signer import SignerDaemon

RUNS = int(os.environ.get("PATCHGATE_SOAK_RUNS", "24"))

pytestmark = [
    pytest.mark.integration,
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.timeout(max(600, 30 * RUNS)),  # ~15 s a check here; 30 s a check is a hang
]

WARMUP = 8
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
FILES = {
    "pyproject.toml": '[project]\nname = "tiny"\nversion = "0"\n\n[tool.patchgate]\n'
    'pins_dir = "pins"\nfixture_root = "fixtures"\n'
    'oracle_paths = ["tests/", "properties/", "pins/"]\nmin_mutation_score = 1.0\n',
    "tiny.py": '"""A tiny module."""\n\n\ndef add(a, b):\n    return a + b\n',
    "fixtures/one.json": '{"x": 1}\n',
    "properties/__init__.py": "",
    "properties/test_tiny.py": "from tiny import add\n\n\ndef test_add_commutes():\n"
    "    for a in range(20):\n        for b in range(20):\n"
    "            assert add(a, b) == add(b, a) == a + b\n",
}


class _Repo:
    def __init__(self, path: Path) -> None:
        self.path = path


def _tiny_repo(tmp: Path) -> tuple[_Repo, Path]:
    """The repo (base committed) and a patch that rewrites ``tiny.add``."""
    path = tmp / "tiny"
    for rel, text in FILES.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text, encoding="utf-8")
    fx = hashlib.sha256(FILES["fixtures/one.json"].encode()).hexdigest()
    pins = {
        "fixtures.json": {"pin_id": "fixpin-tiny", "algorithm": "sha256",
                          "files": {"fixtures/one.json": fx}, "seed": 7,
                          "clock_bound_ms": 30000, "allowed_commands": [PYTEST]},
        "properties.json": {"properties": [{
            "id": "tiny.add.commutes", "claim": "add commutes", "class": "pure_fn",
            "covers": ["tiny.add"],
            "command": [*PYTEST, "properties/test_tiny.py::test_add_commutes"]}]},
        "flakes.json": {"flakes": []},
    }  # fmt: skip
    (path / "pins").mkdir()
    for name, obj in pins.items():
        (path / "pins" / name).write_text(json.dumps(obj, indent=2), encoding="utf-8")
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "base")
    (path / "tiny.py").write_text(FILES["tiny.py"].replace("a + b", "b + a"), encoding="utf-8")
    patch = tmp / "tiny.patch"
    patch.write_text(_git(path, "diff"), encoding="utf-8")
    _git(path, "checkout", "--", "tiny.py")
    return _Repo(path), patch


def _figures(pid: int) -> tuple[int, int]:
    """(open fds, threads) of a process."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    threads = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("Threads:")))
    return fds, threads


def test_consecutive_checks_leak_no_fds_threads_or_containers(
    signer_daemon: SignerDaemon,
    executor_daemon: ExecutorProc,
    operator_key,
    tmp_path: Path,
) -> None:
    """fds, threads and labeled containers after RUNS checks equal those after the warm-up."""
    repo, patch = _tiny_repo(tmp_path)
    gate = Gate(signer_daemon.address, executor_daemon.address, operator_key.keyring_path, tmp_path)
    pids = {"signer": signer_daemon.proc.pid, "executor": executor_daemon.proc.pid}
    seen: dict[int, dict[str, tuple[int, int]]] = {}
    bad: list[str] = []
    for i in range(1, RUNS + 1):
        run = gate.check(repo, patch)  # type: ignore[arg-type]
        if run.code != 0 or run.receipt["posture"] != "human_review":
            bad.append(f"run {i}: exit {run.code} {run.receipt.get('posture')} {run.stderr[-300:]}")
        subprocess.run(["rm", "-rf", str(run.out)], check=True)
        if i in {WARMUP, RUNS // 2, RUNS} or i % 50 == 0:
            seen[i] = {name: _figures(pid) for name, pid in pids.items()}
    containers = labeled_containers(executor_daemon.instance)
    print(f"\nsoak: {RUNS} checks; (open fds, threads) by run:")
    for i, figs in sorted(seen.items()):
        print(
            f"  after {i:>4}: "
            + ", ".join(f"{n} {f[0]} fds {f[1]} threads" for n, f in figs.items())
        )
    print(f"  labeled containers left: {len(containers)}")
    assert bad == []
    for name in pids:
        base_fds, base_threads = seen[WARMUP][name]
        end_fds, end_threads = seen[RUNS][name]
        assert end_fds <= base_fds + 2, f"{name}: fds {base_fds} -> {end_fds}"
        assert end_threads <= base_threads + 2, f"{name}: threads {base_threads} -> {end_threads}"
    assert containers == []
