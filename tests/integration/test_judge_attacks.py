"""The judge apart (issue 20), attacked through ``patchgate check`` with a real signer, a real
executor and real containers. Each patch is the regression of ``prorate`` (negative ``used_days``
no longer clamped) plus a trick; its control is the same regression without the trick, rejected.

Under ``--judge on`` (the default) every trick is a property miss or an error, never a pass.
Where the old single-process run is the point, the same patch under ``--judge off`` shows what
the trick did there: the broken properties pass and the regressed symbol is credited.

Cheap on purpose: one daemon pair for the module, ``--mutants 0`` (the stage is beside the point
here; such a check is never admitted, so what is asserted is each property's status and the
symbol's credit), a 5-second clock bound in the base, several tricks in one patch where they do
not mask each other.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.attacks.repos import CORPUS, build, git
from tests.integration.fixtures_gate import BillingRepo, Gate, GateRun, own_gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PATCHES = CORPUS / "patches"
PRORATE = ("billing.prorate.non_negative", "billing.prorate.bounded")
BOUND_MS = 5000


@pytest.fixture(scope="module")
def judge_gate(docker_engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gate]:
    with own_gate(tmp_path_factory.mktemp("judge-attacks")) as gate:
        yield gate


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The billing example with a short clock bound (a subject that never answers costs 5 s)."""
    repo = build("billing", tmp_path_factory.mktemp("judge-base") / "billing")
    pin = repo / "pins" / "fixtures.json"
    doc = json.loads(pin.read_text(encoding="utf-8"))
    doc["clock_bound_ms"] = BOUND_MS
    pin.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    git(repo, "commit", "-qam", "a short clock bound for the attack tests")
    return repo


def _check(gate: Gate, base: Path, tmp: Path, patch: str, judge: str) -> GateRun:
    repo = tmp / f"repo-{patch}-{judge}"
    shutil.copytree(base, repo, symlinks=True)
    return gate.check(BillingRepo(repo), PATCHES / f"{patch}.patch", judge=judge, mutants="0")


def _statuses(run: GateRun) -> dict[str, str]:
    ledger: dict[str, Any] = run.file("property_ledger.json")
    return {p: ledger["status_by_id"][p] for p in PRORATE}


def _failures(run: GateRun, pid: str) -> str:
    """Every failure signature of ``pid``'s runs, one per line."""
    runs = run.file("property_ledger.json")["runs"]
    return "\n".join(r["failure_signature"] for r in runs if r["property_id"] == pid)


def _never_passed(run: GateRun) -> None:
    where = run.stdout + run.stderr
    assert run.code == 1, where
    assert run.receipt["admit"] is False, where
    assert run.receipt["judge"] == "on", where
    # the regression is caught by non_negative only (bounded never samples a negative used_days)
    status = _statuses(run)["billing.prorate.non_negative"]
    assert status in {"fail", "error", "exceeded_bound"}, (status, where)


def test_the_control_regression_is_a_property_miss(
    judge_gate: Gate, base: Path, tmp_path: Path
) -> None:
    """The regression alone: the judge's own predicate fails it in both runs."""
    run = _check(judge_gate, base, tmp_path, "judge_control_regression", "on")
    _never_passed(run)
    assert run.receipt["posture"] == "reject_property_miss", run.stdout
    assert _statuses(run)["billing.prorate.non_negative"] == "fail"
    assert "assert" in _failures(run, "billing.prorate.non_negative")


