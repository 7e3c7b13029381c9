"""Flake observations through the whole gate: a pre-listed, unexpired flake firing again is recorded
in flake_ledger.json and makes the posture ``review`` (never credit); once expired it is a miss."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.integration.fixtures_gate import BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]

CHECKOUT_TEST = """\
def test_worker_drain():
    raise TimeoutError("checkout_worker")
"""


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


def test_valid_flake_firing_is_observed_and_posture_is_review(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    _add_flaky_property(billing_repo)
    run = gate.check(billing_repo, "prorate_refactor.patch")
    assert run.code == 0, run.stdout + run.stderr
    assert run.receipt["posture"] == "review"
    flake = run.file("flake_ledger.json")
    assert (flake["flake_id"], flake["test_id"]) == (
        "FLK-1044",
        "tests/test_checkout.py::test_worker_drain",
    )
    assert flake["fixture_digest"] == run.receipt["fixture_digest"]
    assert run.receipt["credits"] == {"billing.prorate": 1}


def test_expired_flake_firing_is_a_property_miss(gate: Gate, billing_repo: BillingRepo) -> None:
    _add_flaky_property(billing_repo)
    run = gate.check(billing_repo, "prorate_refactor.patch", clock="2026-10-16T00:00:00Z")
    assert run.code == 1
    assert run.receipt["posture"] == "reject_property_miss"
    assert "flake_ledger.json" not in run.files()
