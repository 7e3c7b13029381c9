"""Fleet behaviour of the client on this machine: two executors, one killed (SIGKILL) mid-run.

The base pins hold two slow properties, so each executor holds one at the same time. When the
first executor's container is running, that executor is killed by pid: its property's result is
transport only, is recorded in ``receipt.transport`` (``retried``), and is re-run once on the
survivor. The verdict is the one a healthy fleet gives (``human_review``, exit 0); no property
fails; every result names the executor key that signed it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests.conftest import KeyPair, make_key
from tests.integration.fixtures_executor import (
    ExecutorProc,
    labeled_containers,
    start_executor,
    wait_for,
)
from tests.integration.fixtures_gate import BILLING, Gate, GateRun, _git
from tests.integration.fixtures_signer import SignerDaemon

pytestmark = [pytest.mark.integration, pytest.mark.docker, pytest.mark.slow]

# Four seconds is room to see both containers and kill one mid-run. The slow properties cover
# nothing: the mutation stage runs only the groups of covering properties, so it runs the fast
# exact property's group alone (its own command prefix, "-x"): a slow group in every one of the
# batch's variants (4 mutants and 7 controls) would cost minutes of CI.
SLOW = '''"""Two properties that hold, slowly (long enough to kill an executor mid-run), and one
that pins prorate's value at a few points, fast."""

import time
from decimal import Decimal

from billing import prorate


def test_prorate_non_negative_slowly():
    time.sleep(4)
    assert prorate(Decimal("10.00"), 3, 30) >= 0


def test_prorate_bounded_slowly():
    time.sleep(4)
    assert prorate(Decimal("10.00"), 3, 30) <= Decimal("10.00")


def test_prorate_at_points():
    for used, want in ((3, "1.00"), (0, "0.00"), (-5, "0.00"), (30, "10.00"), (45, "10.00")):
        assert prorate(Decimal("10.00"), used, 30) == Decimal(want)
'''


class _Repo:
    def __init__(self, path: Path) -> None:
        self.path = path


def _slow_repo(tmp_path: Path) -> _Repo:
    path = tmp_path / "fleetrepo"
    shutil.copytree(BILLING, path, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    (path / "properties" / "test_slow.py").write_text(SLOW, encoding="utf-8")
    cmd = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    pins = {"properties": [
        {"id": f"billing.prorate.{name}", "claim": name, "class": "pure_fn",
         "covers": covers, "command": [*cmd, *extra, f"properties/test_slow.py::{test}"]}
        for name, test, covers, extra in (
            ("non_negative", "test_prorate_non_negative_slowly", [], []),
            ("bounded", "test_prorate_bounded_slowly", [], []),
            ("at_points", "test_prorate_at_points", ["billing.prorate"], ["-x"]),
        )
    ]}  # fmt: skip
    (path / "pins" / "properties.json").write_text(json.dumps(pins, indent=2), encoding="utf-8")
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "base with two slow properties")
    return _Repo(path)


def _executor(tmp_path: Path, name: str, operator_key: KeyPair) -> tuple[ExecutorProc, KeyPair]:
    key = make_key(tmp_path / f"key-{name}", "executor")
    work = tmp_path / name
    work.mkdir()
    return start_executor(work, operator_key.keyring_path, "--key", str(key.key_path)), key


def test_replica_killed_mid_run_is_rerun_on_the_survivor(
    signer_daemon: SignerDaemon, docker_engine: None, operator_key: KeyPair, tmp_path: Path
) -> None:
    repo = _slow_repo(tmp_path)
    a, key_a = _executor(tmp_path, "a", operator_key)
    try:
        b, key_b = _executor(tmp_path, "b", operator_key)
    except BaseException:  # a is stopped even when b does not start
        a.stop()
        raise
    gate = Gate(signer_daemon.address, a.address, operator_key.keyring_path, tmp_path)
    box: list[GateRun] = []
    try:
        worker = threading.Thread(
            target=lambda: box.append(
                gate.check(repo, "prorate_refactor.patch", "--executor", b.address)  # type: ignore[arg-type]
            ),
            daemon=True,
        )
        worker.start()
        assert wait_for(lambda: bool(labeled_containers(a.instance)), timeout=90.0), (
            "a never started a run"
        )
        assert wait_for(lambda: bool(labeled_containers(b.instance)), timeout=90.0), (
            "b never started a run"
        )
        a.proc.kill()  # SIGKILL by pid: the replica dies mid-run
        a.proc.wait(10)
        worker.join(300)
        assert box, "check did not finish"
        run = box[0]
    finally:
        a.stop()
        b.stop()
        for d in (a, b):  # SIGKILL leaves a's container: never leave one behind
            for cid in labeled_containers(d.instance):
                subprocess.run(["docker", "rm", "-f", cid], capture_output=True, check=False)

    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert (r["posture"], r["admit"], r["coverage"]) == ("human_review", True, 1.0)
    retried = [t for t in r["transport"] if t.get("retried")]
    assert retried, "the killed replica's runs must be recorded as transport"
    assert {t["address"] for t in r["transport"]} == {a.address}
    assert {t["kind"] for t in retried} <= {"unavailable", "internal", "empty_response"}
    killed_pid = retried[0]["property_id"]
    results = r["lanes"]["local"]["results"]
    attempts = [x for x in results if x["property_id"] == killed_pid]
    assert [(x["attempt"], x["address"]) for x in attempts] == [(1, a.address), (2, b.address)]
    assert attempts[0]["outcomes"] == {}
    assert attempts[1]["outcomes"] == {"1": "pass", "2": "pass"}
    kept = [x for x in results if x["outcomes"]]
    assert {x["executor_keyid"] for x in kept} == {key_b.signer.keyid}
    assert set(r["lanes"]["local"]["status_by_id"].values()) == {"pass"}
    ledger = run.file("property_ledger.json")
    assert {x["executor_keyid"] for x in ledger["runs"]} == {key_b.signer.keyid}
    assert "re-running once" in run.stderr
    assert key_a.signer.keyid not in json.dumps(ledger)


def test_two_executors_share_one_check(
    signer_daemon: SignerDaemon, docker_engine: None, operator_key: KeyPair, tmp_path: Path
) -> None:
    """Both executors run properties of one check; each result names its executor's key."""
    repo = _slow_repo(tmp_path)
    a, key_a = _executor(tmp_path, "a", operator_key)
    try:
        b, key_b = _executor(tmp_path, "b", operator_key)
    except BaseException:  # a is stopped even when b does not start
        a.stop()
        raise
    gate = Gate(signer_daemon.address, a.address, operator_key.keyring_path, tmp_path)
    try:
        run = gate.check(repo, "prorate_refactor.patch", "--executor", b.address)  # type: ignore[arg-type]
    finally:
        a.stop()
        b.stop()
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    by_address = {x["address"]: x["executor_keyid"] for x in r["lanes"]["local"]["results"]}
    assert by_address == {a.address: key_a.signer.keyid, b.address: key_b.signer.keyid}
    assert r["transport"] == []