@pytest.mark.parametrize("patch", ["judge_reporter_forger", "judge_amount_answers_comparisons"])
def test_a_trick_that_won_in_one_process_loses_to_the_judge(
    judge_gate: Gate, base: Path, tmp_path: Path, patch: str
) -> None:
    """A forger of the reporter (reached through sys.modules, os.sys.modules, logging.sys.modules
    and a computed sys.__dict__ key) and a result that answers comparisons, __eq__, __bool__ and
    __hash__ itself: credited under --judge off, never a pass under the judge."""
    old = _check(judge_gate, base, tmp_path, patch, "off")
    where = old.stdout + old.stderr
    assert old.receipt["judge"] == "off", where
    assert _statuses(old) == dict.fromkeys(PRORATE, "pass"), where
    assert old.receipt["credits"]["billing.prorate"] == 1, where
    assert old.receipt["admit"] is False  # --mutants 0 and --judge off: scored, never admitted
    run = _check(judge_gate, base, tmp_path, patch, "on")
    _never_passed(run)
    failures = _failures(run, "billing.prorate.non_negative")
    if patch == "judge_reporter_forger":  # no reporter in the subject: the predicate itself fails
        assert _statuses(run)["billing.prorate.non_negative"] == "fail", failures
        assert "assert" in failures
    else:  # the Amount is a handle: comparing it in the judge is an error that says so
        assert _statuses(run)["billing.prorate.non_negative"] == "error", failures
        assert "cannot be judged directly" in failures, failures


def test_a_hostile_subject_cannot_reach_the_judge(
    judge_gate: Gate, base: Path, tmp_path: Path
) -> None:
    """The subject reads /proc/<pid>/mem, environ and fds of every other process (the judge's and
    PID 1's), SIGSTOPs them, connects to the report socket, floods every inherited pipe, prints a
    passing summary, kills its process group and exits 0: an error, never a pass."""
    run = _check(judge_gate, base, tmp_path, "judge_hostile_subject", "on")
    _never_passed(run)
    assert _statuses(run)["billing.prorate.non_negative"] == "error", run.stdout
    assert "subject" in _failures(run, "billing.prorate.non_negative")


def test_a_subject_that_never_answers_exceeds_the_bound(
    judge_gate: Gate, base: Path, tmp_path: Path
) -> None:
    run = _check(judge_gate, base, tmp_path, "judge_subject_never_answers", "on")
    _never_passed(run)
    assert _statuses(run)["billing.prorate.non_negative"] == "exceeded_bound", run.stdout


def test_judge_off_is_admitted_only_where_the_base_allows_it(
    judge_gate: Gate, base: Path, tmp_path: Path
) -> None:
    """The honest refactor admits under the judge. Under --judge off no mutant runs (mutation v2
    serves them to the judge's subject from memory; the single-process run has none), so it earns
    no mutation credit and is not admitted; only a base whose reviewed configuration allows both
    the single-process run and an unmutated check admits it, with --mutants 0."""
    patch = CORPUS / "patches" / "control_billing_refactor.patch"
    repo = tmp_path / "repo"
    shutil.copytree(base, repo, symlinks=True)
    on = judge_gate.check(BillingRepo(repo), patch)
    assert (on.code, on.receipt["admit"], on.receipt["judge"]) == (0, True, "on"), on.stdout
    off = judge_gate.check(BillingRepo(repo), patch, judge="off")
    assert (off.code, off.receipt["admit"], off.receipt["posture"]) == (1, False, "reject_credit")
    assert off.receipt["credits"] == {"billing.prorate": 0}
    assert "with --judge off no mutant runs" in off.receipt["uncredited"]["billing.prorate"]
    assert "allow_judge_off" in off.stdout + off.stderr
    text = (repo / "pyproject.toml").read_text(encoding="utf-8")
    allow = "allow_judge_off = true\nallow_unmutated = true\n"
    (repo / "pyproject.toml").write_text(
        text.replace("[tool.patchgate]\n", f"[tool.patchgate]\n{allow}"), encoding="utf-8"
    )
    git(repo, "commit", "-qam", "this base may be checked without the judge and without mutants")
    still = judge_gate.check(BillingRepo(repo), patch, judge="off")
    assert (still.code, still.receipt["admit"]) == (1, False)  # the stage on: still no credit
    allowed = judge_gate.check(BillingRepo(repo), patch, judge="off", mutants="0")
    assert (allowed.code, allowed.receipt["admit"], allowed.receipt["judge"]) == (0, True, "off")
