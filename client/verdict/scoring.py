"""Credit with its evidence: score by the executed rule, then, with the mutation stage on, score
again with what each symbol's mutants showed.

The stage itself runs elsewhere (``client.gate.runs.mutation``); here it is a function of the
candidates (symbol -> the properties that would credit it) that returns the stage's findings and
the receipt's ``mutation`` entry. Which symbols may run mutants, and what the entry records when
none ran, is decided here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from client.verdict.credit import (
    CreditReport,
    MutationFindings,
    MutationResult,
    required_controls,
    score,
)
from client.verdict.stability import Stability
from patchgate.pins import PropertyPin
from patchgate.receipt_parts import MutationRecord
from patchgate.vocabulary import JudgeName

__all__ = ["JUDGE_OFF", "Findings", "Mutate", "MutationTerms", "score_with_evidence"]

JUDGE_OFF = (
    "with --judge off no mutant runs (mutation v2 serves each mutant and control to the judge's "
    "subject from memory; the single-process run has no subject)"
)

#: The mutation stage: candidates -> (symbol -> what its mutants showed, the ``mutation`` entry).
Mutate = Callable[
    [Mapping[str, Sequence[PropertyPin]]], tuple[Mapping[str, MutationResult], MutationRecord]
]


@dataclass(frozen=True, kw_only=True)
class Findings:
    """What the runs showed: the changed symbols, the suite and its assertion classes, each
    property's local and remote runs, which symbols every local run executed (symbol ->
    property -> bool), and the symbols whose mutation evidence would not be trusted (symbol ->
    why the patch's code could notice its mutation)."""

    symbols: Sequence[str]
    suite: Sequence[PropertyPin]
    classes: Mapping[str, str]
    local: Mapping[str, Stability]
    remote: Mapping[str, Stability]
    executed: Mapping[str, Mapping[str, bool]]
    untrusted: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class MutationTerms:
    """How the stage runs: ``mutants`` a symbol at most (0: off), the judge mode (``off``: no
    mutant runs), and the base configuration's ``allow_unmutated`` and threshold."""

    mutants: int
    judge: JudgeName = "on"
    allow_unmutated: bool = False
    min_mutation_score: float = 0.5


def score_with_evidence(
    found: Findings, terms: MutationTerms, mutate: Mutate, say: Callable[[str], None]
) -> tuple[CreditReport, MutationRecord]:
    """Score with the executed rule, then (``terms.mutants`` > 0) run the mutants of every symbol
    that would earn credit and score again with what they showed. A symbol in
    ``found.untrusted`` runs no mutant and gets no mutation credit, the reason says why; the
    others run as usual, and the record keeps the ``untrusted`` map.

    Returns the report and the receipt's ``mutation`` entry, which records the threshold and the
    controls it requires whether or not the stage ran.
    """
    min_score = terms.min_mutation_score
    threshold = MutationRecord(
        min_mutation_score=min_score, controls_required=required_controls(min_score)
    )

    def scored(mutation: Mapping[str, MutationResult] | None) -> CreditReport:
        return score(
            changed_symbols=found.symbols,
            suite=found.suite,
            assertion_classes=found.classes,
            local=found.local,
            remote=found.remote,
            executed=found.executed,
            mutation=None if mutation is None else MutationFindings(mutation, min_score),
        )

    first = scored(None)
    if terms.mutants <= 0:
        return first, MutationRecord(
            enabled=False, allow_unmutated=terms.allow_unmutated, **threshold
        )
    by_id = {p.id: p for p in found.suite}
    candidates: dict[str, list[PropertyPin]] = {}
    for row in first.rows:
        if row.credit == 1 and row.property_id in by_id:
            candidates.setdefault(row.symbol, []).append(by_id[row.property_id])
    symbols = found.symbols
    distrusted = {sym: why for sym, why in found.untrusted.items() if sym in symbols and why}
    if terms.judge == "off":
        distrusted = {sym: JUDGE_OFF for sym in candidates} | distrusted
    for symbol in sorted(set(candidates) & set(distrusted)):
        say(f"mutation: {symbol} not run, its evidence would not be trusted: {distrusted[symbol]}")
    stopped = {
        sym: MutationResult(untrusted=distrusted[sym]) for sym in candidates if sym in distrusted
    }
    candidates = {sym: props for sym, props in candidates.items() if sym not in distrusted}
    if stopped and not candidates:
        results: dict[str, MutationResult] = {}
        record = MutationRecord(enabled=True, k=terms.mutants)
        record.update(threshold)
        record.update(MutationRecord(mutants_run=0, elapsed_ms=0, symbols={}))
    else:
        say(
            f"mutation: every mutant on the lines the patch wrote, up to {terms.mutants} per "
            f"symbol, for {len(candidates)} symbol(s), with {threshold['controls_required']} "
            "hidden controls each"
        )
        ran, entry = mutate(candidates)
        results, record = dict(ran), entry.copy()
    results.update(stopped)
    if distrusted:
        record["untrusted"] = dict(sorted(distrusted.items()))
    # A symbol no property would credit keeps its first reason: the stage did not reach it.
    return scored({symbol: results.get(symbol, MutationResult()) for symbol in symbols}), record
