"""Mutation v2 through ``patchgate check`` with a real signer, executor and Docker (issue 21).

A kill is the property's own predicate failing in the judge; a crash (an exception of the
subject's, ``None >= 0`` in the judge) or a hang is listed and never scored; the mutants are on
the lines the patch wrote, every one of them under the cap (``--mutants 16``: the refactor has
eight), served from memory with hidden controls in one sandbox per batch. Each attack of the
issue has its test beside its control; the patch is the example's ``prorate_refactor.patch``
(lines 39-41 of ``billing/__init__.py``) unless a test writes its own.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fixtures_gate import PATCHES, BillingRepo, Gate, GateRun
from tests.integration.test_gate_vacuous import PYTEST, TEST_FILE, _base_commit, _git

pytestmark = [pytest.mark.integration, pytest.mark.docker]

ALL = ("--mutants", "16")  # every changed-line mutant of the refactor (eight): no sample
LOOP = (
    "amount: Decimal = Decimal(rng.randint(0, 10**6)) / 100\n"
    "        period = rng.randint(1, 366)\n"
    "        used = rng.randint(-10, 400)\n"
)
WEAK = {
    "is_not_none": "assert prorate(amount, used, period) is not None",
    "isinstance": "assert isinstance(prorate(amount, used, period), Decimal)",
}


def _weak_source(form: str) -> str:
    return (
        f"\n\ndef test_weak_{form}(rng):\n    for _ in range(200):\n        {LOOP}"
        f"        {WEAK[form]}\n"
    )


def _pin(pid: str, function: str) -> dict[str, Any]:
    return {
        "id": pid,
        "claim": f"{function} (issue 21: a kill is the predicate's failure)",
        "class": "pure_fn",
        "covers": ["billing.prorate"],
        "command": [*PYTEST, f"{TEST_FILE}::{function}"],
    }


def _patch_of(repo: BillingRepo, rel: str, text: str, out: Path) -> Path:
    """A patch (``git diff``) that gives ``rel`` the content ``text``; the tree stays as it was."""
    path = repo.path / rel
    old = path.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    try:
        diff = subprocess.run(
            ["git", "-C", str(repo.path), "diff", "--", rel],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
    finally:
        path.write_text(old, encoding="utf-8")
    out.write_text(diff, encoding="utf-8")
    return out


def _refactored(repo: BillingRepo, body: str) -> str:
    """billing/__init__.py with prorate's two last lines replaced by ``body`` (indented)."""
    text = (repo.path / "billing" / "__init__.py").read_text(encoding="utf-8")
    old = (
        "    used = min(max(used_days, 0), period_days)\n"
        "    return (amount * used / period_days).quantize(CENT, ROUND_HALF_EVEN)\n"
    )
    assert old in text
    return text.replace(old, body)


def _threshold(repo: BillingRepo, value: str) -> None:
    """A person's base commit: the example's min_mutation_score set to ``value``."""
    pyproject = repo.path / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(
        text.replace("min_mutation_score = 0.9\n", f"min_mutation_score = {value}\n"),
        encoding="utf-8",
    )
    _git(repo.path, "commit", "-qam", f"min_mutation_score {value}")


def _evidence(run: GateRun, pid: str) -> dict[str, Any]:
    shown: dict[str, Any] = run.receipt["evidence"]["billing.prorate"][pid]
    return shown


