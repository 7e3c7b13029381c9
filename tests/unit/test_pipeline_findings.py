"""A check that stops before the signer still lists every finding (issue 13, item 5).

These checks never reach a daemon (provenance, oracle, pins, fixtures stop them first), so they
run the real pipeline on a git copy of examples/billing with no socket: the signer address points
nowhere and is never dialled.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path

import pytest

from client.gate.pipeline import run_check
from client.gate.settings import CheckSettings

ROOT = Path(__file__).resolve().parents[2]
BILLING = ROOT / "examples" / "billing"
PATCHES = BILLING / "patches"
STOPPED = "the run was stopped before execution"


@pytest.fixture
def billing(tmp_path: Path) -> Path:
    repo = tmp_path / "billing"
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    who = ["-c", "user.name=p", "-c", "user.email=p@e"]
    for args in (["init", "-q"], ["add", "-A"], [*who, "commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return repo


def _check(repo: Path, tmp: Path, patch: str, drafter: str | None = "model_lane"):  # type: ignore[no-untyped-def]
    settings = CheckSettings(
        repo=repo,
        base="HEAD",
        patch=PATCHES / patch,
        draft_id="draft-1",
        drafter=drafter,
        signer=f"unix:{tmp}/nobody.sock",
        executors=(f"unix:{tmp}/nobody-either.sock",),
        clock=dt.datetime(2026, 9, 10, 12, tzinfo=dt.UTC),
        out=tmp / "ledgers",
    )
    return run_check(settings, progress=lambda _msg: None)


def test_missing_drafter_still_lists_the_changed_symbols_with_r1(
    billing: Path, tmp_path: Path
) -> None:
    result = _check(billing, tmp_path, "prorate_refactor.patch", drafter=None)
    r = result.receipt
    assert (r.decision, r.posture) == ("reject_provenance", "reject_admission")
    assert r.changed_symbols == ["billing.prorate"]
    assert r.credits == {"billing.prorate": 0}
    assert r.rejection_codes == ["R1"]
    assert r.uncredited == {"billing.prorate": f"{STOPPED}: reject_admission"}
    assert not (tmp_path / "ledgers" / "provenance.json").exists()
    assert result.verdict.exit_code == 1


def test_oracle_move_lists_r1_and_r7_with_evidence_of_no_run(billing: Path, tmp_path: Path) -> None:
    r = _check(billing, tmp_path, "oracle_moved.patch").receipt
    assert (r.posture, r.rejection_codes) == ("reject_oracle_moved", ["R1", "R7"])
    assert r.evidence["billing.prorate"]["billing.prorate.non_negative"]["runs"] == []


def test_fixture_refusal_lists_r1_and_the_static_r5(billing: Path, tmp_path: Path) -> None:
    result = _check(billing, tmp_path, "fixture_rewrite.patch")
    r = result.receipt
    assert (r.posture, result.verdict.exit_code) == ("reject_unscored", 2)
    assert r.rejection_codes == ["R1", "R2", "R5"]
    assert r.uncredited["billing.invoice_total"] == "fixture equality only (R5)"


def test_unknown_freeze_with_a_moved_oracle_lists_every_static_code(
    billing: Path, tmp_path: Path
) -> None:
    r = _check(billing, tmp_path, "unknown_freeze.patch").receipt
    assert r.posture == "reject_pin_mutation"
    # No R3: the xfail citation stands beside a real predicate on billing.prorate (issue 17).
    assert r.rejection_codes == ["R1", "R4", "R7", "R8"]
