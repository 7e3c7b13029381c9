"""One ``patchgate check`` per posture, with a real signer, executor and Docker (DESIGN §6-§8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import make_key
from tests.integration.fixtures_gate import BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]


def test_passing_patch_admits_for_human_review(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch")
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert (r["posture"], r["admit"], r["coverage"]) == ("human_review", True, 1.0)
    assert "[local 5/5]" in run.stderr  # progress while properties run (five, the exact one too)


def test_json_flag_prints_the_receipt(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch", "--json")
    assert json.loads(run.stdout) == run.receipt


def test_property_failing_both_runs_is_a_property_miss(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "prorate_regression.patch")
    r = run.receipt
    assert run.code == 1
    assert r["posture"] == "reject_property_miss"
    assert (
        run.file("property_ledger.json")["status_by_id"]["billing.prorate.non_negative"] == "fail"
    )


def test_oracle_moving_patch_is_r7_and_runs_nothing(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "oracle_moved.patch")
    assert run.code == 1
    assert run.receipt["rejection_codes"] == ["R1", "R7"]  # R1: prorate earned nothing
    assert run.receipt["posture"] == "reject_oracle_moved"
    assert "property_ledger.json" not in run.files()


def test_pin_editing_patch_is_r8(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "pin_mutation.patch")
    assert run.code == 1
    assert "R8" in run.receipt["rejection_codes"]
    assert run.receipt["posture"] == "reject_pin_mutation"


def test_fixture_rewrite_is_refused_r2_exit_2_without_property_ledger(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "fixture_rewrite.patch")
    assert run.code == 2
    # R1 and the static R5 of invoice_total are listed next to the R2 that stopped the run
    assert run.receipt["rejection_codes"] == ["R1", "R2", "R5"]
    assert (run.receipt["posture"], run.receipt["fixture_status"]) == (
        "reject_unscored",
        "mismatch",
    )
    assert run.file("fixture_ledger.json")["mismatched"] == ["fixtures/invoice.json"]
    assert {"property_ledger.json", "admission.json", "fixture_envelope.json"}.isdisjoint(
        run.files()
    )


def test_unknown_freeze_id_is_r4(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "unknown_freeze.patch")
    assert run.code == 1
    assert "R4" in run.receipt["rejection_codes"]
    assert "FLK-9999" in run.stdout


def test_empty_patch_is_reject_provenance_without_provenance_file(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.patch"
    empty.write_bytes(b"")
    run = gate.check(billing_repo, empty)
    assert run.code == 1
    assert (run.receipt["decision"], run.receipt["posture"]) == (
        "reject_provenance",
        "reject_admission",
    )
    assert run.file("admission.json")["row"] == "provenance"
    assert "provenance.json" not in run.files()


def test_missing_drafter_is_reject_provenance(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch", drafter="")
    assert run.code == 1
    assert run.receipt["decision"] == "reject_provenance"


def test_patch_that_does_not_apply_is_reject_provenance(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    billing_repo.commit_patch("prorate_refactor.patch", "someone else changed prorate first")
    run = gate.check(billing_repo, "prorate_regression.patch")
    assert run.code == 1
    assert run.receipt["decision"] == "reject_provenance"


def test_signature_by_a_non_operator_key_is_reject_fixture_role(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    other = make_key(tmp_path / "other", "operator")  # the signer's key is not in this keyring
    run = gate.check(
        billing_repo, "prorate_refactor.patch", operator_keyring=str(other.keyring_path)
    )
    assert run.code == 1
    assert (run.receipt["decision"], run.receipt["posture"]) == (
        "reject_fixture_role",
        "reject_admission",
    )
    assert run.file("admission.json")["row"] == "fixture_role"
    assert "fixture_envelope.json" not in run.files()


def test_unreachable_executor_is_unavailable_exit_4(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch", executor=f"unix:{gate.tmp}/none.sock")
    r = run.receipt
    assert run.code == 4
    assert r["posture"] == "unavailable"
    assert r["transport"]
    assert {t["kind"] for t in r["transport"]} <= {"unavailable", "deadline", "internal"}
    assert "property_ledger.json" not in run.files()
    # issue 24: the summary names the daemon and its address in words, not gRPC's own line
    assert f"local executor at unix:{gate.tmp}/none.sock is unreachable (no socket" in run.stdout
    assert "failed to connect to all addresses" not in run.stdout


def test_unreachable_signer_is_unavailable_exit_4(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch", signer=f"unix:{gate.tmp}/none.sock")
    assert run.code == 4
    assert run.receipt["transport"][0]["lane"] == "signer"
    assert "admission.json" not in run.files()
    assert f"signer at unix:{gate.tmp}/none.sock is unreachable (no socket" in run.stdout
    assert "`patchgate up`" in run.stdout
    assert "failed to connect to all addresses" not in run.stdout
    # nothing was scored, and the receipt still says so for the changed symbol
    assert run.receipt["rejection_codes"] == ["R1"]
    assert run.receipt["uncredited"] == {
        "billing.prorate": "the run was stopped before execution: unavailable"
    }


def test_remote_lane_is_recorded_and_never_credits(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "worked_example.patch", remote_executor=gate.executor)
    r = run.receipt
    assert r["lanes"]["remote"]["status_by_id"]["billing.invoice_total.matches_fixture"] == "pass"
    assert r["credits"]["billing.invoice_total"] == 0
    assert run.code == 1


def _second_pin(repo: BillingRepo, tmp_path: Path, **changes: object) -> Path:
    pin = json.loads((repo.path / "pins" / "fixtures.json").read_text())
    pin.update(changes)
    path = tmp_path / "second_pin.json"
    path.write_text(json.dumps(pin))
    return path


def test_second_pin_that_agrees_is_review(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    pin = _second_pin(billing_repo, tmp_path, pin_id="fixpin-billing-b", seed=8)
    run = gate.check(billing_repo, "prorate_refactor.patch", second_pin=str(pin))
    assert run.code == 0, run.stdout + run.stderr
    assert run.receipt["posture"] == "review"
    assert run.file("drift.json")["drift"] is False


def test_second_pin_with_other_bytes_is_drift_exit_3(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    files = json.loads((billing_repo.path / "pins" / "fixtures.json").read_text())["files"]
    files["fixtures/invoice.json"] = "0" * 64
    pin = _second_pin(billing_repo, tmp_path, pin_id="fixpin-billing-b", files=files)
    run = gate.check(billing_repo, "prorate_refactor.patch", second_pin=str(pin))
    assert run.code == 3
    assert "R9" in run.receipt["rejection_codes"]
    assert run.receipt["posture"] == "reject_fixture_drift"
    assert run.file("drift.json")["drift"] is True
