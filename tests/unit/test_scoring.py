"""Credit with its evidence: which symbols reach the mutation stage, and what the receipt's
``mutation`` entry records, with the stage given as a function (no executor here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from client.verdict.credit import MutationResult
from client.verdict.scoring import (
    JUDGE_OFF,
    Findings,
    MutationTerms,
    score_with_evidence,
)
from client.verdict.stability import assess
from patchgate.pins import PropertyPin
from tests.unit._gate_helpers import prop, run

F, G = prop("p.f", ("m.f",)), prop("p.g", ("m.g",))


def killed(pid: str) -> MutationResult:
    """One mutant of two killed by ``pid``, every control passed."""
    return MutationResult(made=2, sites=2, candidates=2, killed={pid: ("a at line 2",)},
                          survived={pid: ("b at line 3",)}, controls={pid: 7})  # fmt: skip


NOTICED = "the patch adds code that can observe its own mutation (m.py:2 name __code__)"


def _found(untrusted: Mapping[str, str] | None = None) -> Findings:
    local = {p.id: assess(p.id, [run(p.id, 1, "pass"), run(p.id, 2, "pass")]) for p in (F, G)}
    return Findings(
        symbols=("m.f", "m.g"),
        suite=(F, G),
        classes={"p.f": "property", "p.g": "property"},
        local=local,
        remote={},
        executed={"m.f": {"p.f": True}, "m.g": {"p.g": True}},
        untrusted=untrusted or {},
    )


class Stage:
    """The mutation stage, faked: every symbol it is given was killed; it records the calls."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def __call__(
        self, candidates: Mapping[str, Sequence[PropertyPin]]
    ) -> tuple[Mapping[str, MutationResult], Mapping[str, Any]]:
        self.asked.append(sorted(candidates))
        found = {s: killed(props[0].id) for s, props in candidates.items()}
        return found, {"enabled": True, "symbols": {}}


def test_a_symbol_whose_mutation_the_patch_could_notice_runs_no_mutant_and_earns_nothing() -> None:
    stage = Stage()
    report, record = score_with_evidence(
        _found({"m.f": NOTICED}), MutationTerms(mutants=4), stage, lambda _m: None
    )
    assert stage.asked == [["m.g"]]
    assert report.credits == {"m.f": 0, "m.g": 1}
    assert report.uncredited["m.f"] == f"mutation evidence not trusted: {NOTICED}"
    assert record["untrusted"] == {"m.f": NOTICED}


def test_honest_symbols_run_their_mutants_and_are_credited() -> None:
    stage = Stage()
    report, record = score_with_evidence(_found(), MutationTerms(mutants=4), stage, print)
    assert stage.asked == [["m.f", "m.g"]]
    assert report.credits == {"m.f": 1, "m.g": 1}
    assert "untrusted" not in record


def test_judge_off_runs_no_mutant_at_all() -> None:
    stage = Stage()
    terms = MutationTerms(mutants=4, judge="off")
    report, record = score_with_evidence(_found(), terms, stage, lambda _m: None)
    assert stage.asked == []
    assert report.credits == {"m.f": 0, "m.g": 0}
    assert record["untrusted"] == {"m.f": JUDGE_OFF, "m.g": JUDGE_OFF}
    assert record["mutants_run"] == 0


def test_with_the_stage_off_the_executed_rule_alone_scores_and_the_entry_says_so() -> None:
    stage = Stage()
    terms = MutationTerms(mutants=0, allow_unmutated=True, min_mutation_score=0.9)
    report, record = score_with_evidence(_found(), terms, stage, lambda _m: None)
    assert stage.asked == []
    assert report.credits == {"m.f": 1, "m.g": 1}
    assert record == {"enabled": False, "allow_unmutated": True, "min_mutation_score": 0.9,
                      "controls_required": 2}  # fmt: skip
