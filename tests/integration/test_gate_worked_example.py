"""The worked example of the gate issue, end to end with a real signer, executor and Docker.

An agent's patch changes ``billing.prorate`` (covered by real properties) and
``billing.invoice_total`` (covered only by ``assert invoice_total(order) == load_fixture(...)``):
credits 1/0, coverage 0.5, R1 and R5, fixtures ``match``, the freeze citation FLK-1044 (a
quarantined checkout property), not admitted, exit 1. A person then repairs the *base* (the
invoice property becomes a predicate) and the same agent patch admits; a repair that adds a
predicate but keeps the fixture equality earns full coverage and still keeps R5.
"""

from __future__ import annotations

import pytest

from tests.integration.fixtures_gate import BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]


def test_worked_example_is_rejected_for_credit_with_r1_and_r5(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "worked_example.patch")
    r = run.receipt
    assert run.code == 1, run.stderr
    # the seven receipt fields of the source example
    assert r["credits"] == {"billing.prorate": 1, "billing.invoice_total": 0}
    assert r["coverage"] == 0.5
    assert r["uncredited"] == {"billing.invoice_total": "fixture equality only (R5)"}
    assert r["fixture_status"] == "match"
    assert r["freeze_citations"] == ["FLK-1044"]
    assert r["rejection_codes"] == ["R1", "R5"]
    assert (r["decision"], r["posture"], r["admit"]) == ("admit", "reject_credit", False)
    # the quarantined property is a citation: listed, never run, never an error
    skipped = {s["property_id"] for s in run.file("admission.json")["skipped"]}
    assert "billing.checkout.drains_in_order" in skipped
    assert (
        "billing.checkout.drains_in_order" not in run.file("property_ledger.json")["status_by_id"]
    )
    assert {"provenance.json", "fixture_ledger.json", "fixture_envelope.json", "admission.json",
            "property_ledger.json", "receipt.json"} <= run.files()  # fmt: skip
    assert "billing.invoice_total.matches_fixture" in run.stdout
    assert "fixture_eq" in run.stdout


def test_after_the_persons_base_repair_the_same_patch_admits(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    billing_repo.commit_patch("base_repair_invoice_property.patch", "invoice property: a predicate")
    run = gate.check(billing_repo, "worked_example.patch")
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert r["credits"] == {"billing.prorate": 1, "billing.invoice_total": 1}
    assert (r["coverage"], r["rejection_codes"], r["admit"]) == (1.0, [], True)
    assert r["posture"] == "human_review"
    ledger = run.file("property_ledger.json")
    assert set(ledger["status_by_id"].values()) == {"pass"}


def test_receipt_verifies_until_the_predicate_moves(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch")
    assert run.code == 0, run.stdout + run.stderr
    held = gate.verify(run.out / "receipt.json", billing_repo)
    assert held.code == 0, held.stdout + held.stderr
    billing_repo.commit_patch("base_repair_invoice_property.patch", "invoice property: a predicate")
    stale = gate.verify(run.out / "receipt.json", billing_repo)
    assert stale.code == 1
    assert "billing.invoice_total.matches_fixture" in stale.stdout


def test_a_repair_that_keeps_the_fixture_equality_keeps_r5_at_full_coverage(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """Issue 17: the person adds a real invoice predicate but keeps the fixture equality pinned:
    invoice_total is credited (coverage 1.0), R5 stays, so the patch is still not admitted."""
    billing_repo.commit_patch("base_add_invoice_predicate.patch", "invoice: a predicate beside")
    run = gate.check(billing_repo, "worked_example.patch")
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert r["credits"] == {"billing.prorate": 1, "billing.invoice_total": 1}
    assert (r["coverage"], r["rejection_codes"]) == (1.0, ["R5"])
    assert (r["posture"], r["admit"], r["uncredited"]) == ("reject_credit", False, {})
    assert r["fixture_status"] == "match"
    assert r["freeze_citations"] == ["FLK-1044"]
