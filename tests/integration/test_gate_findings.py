"""Issue 13: the receipt lists every finding, and ``check`` exits 64/78 for a bad base.

Every changed symbol with credit 0 gets R1 and a reason in ``uncredited`` whatever stopped the run;
static codes are all listed even when an earlier one stopped it; an empty fixture pin with no
fixture root is ``not_applicable``; an unknown ``--base`` is a usage error (64) and invalid pins in
the base a configuration error (78) naming every problem. Real signer, executor and Docker.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from patchgate.digest import Manifest
from tests.integration.fixtures_gate import BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]

STOPPED = "the run was stopped before execution"


def _git(repo: BillingRepo, *args: str) -> str:
    who = ["-c", "user.name=p", "-c", "user.email=p@e"]
    return subprocess.run(
        ["git", "-C", str(repo.path), *who, *args], check=True, capture_output=True, text=True
    ).stdout


def _commit(repo: BillingRepo, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)


def _edit_json(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2))


def _agent_patch(repo: BillingRepo, tmp: Path, path: str, old: str, new: str) -> Path:
    """An agent's patch replacing ``old`` by ``new`` in ``path`` (the base stays committed)."""
    target = repo.path / path
    text = target.read_text()
    assert old in text
    target.write_text(text.replace(old, new))
    patch = tmp / f"agent-{path.replace('/', '_')}.patch"
    patch.write_text(_git(repo, "diff"))
    _git(repo, "checkout", "--", path)
    return patch


