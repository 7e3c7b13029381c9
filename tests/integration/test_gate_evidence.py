"""Credit is evidence, through ``patchgate check`` with a real signer and executor (issue 15).

A covering property earns credit for a changed symbol only when its runs executed the symbol's
code (the executor's reporter says which targets each test called) and, with the mutation stage
on, it killed at least one mutant of the patched symbol. The patch is the example's harmless
``prorate_refactor.patch`` (it changes ``billing.prorate``), admitted for human review by the
example's own properties, which must kill a mutant of it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fixtures_gate import BillingRepo, Gate
from tests.integration.test_gate_vacuous import PYTEST, TEST_FILE, _base_commit, _git

pytestmark = [pytest.mark.integration, pytest.mark.docker]

NEVER_CALLS = """
def test_prorate_claimed_but_never_called():
    order = Order("X-1", (Line("a", 2, Decimal("1.50")),))
    assert invoice_total(order) >= 0
"""

WEAK = """
def test_prorate_leaves_its_arguments_alone(rng):
    for _ in range(50):
        args = [Decimal(rng.randint(0, 1000)), rng.randint(0, 40), rng.randint(1, 30)]
        before = list(args)
        try:
            prorate(*args)
        except Exception:
            pass
        assert args == before
"""


def _pin(pid: str, function: str) -> dict[str, Any]:
    return {
        "id": pid,
        "claim": f"{function} (issue 15: credit is evidence)",
        "class": "pure_fn",
        "covers": ["billing.prorate"],
        "command": [*PYTEST, f"{TEST_FILE}::{function}"],
    }


def test_a_strong_property_kills_mutants_and_credits(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch")
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert (r["posture"], r["admit"], r["credits"]) == (
        "human_review",
        True,
        {"billing.prorate": 1},
    )
    mutation = r["mutation"]
    assert (mutation["enabled"], mutation["k"]) == (True, 4)
    assert mutation["symbols"]["billing.prorate"]["made"] == 4
    shown = r["evidence"]["billing.prorate"]
    assert all(e["executed"] is True for e in shown.values()), shown
    assert any(e["killed"] >= 1 and e["mutants"] == 4 for e in shown.values()), shown
    for e in shown.values():  # mutation v2 (issue 21): crashed and hung are not scored
        assert e["scored"] == e["killed"] + len(e["survivors"])
        assert e["mutants"] == e["scored"] + len(e["crashed"]) + len(e["hung"])
        assert all(" at line " in s for s in e["survivors"])
        assert (e["controls"], e["controls_failed"]) == (mutation["controls_required"], [])
    lines = [x for x in run.stderr.splitlines() if x.startswith("[mutation ")]
    assert len(lines) == 4  # one progress line per mutant
    # the example's base asks min_mutation_score = 0.9: 2 controls (7 at the default 0.5)
    assert (mutation["min_mutation_score"], mutation["controls_required"]) == (0.9, 2)
    assert "billing.prorate: 2 control(s), passed" in run.stderr  # one for the batch's controls
    verified = gate.verify(run.out / "receipt.json", billing_repo)
    assert verified.code == 0, verified.stdout + verified.stderr


def test_a_property_that_never_calls_the_symbol_is_never_executed(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    source = "from billing import Line, Order\n" + NEVER_CALLS
    pin = _pin("billing.prorate.never", "test_prorate_claimed_but_never_called")
    _base_commit(billing_repo, source, [pin], only=True)
    run = gate.check(billing_repo, "prorate_refactor.patch")
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert run.file("property_ledger.json")["status_by_id"]["billing.prorate.never"] == "pass"
    assert r["credits"]["billing.prorate"] == 0
    assert r["uncredited"]["billing.prorate"] == "never executed"
    assert r["evidence"]["billing.prorate"]["billing.prorate.never"]["executed"] is False
    assert (r["posture"], r["admit"]) == ("reject_credit", False)
    assert "R1" in r["rejection_codes"]


def test_a_weak_property_lets_every_mutant_survive_and_does_not_credit(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    pin = _pin("billing.prorate.weak", "test_prorate_leaves_its_arguments_alone")
    _base_commit(billing_repo, WEAK, [pin], only=True)
    run = gate.check(billing_repo, "prorate_refactor.patch")
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    shown = r["evidence"]["billing.prorate"]["billing.prorate.weak"]
    assert shown["runs"] == ["pass", "pass"]
    assert (shown["executed"], shown["mutants"], shown["killed"]) == (True, 4, 0), shown
    assert len(shown["survivors"]) == 4
    assert r["uncredited"]["billing.prorate"] == (
        "killed no mutant — survivors: " + ", ".join(shown["survivors"])
    )
    assert (r["posture"], r["admit"]) == ("reject_credit", False)


def _allow_unmutated(repo: BillingRepo) -> None:
    pyproject = repo.path / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(
        text.replace("[tool.patchgate]\n", "[tool.patchgate]\nallow_unmutated = true\n")
    )
    _git(repo.path, "add", "-A")
    _git(repo.path, "commit", "-qm", "this project accepts checks without mutants")


def test_mutants_0_is_not_admitted_unless_the_base_allows_it(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch", "--mutants", "0")
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    off = {"enabled": False, "min_mutation_score": 0.9, "controls_required": 2}
    assert r["mutation"] == {**off, "allow_unmutated": False}
    assert (r["coverage"], r["posture"], r["admit"]) == (1.0, "reject_credit", False)
    assert "--mutants 0" in run.stdout + run.stderr
    _allow_unmutated(billing_repo)
    run = gate.check(billing_repo, "prorate_refactor.patch", "--mutants", "0")
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert r["mutation"] == {**off, "allow_unmutated": True}
    assert (r["posture"], r["admit"]) == ("human_review", True)
    assert "[mutation " not in run.stderr


def test_allow_unmutated_in_the_patch_itself_does_not_count(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """The setting is read from the reviewed base, never from the patch under review; a patch that
    writes it changes the pinned configuration, a pin mutation (R8)."""
    patches = Path(__file__).parents[2] / "examples/billing/patches"
    _git(billing_repo.path, "apply", str(patches / "prorate_refactor.patch"))
    pyproject = billing_repo.path / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(
            "[tool.patchgate]\n", "[tool.patchgate]\nallow_unmutated = true\n"
        )
    )
    own = tmp_path / "self_allow.patch"
    diff = subprocess.run(
        ["git", "-C", str(billing_repo.path), "diff"], check=True, capture_output=True
    )
    own.write_bytes(diff.stdout)
    _git(billing_repo.path, "checkout", "--", ".")  # the temp repo's HEAD stays the base
    run = gate.check(billing_repo, own, "--mutants", "0")
    r = run.receipt
    assert (r["posture"], r["admit"]) == ("reject_pin_mutation", False), json.dumps(r)
    assert "R8" in r["rejection_codes"]
