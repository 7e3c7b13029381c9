"""Fault injection at the gate: the executor killed (-9) or its Docker engine stopped mid-check.

Each test runs a real ``patchgate check`` (subprocess) against a real signer and executor whose
base pins hold ONE slow property, kills the infrastructure while that property's container runs,
and asserts the verdict is ``unavailable`` (exit 4) with transport records, never a ``fail``, and
that no property ledger was written (nothing scored).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.fixtures_executor import (
    LABEL,
    PrivateDockerd,
    labeled_containers,
    start_executor,
    wait_for,
)
from tests.integration.fixtures_gate import BILLING, Gate, GateRun, _git
from tests.integration.fixtures_signer import SignerDaemon

pytestmark = [pytest.mark.integration, pytest.mark.docker]

SLOW_PROPERTY = '''"""A property that holds, slowly (long enough to be killed mid-run)."""

import time
from decimal import Decimal

from billing import prorate


def test_prorate_non_negative_slowly():
    time.sleep(25)
    assert prorate(Decimal("10.00"), 3, 30) >= 0
'''


class _Repo:
    """A billing repo whose base pins one slow property (the shape ``Gate.check`` expects)."""

    def __init__(self, path: Path) -> None:
        self.path = path


def _slow_repo(tmp_path: Path) -> _Repo:
    path = tmp_path / "slowrepo"
    shutil.copytree(BILLING, path, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    (path / "properties" / "test_slow.py").write_text(SLOW_PROPERTY, encoding="utf-8")
    pins = {"properties": [{
        "id": "billing.prorate.slow", "claim": "prorate is non-negative (slowly)",
        "class": "pure_fn", "covers": ["billing.prorate"],
        "command": ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "properties/test_slow.py::test_prorate_non_negative_slowly"],
    }]}  # fmt: skip
    (path / "pins" / "properties.json").write_text(json.dumps(pins, indent=2), encoding="utf-8")
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "base with one slow property")
    return _Repo(path)


def _check_while(gate: Gate, repo: _Repo, fault: Callable[[], None]) -> GateRun:
    """Run ``check`` in a thread; call ``fault`` (which waits for its moment) meanwhile."""
    box: list[GateRun] = []
    worker = threading.Thread(
        target=lambda: box.append(gate.check(repo, "prorate_refactor.patch")),  # type: ignore[arg-type]
        daemon=True,
    )
    worker.start()
    fault()
    worker.join(300)
    assert box, "check did not finish"
    return box[0]


def _assert_unavailable_not_fail(run: GateRun) -> None:
    r = run.receipt
    assert run.code == 4, run.stdout + run.stderr
    assert r["posture"] == "unavailable"
    assert r["admit"] is False
    assert r["transport"], "the outage must be recorded as transport"
    assert {t["kind"] for t in r["transport"]} <= {"unavailable", "internal", "empty_response"}
    assert "property_ledger.json" not in run.files()
    assert "fail" not in json.dumps(r["lanes"]["local"].get("status_by_id", {}))


def test_executor_killed_mid_run_is_unavailable_and_restart_sweeps(
    signer_daemon: SignerDaemon, docker_engine: None, operator_key, tmp_path: Path
) -> None:
    """kill -9 of the executor while a property runs: exit 4, `unavailable`, no property ledger;
    the restarted executor (same --instance) removes the orphaned container at start-up."""
    repo = _slow_repo(tmp_path)
    daemon = start_executor(tmp_path, operator_key.keyring_path)
    gate = Gate(signer_daemon.address, daemon.address, operator_key.keyring_path, tmp_path)

    def kill() -> None:
        assert wait_for(lambda: bool(labeled_containers(daemon.instance)), timeout=60.0)
        daemon.proc.kill()  # SIGKILL by pid: no drain, no cleanup
        daemon.proc.wait(10)

    try:
        run = _check_while(gate, repo, kill)
        _assert_unavailable_not_fail(run)
        assert labeled_containers(daemon.instance), "precondition: SIGKILL left the container"
        again = start_executor(tmp_path, operator_key.keyring_path, "--instance", daemon.instance)
        try:
            assert labeled_containers(daemon.instance) == []
        finally:
            again.stop()
    finally:
        daemon.stop()
        for cid in labeled_containers(daemon.instance):  # never leave one behind on failure
            subprocess.run(["docker", "rm", "-f", cid], capture_output=True, check=False)


def test_engine_stopped_mid_check_is_unavailable_not_fail(
    signer_daemon: SignerDaemon, private_dockerd: PrivateDockerd, operator_key, tmp_path: Path
) -> None:
    """A private dockerd stopped while the property runs: exit 4, `unavailable`, never `fail`."""
    repo = _slow_repo(tmp_path)
    daemon = start_executor(
        tmp_path, operator_key.keyring_path, env={"DOCKER_HOST": private_dockerd.host}
    )
    gate = Gate(signer_daemon.address, daemon.address, operator_key.keyring_path, tmp_path)
    engine_env = {**os.environ, "DOCKER_HOST": private_dockerd.host}

    def running() -> bool:
        out = subprocess.run(
            ["docker", "ps", "-q", "--filter", f"label={LABEL}={daemon.instance}"],
            capture_output=True, text=True, env=engine_env, check=False,
        ).stdout  # fmt: skip
        return bool(out.split())

    def stop_engine() -> None:
        assert wait_for(running, timeout=60.0)
        private_dockerd.stop()

    try:
        run = _check_while(gate, repo, stop_engine)
        _assert_unavailable_not_fail(run)
        assert daemon.proc.poll() is None, "the executor must survive its engine"
    finally:
        daemon.stop()


def test_sandbox_killed_from_outside_is_unavailable_not_property_miss(
    signer_daemon: SignerDaemon, docker_engine: None, operator_key, tmp_path: Path
) -> None:
    """``docker kill`` of the property's sandboxes mid-check (issue 12): exit 4, `unavailable`,
    transport `killed_externally`, no property ledger; never `reject_property_miss`."""
    repo = _slow_repo(tmp_path)
    daemon = start_executor(tmp_path, operator_key.keyring_path)
    gate = Gate(signer_daemon.address, daemon.address, operator_key.keyring_path, tmp_path)

    def running() -> list[str]:
        return subprocess.run(
            ["docker", "ps", "-q", "--filter", f"label={LABEL}={daemon.instance}",
             "--filter", "status=running"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip

    def kill_sandboxes() -> None:
        killed: set[str] = set()  # both runs, and again every run the gate re-runs on transport
        while wait_for(lambda: bool(set(running()) - killed), timeout=20.0 if killed else 60.0):
            for cid in set(running()) - killed:
                subprocess.run(["docker", "kill", cid], capture_output=True, check=True)
                killed.add(cid)

    try:
        run = _check_while(gate, repo, kill_sandboxes)
    finally:
        daemon.stop()
    r = run.receipt
    assert "reject_property_miss" not in run.stdout
    assert run.code == 4, run.stdout + run.stderr
    assert (r["posture"], r["admit"]) == ("unavailable", False)
    assert "killed_externally" in {t["kind"] for t in r["transport"]}
    assert "property_ledger.json" not in run.files()