def test_a_strong_property_earns_credit_on_the_lines_the_patch_wrote(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """Control of every weak case below: the example's exact property kills six of the eight
    changed-line mutants, the two that crash are listed and not scored; the controls the
    example's min_mutation_score (0.9) asks for passed."""
    run = gate.check(billing_repo, "prorate_refactor.patch", *ALL)
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert (r["credits"], r["admit"]) == ({"billing.prorate": 1}, True)
    exact = _evidence(run, "billing.prorate.exact")
    assert (exact["killed"], exact["scored"], exact["score"]) == (6, 6, 1.0), exact
    assert exact["survivors"] == []
    assert len(exact["crashed"]) == 2, exact  # `pass` on an assignment: a NameError of the subject
    symbols = r["mutation"]["symbols"]["billing.prorate"]
    # 0.9: two controls per batch; the eight mutants are dealt into the lane's two idle batch
    # slots (four each), each batch with its own two controls
    assert r["mutation"]["controls_required"] == 2
    assert exact["controls"] == symbols["controls"] == 2 * symbols.get("batches", 1), symbols
    assert exact["controls_failed"] == [], exact
    assert "seed" not in exact  # eight candidates under a cap of 16: no sample, no randomness
    labels = [*exact["crashed"], *exact["survivors"]]
    lines = {int(m) for m in re.findall(r" at line (\d+)", " ".join(labels))}
    assert lines <= {39, 40, 41}, labels  # only the lines the patch wrote
    assert (symbols["made"], symbols["candidates"]) == (8, 8), symbols
    # the example's weaker properties are scored too, and stay below the threshold
    for pid in ("billing.prorate.non_negative", "billing.prorate.bounded"):
        assert _evidence(run, pid)["score"] < r["mutation"]["min_mutation_score"], pid
    verified = gate.verify(run.out / "receipt.json", billing_repo)
    assert verified.code == 0, verified.stdout + verified.stderr


@pytest.mark.parametrize("form", sorted(WEAK))
def test_a_property_that_checks_too_little_earns_nothing(
    gate: Gate, billing_repo: BillingRepo, form: str
) -> None:
    """``is not None`` and ``isinstance`` kill only the mutants that return None; the mutants
    that make the call raise are crashes, not kills (the property that checks only that its
    arguments are left alone: tests/integration/test_gate_evidence.py)."""
    pid = f"billing.prorate.weak_{form}"
    _base_commit(billing_repo, _weak_source(form), [_pin(pid, f"test_weak_{form}")], only=True)
    run = gate.check(billing_repo, "prorate_refactor.patch", *ALL)
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert r["credits"] == {"billing.prorate": 0}
    assert "R1" in r["rejection_codes"]
    shown = _evidence(run, pid)
    assert shown["runs"] == ["pass", "pass"]
    assert shown["crashed"], shown  # listed, never counted as kills
    assert shown["killed"] >= 1, shown
    assert shown["score"] < r["mutation"]["min_mutation_score"], shown
    assert "mutation score" in r["uncredited"]["billing.prorate"], r["uncredited"]


def test_two_patches_that_make_the_same_tree_get_one_verdict(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """The author's bytes outside the tree (a mail preamble, a different diff header) choose
    nothing: the mutants come from the trees, and under the cap there is no sample."""
    plain = (PATCHES / "prorate_refactor.patch").read_text(encoding="utf-8")
    mailed = tmp_path / "mailed.patch"
    mailed.write_text(
        "From 0123456789abcdef Mon Sep 17 00:00:00 2001\nFrom: someone <s@example.org>\n"
        "Subject: [PATCH] a comment chosen offline to pick the mutants\n\n"
        "Whatever words make the sample kind.\n---\n" + plain,
        encoding="utf-8",
    )
    runs = [gate.check(billing_repo, p, *ALL) for p in ("prorate_refactor.patch", mailed)]
    assert runs[0].receipt["patch_sha256"] != runs[1].receipt["patch_sha256"]
    keep = ("credits", "coverage", "uncredited", "rejection_codes", "admit", "posture")
    seen = [{k: run.receipt[k] for k in keep} for run in runs]
    assert seen[0] == seen[1]
    ev = [run.receipt["evidence"]["billing.prorate"] for run in runs]
    for pid in ev[0]:
        for key in ("killed", "scored", "survivors", "crashed", "hung", "mutants"):
            assert ev[0][pid][key] == ev[1][pid][key], (pid, key)


def test_a_guard_that_tells_the_mutation_stage_from_the_suite_trips_a_control(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """A patch whose code misbehaves only when it is not the first subject of its sandbox (the
    pid grows with every variant of a batch; each suite run is a fresh sandbox): at the default
    threshold (7 controls) it "kills"
    mutants late in the batch, and the controls there fail too, which voids the evidence. No
    introspection marker at all; its control is the strong test above (the same patch, no guard)."""
    body = (
        "    import os\n"
        "\n"
        "    used = max(0, min(used_days, period_days))\n"
        "    share = amount * used / period_days\n"
        "    if os.getpid() > 12:\n"
        "        share = -share - 1\n"
        "    return share.quantize(CENT, ROUND_HALF_EVEN)\n"
    )
    text = _refactored(billing_repo, body)
    _threshold(billing_repo, "0.5")  # 7 controls: one lands past the guard's line for sure
    patch = _patch_of(billing_repo, "billing/__init__.py", text, tmp_path / "guard.patch")
    run = gate.check(billing_repo, patch, *ALL)
    r = run.receipt
    assert run.file("property_ledger.json")["status_by_id"]["billing.prorate.exact"] == "pass"
    assert r["credits"] == {"billing.prorate": 0}, r["uncredited"]
    exact = _evidence(run, "billing.prorate.exact")
    assert exact["controls_failed"], exact  # the controls late in the batch failed too
    assert exact["killed"] >= 1, exact  # the guard's "kills": voided with the rest
    reason = r["uncredited"]["billing.prorate"]
    assert "billing.prorate.exact: mutation control failed" in reason, reason
    assert (run.code, r["admit"]) == (1, False), run.stdout + run.stderr


def test_a_mutant_that_never_ends_is_hung_never_a_kill(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """A loop the patch wrote: its arithmetic swap and its constant made 0 never end. They are
    ended by the supervisor at the mutant bound and listed as hung; the property still earns
    credit from its real kills."""
    body = (
        "    used = used_days\n"
        "    while used > period_days:\n"
        "        used -= 1\n"
        "    used = max(0, used)\n"
        "    return (amount * used / period_days).quantize(CENT, ROUND_HALF_EVEN)\n"
    )
    text = _refactored(billing_repo, body)
    patch = _patch_of(billing_repo, "billing/__init__.py", text, tmp_path / "loop.patch")
    run = gate.check(billing_repo, patch, "--mutants", "50")  # more than 16 sites: all of them
    exact = _evidence(run, "billing.prorate.exact")
    assert "seed" not in exact, exact
    hung = " ".join(exact["hung"])
    assert "arith at line 41" in hung, exact  # used += 1: never reaches the period
    assert "constant-1 at line 41" in hung, exact  # used -= 0
    assert exact["killed"] >= 1, exact
    assert exact["score"] >= run.receipt["mutation"]["min_mutation_score"], exact
    assert run.receipt["credits"] == {"billing.prorate": 1}, run.receipt["uncredited"]
    assert run.code == 0, run.stdout + run.stderr


def test_the_receipt_records_the_sample_when_the_cap_applies(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """``--mutants 4`` on eight candidates: four drawn from the OS's randomness, the seed in the
    receipt (verify-receipt still checks the arithmetic)."""
    run = gate.check(billing_repo, "prorate_refactor.patch", "--mutants", "4")
    symbols = run.receipt["mutation"]["symbols"]["billing.prorate"]
    assert (symbols["made"], symbols["candidates"]) == (4, 8), symbols
    assert isinstance(symbols["seed"], int), symbols
    verified = gate.verify(run.out / "receipt.json", billing_repo)
    assert verified.code == 0, verified.stdout + verified.stderr


AMPLIFIED = (  # prorate's result goes through a new helper that computes it again
    "    used = min(max(used_days, 0), period_days)\n"
    "    return _checked(amount, used, period_days,\n"
    "                    (amount * used / period_days).quantize(CENT, ROUND_HALF_EVEN))\n"
    "\n\n"
    "def _checked(amount: Decimal, used: int, period_days: int, share: Decimal) -> Decimal:\n"
    "    if share != (amount * used / period_days).quantize(CENT, ROUND_HALF_EVEN):\n"
    "        raise ArithmeticError('prorate is inconsistent')\n"
    "    return share\n"
)


@pytest.mark.xfail(
    strict=True, raises=AssertionError,
    reason="known limit (docs/mutation.md): code that checks itself turns its mutants into "
    "crashes, which are not scored, so a property that checks only `is not None` scores 1.0",
)  # fmt: skip
def test_code_that_turns_its_mutants_into_crashes_earns_a_weak_property_nothing(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """The attacker's patch checks itself: prorate hands its result to a new helper that
    computes it again and raises when the two differ. Every mutant of prorate's own lines that
    changes the value raises in the subject (crashed, never scored); the mutants that return
    None are all that is scored, and ``is not None`` kills each of them. Only the last assert
    is the known limit: whatever else goes wrong fails the test (``pytest.fail``), and the day
    the gate refuses this credit the strict mark fails it too."""
    pid = "billing.prorate.weak_is_not_none"
    _base_commit(billing_repo, _weak_source("is_not_none"),
                 [_pin(pid, "test_weak_is_not_none")], only=True)  # fmt: skip
    patch = _patch_of(
        billing_repo, "billing/__init__.py", _refactored(billing_repo, AMPLIFIED),
        tmp_path / "amplified.patch",
    )  # fmt: skip
    run = gate.check(billing_repo, patch, *ALL)
    shown = _evidence(run, pid)
    if shown["runs"] != ["pass", "pass"] or not shown["crashed"] or shown["controls_failed"]:
        pytest.fail(f"not the attack's shape: {shown}")
    assert run.receipt["credits"]["billing.prorate"] == 0, (shown, run.receipt["uncredited"])
