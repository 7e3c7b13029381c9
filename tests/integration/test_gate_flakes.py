"""Flake observations through the whole gate: a pre-listed, unexpired flake never excuses a
property covering changed code, nor — without a trustworthy record of what its runs imported
(every run today) — any failure beside a patch that changed production code (issue 22); once
expired it is a miss."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.fixtures_gate import BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]

CHECKOUT_TEST = """\
def test_worker_drain():
    raise TimeoutError("checkout_worker")
"""


def _git(repo: BillingRepo, *args: str) -> str:
    who = ["-c", "user.name=p", "-c", "user.email=p@e"]
    return subprocess.run(
        ["git", "-C", str(repo.path), *who, *args], check=True, capture_output=True, text=True
    ).stdout


def _add_flaky_property(repo: BillingRepo) -> None:
    """A person's base commit: FLK-1044's test becomes a pinned property, failing as flaked."""
    (repo.path / "tests" / "test_checkout.py").write_text(CHECKOUT_TEST)
    pins = repo.path / "pins" / "properties.json"
    doc = json.loads(pins.read_text())
    doc["properties"].append({
        "id": "checkout.worker_drain", "claim": "the worker drains", "class": "idempotent_io",
        "covers": ["billing.orders.load_orders"],
        "command": ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "tests/test_checkout.py::test_worker_drain"],
    })  # fmt: skip
    pins.write_text(json.dumps(doc, indent=2))
    for args in (["add", "-A"], ["commit", "-qm", "checkout drain property (FLK-1044)"]):
        who = ["-c", "user.name=p", "-c", "user.email=p@e"]
        subprocess.run(["git", "-C", str(repo.path), *who, *args], check=True, capture_output=True)


def test_a_flake_firing_beside_changed_code_is_no_excuse_without_a_record(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """Issue 22: with no trustworthy record of which production modules a run imported (every
    run today, ``--judge off``), a flake excuses nothing when the patch changed production code.
    This check used to be admitted with posture ``review`` (the flake observed): the flaky test
    covers billing.orders.load_orders, the patch rewrites billing.prorate, and nothing showed the
    test did not import it. That a valid flake is recorded when it may excuse the failure is held
    by tests/unit/test_flakes.py (the relaxed rule, with a record)."""
    _add_flaky_property(billing_repo)
    run = gate.check(billing_repo, "prorate_refactor.patch")
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert (r["posture"], r["admit"], r["flake_observations"]) == (
        "reject_property_miss",
        False,
        [],
    )
    assert r["credits"] == {"billing.prorate": 1}  # the code change itself earned its credit
    assert "flake_ledger.json" not in run.files()
    assert (
        "flake FLK-1044 cannot excuse checkout.worker_drain: no trustworthy record of what its "
        "runs imported, and the patch changed production code (billing.prorate)"
    ) in run.stdout


DEFECT_TEST = """\
from decimal import Decimal

from billing import prorate


def test_worker_drain():
    assert prorate(Decimal("10.00"), 7777, 7777) == Decimal("10.00")
"""


def test_a_flake_never_excuses_a_defect_in_a_covered_function(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """Issue 13: a patch makes a covered function raise the pinned flake's signature on the
    flaky test's input; both runs fail. It was admitted with posture ``review``."""
    (billing_repo.path / "tests" / "test_checkout.py").write_text(DEFECT_TEST)
    pins = billing_repo.path / "pins" / "properties.json"
    doc = json.loads(pins.read_text())
    doc["properties"].append({
        "id": "checkout.worker_drain", "claim": "the worker drains", "class": "pure_fn",
        "covers": ["billing.prorate"],
        "command": ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "tests/test_checkout.py::test_worker_drain"],
    })  # fmt: skip
    pins.write_text(json.dumps(doc, indent=2))
    _git(billing_repo, "add", "-A")
    _git(billing_repo, "commit", "-qm", "checkout drain property on prorate (FLK-1044)")
    source = billing_repo.path / "billing" / "__init__.py"
    base = source.read_text()
    source.write_text(
        base.replace(
            '        raise ValueError("period_days must be positive")\n',
            '        raise ValueError("period_days must be positive")\n'
            "    if period_days == 7777:\n"
            '        raise TimeoutError("checkout_worker")\n',
        )
    )
    patch = tmp_path / "flake_excuses_defect.patch"
    patch.write_text(_git(billing_repo, "diff"))
    source.write_text(base)
    run = gate.check(billing_repo, patch)
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert (r["posture"], r["admit"], r["flake_observations"]) == (
        "reject_property_miss",
        False,
        [],
    )
    status = run.file("property_ledger.json")["status_by_id"]["checkout.worker_drain"]
    assert status in {"fail", "error"}
    assert "flake_ledger.json" not in run.files()
    assert "cannot excuse checkout.worker_drain" in run.stdout


def test_expired_flake_firing_is_a_property_miss(gate: Gate, billing_repo: BillingRepo) -> None:
    _add_flaky_property(billing_repo)
    run = gate.check(billing_repo, "prorate_refactor.patch", clock="2026-10-16T00:00:00Z")
    assert run.code == 1
    assert run.receipt["posture"] == "reject_property_miss"
    assert "flake_ledger.json" not in run.files()