def test_oracle_moved_and_unknown_freeze_lists_r7_r4_and_r1(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """Issue 13: a patch that moves the oracle *and* cites an unknown freeze id showed only R7."""
    run = gate.check(billing_repo, "unknown_freeze.patch")
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert {"R1", "R4", "R7"} <= set(r["rejection_codes"])
    assert r["credits"] == {"billing.prorate": 0}
    assert r["uncredited"]["billing.prorate"]  # says why
    assert "property_ledger.json" not in run.files()


def test_oracle_moved_gives_r1_to_every_changed_symbol(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "oracle_moved.patch")
    r = run.receipt
    assert (run.code, r["posture"]) == (1, "reject_oracle_moved")
    assert r["rejection_codes"] == ["R1", "R7"]
    assert r["uncredited"] == {"billing.prorate": f"{STOPPED}: reject_oracle_moved"}
    assert r["schema"] == "patchgate/receipt/v2"


def test_reject_class_gives_r1_to_every_changed_symbol(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """A person's base makes a prorate property ``bounded_time``: the matrix says reject_class."""
    props = billing_repo.path / "pins" / "properties.json"

    def ineligible(doc: dict[str, Any]) -> None:
        for p in doc["properties"]:
            if p["id"] == "billing.prorate.bounded":
                p["class"] = "bounded_time"

    _edit_json(props, ineligible)
    _commit(billing_repo, "prorate bound: bounded_time")
    run = gate.check(billing_repo, "worked_example.patch")
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert (r["decision"], r["posture"]) == ("reject_class", "reject_admission")
    assert r["credits"] == {"billing.prorate": 0, "billing.invoice_total": 0}
    assert r["rejection_codes"] == ["R1", "R5"]  # R5: the static finding is listed too
    assert r["uncredited"]["billing.invoice_total"] == "fixture equality only (R5)"
    prorate = r["uncredited"]["billing.prorate"]
    assert "class bounded_time is not eligible" in prorate
    assert f"{STOPPED}: reject_admission" in prorate
    assert "property_ledger.json" not in run.files()


SLOW_TEST = """\
import time
from decimal import Decimal

from billing import Line


def test_net_non_negative_slowly():
    time.sleep(120)
    line = Line("a", 2, Decimal("1.50"))
    assert line.net >= 0
"""


def test_symbol_whose_only_property_ran_past_its_bound_gets_r1_and_the_reason(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """Issue 13: credit 0 but no R1 for a symbol whose only property exceeded its bound."""
    (billing_repo.path / "properties" / "test_slow.py").write_text(SLOW_TEST)
    _edit_json(
        billing_repo.path / "pins" / "fixtures.json", lambda d: d.update(clock_bound_ms=8000)
    )

    def slow(doc: dict[str, Any]) -> None:
        doc["properties"].append({
            "id": "billing.line.net_non_negative", "claim": "a line's net is never negative",
            "class": "pure_fn", "covers": ["billing.Line"],
            "command": ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "properties/test_slow.py::test_net_non_negative_slowly"],
        })  # fmt: skip

    _edit_json(billing_repo.path / "pins" / "properties.json", slow)
    _commit(billing_repo, "a slow property of Line")
    patch = _agent_patch(
        billing_repo,
        tmp_path,
        "billing/__init__.py",
        "(self.quantity * self.unit_price - self.discount)",
        "(self.unit_price * self.quantity - self.discount)",
    )
    run = gate.check(billing_repo, patch)
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    (symbol,) = [s for s in r["changed_symbols"] if "Line" in s]
    assert r["credits"][symbol] == 0
    assert "R1" in r["rejection_codes"]
    assert r["uncredited"][symbol] == "ran past its bound"
    runs = r["evidence"][symbol]["billing.line.net_non_negative"]["runs"]
    assert runs == ["exceeded_bound", "exceeded_bound"]
    assert r["posture"] == "reject_property_miss"


def test_empty_pin_without_fixture_root_is_not_applicable(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """No fixture root and an empty pin: no hash is invented; the signed manifest still pins seed,
    bound and commands, and its digest is the receipt's. Issue 23: no fixtures, no admit -- the
    same honest patch that admits with fixtures is rejected (it was admitted, exit 0)."""
    shutil.rmtree(billing_repo.path / "fixtures")
    _edit_json(billing_repo.path / "pins" / "fixtures.json", lambda d: d.update(files={}))

    def prorate_only(doc: dict[str, Any]) -> None:
        doc["properties"] = [p for p in doc["properties"] if p["id"].startswith("billing.prorate")]

    _edit_json(billing_repo.path / "pins" / "properties.json", prorate_only)
    _commit(billing_repo, "no fixtures")
    run = gate.check(billing_repo, "prorate_refactor.patch")
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert (r["fixture_status"], r["posture"], r["admit"]) == (
        "not_applicable",
        "reject_credit",
        False,
    )
    assert r["coverage"] == 1.0
    assert r["rejection_codes"] == []
    assert "commit one fixture that can falsify a claim and pin it" in run.stdout
    pin = json.loads((billing_repo.path / "pins" / "fixtures.json").read_text())
    manifest = Manifest(
        pin_id=pin["pin_id"],
        algorithm="sha256",
        files={},
        seed=pin["seed"],
        clock_bound_ms=pin["clock_bound_ms"],
        allowed_commands=tuple(tuple(c) for c in pin["allowed_commands"]),
    )
    assert r["fixture_digest"] == manifest.digest()
    held = gate.verify(run.out / "receipt.json", billing_repo)
    assert held.code == 0, held.stdout + held.stderr


def test_unknown_base_is_a_usage_error_64(gate: Gate, billing_repo: BillingRepo) -> None:
    """Issue 13: an unknown --base exited 1 ("git show failed")."""
    run = gate.check(billing_repo, "prorate_refactor.patch", base="no-such-branch")
    assert run.code == 64, run.stderr
    assert "no-such-branch" in run.stderr
    assert "receipt.json" not in run.files()


def test_invalid_base_pins_exit_78_listing_every_error(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    def broken(doc: dict[str, Any]) -> None:
        doc["properties"][0]["class"] = "pure_function"
        doc["properties"][2]["covers"] = "billing.invoice_total"

    _edit_json(billing_repo.path / "pins" / "properties.json", broken)
    _commit(billing_repo, "two mistakes in the pins")
    run = gate.check(billing_repo, "prorate_refactor.patch")
    assert run.code == 78, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert any("properties[0].class" in line for line in lines)
    assert any("properties[2].covers" in line for line in lines)
    assert len([line for line in lines if line.startswith("patchgate: configuration error")]) == 2
    assert "receipt.json" not in run.files()
