"""``patchgate properties`` with a real signer, a real executor and Docker (issue 23 item 5): the
pinned properties of a revision, on the digest the caller expects, into property_ledger.json
alone; another digest exits 2 and writes nothing."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.integration.fixtures_gate import CLOCK, BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]


def _rev(repo: BillingRepo, rev: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo.path), "rev-parse", rev], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_properties_writes_the_ledger_alone_on_the_expected_digest_and_nothing_on_another(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    base = _rev(billing_repo, "HEAD")
    # A person's later commit edits a test under tests/: the oracle differs between base and rev.
    test = billing_repo.path / "tests" / "test_orders.py"
    test.write_text(test.read_text() + "\n# reviewed again\n")
    for args in (
        ["add", "-A"],
        ["-c", "user.name=p", "-c", "user.email=p@e", "commit", "-qm", "t"],
    ):
        subprocess.run(
            ["git", "-C", str(billing_repo.path), *args], check=True, capture_output=True
        )
    rev = _rev(billing_repo, "HEAD")
    pin = billing_repo.path / "pins" / "fixtures.json"
    fx = gate.tmp / "fx"
    digest_run = gate._run(
        ["digest", "--pin", str(pin), "--root", str(billing_repo.path), "--out", str(fx)], fx
    )
    assert digest_run.code == 0, digest_run.stderr
    digest = digest_run.stdout.strip()
    common = [
        "properties", "--repo", str(billing_repo.path), "--base", base, "--rev", rev,
        "--signer", gate.signer, "--executor", gate.executor,
        "--operator-keyring", str(gate.keyring), "--clock", CLOCK,
    ]  # fmt: skip

    wrong = gate.tmp / "wrong"
    refused = gate._run([*common, "--expect-digest", "0" * 64, "--out", str(wrong)], wrong)
    assert refused.code == 2, refused.stdout + refused.stderr
    assert digest in refused.stderr  # the live digest is named
    assert not wrong.exists()

    out = gate.tmp / "ok"
    out.mkdir()
    ran = gate._run([*common, "--expect-digest", digest, "--out", str(out), "--json"], out)
    assert ran.code == 0, ran.stdout + ran.stderr
    assert ran.files() == {"property_ledger.json"}  # alone: no receipt, no other ledger
    ledger = ran.file("property_ledger.json")
    assert (ledger["kind"], ledger["fixture_digest"], ledger["oracle_moved"]) == (
        "property",
        digest,
        True,
    )
    assert ledger["status_by_id"] == {
        "billing.prorate.non_negative": "pass",
        "billing.prorate.bounded": "pass",
        "billing.invoice_total.matches_fixture": "pass",
        "billing.orders.boundary_non_negative": "pass",
        "billing.prorate.exact": "pass",
    }  # the quarantined checkout property (FLK-1044) does not run
    assert sorted(r["run_index"] for r in ledger["runs"]) == [1] * 5 + [2] * 5
    assert json.loads(ran.stdout)["oracle_moved"] is True
