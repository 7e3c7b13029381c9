"""Per-symbol property credit, the reasons a symbol earned none, and the codes R1-R9.

One point per changed symbol (docs/mutation.md): some suite property covers it, is a real predicate
(assertion class ``property``) of an eligible class, and passed in both *local* runs. Every changed
symbol with credit 0 gets ``R1``, whatever stopped the run, and one line in ``uncredited`` saying
why (no property covers it; fixture equality only (R5); no visible predicate (an ``opaque``
test); the property failed in both runs; ran past its bound; unstable; the run was stopped before
execution: <posture>; ...). Per property::

    R3  a freeze citation is the only signal offered for a changed symbol (beside a real
        predicate, passing or not, a citation is listed and judged "never evidence", no R3)
    R5  a fixture equality / snapshot comparison is offered as its check
    R6  its only passing results come from a remote lane (remote runs confirm, never credit)

Credit is evidence (beside passing both runs): the property's runs must have **executed** the
symbol's code (``executed``: symbol -> property -> both runs called it; "never executed"), and when
the mutation stage ran (``mutation``: symbol -> :class:`MutationResult`) the property must have
killed at least one mutant of the symbol ("killed no mutant — survivors: ..."), reached the base's
``min_mutation_score`` (killed / (killed + survived); crashed and hung mutants are listed, never
scored: "mutation score 0.25 below 0.5 (...)"), run at least :func:`required_controls` hidden
controls and passed every one (a control that did not pass voids its mutation evidence: "mutation
control failed (...)"); a symbol of which no mutant could be made, or none ran, earns nothing.
``mutation`` None: the stage was off (the check is then not admitted unless the reviewed
configuration allows it; not decided here).

R3 and R5 are static (the assertion class of the pinned test), so they are listed even when the
run stopped before execution. Codes about the patch as a whole come from the other steps: R2
fixture mismatch, R4 unknown, expired or mismatched freeze id, R7 oracle moved, R8 pin mutation,
R9 drift between two pins. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from client.verdict.admission import covering
from client.verdict.stability import Stability
from patchgate.ledgers import REJECTION_CODES
from patchgate.pins import PropertyPin
from patchgate.receipt_parts import EvidenceEntry

__all__ = [
    "CONTROL_FAILED",
    "FREEZE_BESIDE",
    "FREEZE_ONLY",
    "NEVER_EXECUTED",
    "NO_MUTANT",
    "NO_PREDICATE",
    "NO_PROPERTY",
    "STOPPED_PREFIX",
    "CreditReport",
    "CreditRow",
    "MutationFindings",
    "MutationResult",
    "rejection_codes",
    "required_controls",
    "score",
]
STOPPED_PREFIX = "the run was stopped before execution: "

NO_PROPERTY = "no property covers it"
NO_PREDICATE = "no visible predicate"
NEVER_EXECUTED = "never executed"
NO_MUTANT = "no mutant could be made"
CONTROL_FAILED = "mutation control failed"
FREEZE_ONLY = "a freeze citation only (R3)"
FREEZE_BESIDE = "a freeze citation, never evidence"
_STATUS_REASONS = {
    "fail": "the property failed in both runs",
    "error": "the property failed in both runs",
    "exceeded_bound": "ran past its bound",
    "unstable": "unstable: it passed in one run only",
    "incomplete": "a run is missing (transport), nothing decided",
}


@dataclass(frozen=True, kw_only=True)
class CreditRow:
    """One line of the summary table: a changed symbol and one property offered for it."""

    symbol: str
    property_id: str
    assertion_class: str
    run1: str
    run2: str
    credit: int
    note: str = ""
    #: the table's ``exec`` (yes/no: both runs executed the symbol; - not traced or not run) and
    #: ``killed`` (killed/scored, crashed and hung left out; - the stage was off or did not reach
    #: this pair)
    executed: str = "-"
    killed: str = "-"


def required_controls(min_score: float) -> int:
    """Hidden controls a property must run (and pass) for its mutation evidence to count:
    max(2, ⌈ln 0.01 / ln(1 - s)⌉), 2 at s = 1 (docs/mutation.md). A hair of tolerance keeps a
    ratio that is an integer in exact arithmetic (s = 0.9: 2) from rounding up."""
    if not 0 < min_score <= 1:
        raise ValueError(f"min_mutation_score {min_score!r} is not in (0, 1]")
    if min_score == 1:
        return 2
    return max(2, math.ceil(math.log(0.01) / math.log1p(-min_score) - 1e-9))


def _labels(labels: Sequence[str]) -> str:
    return ", ".join(labels) or "-"


@dataclass(frozen=True, kw_only=True)
class MutationResult:
    """The mutation stage's findings for one symbol (v2, docs/mutation.md), by property.

    ``made``: mutants made for the symbol (after the cap); ``sites``: applicable (operator, site)
    pairs on the changed lines; ``candidates``: compiling mutants before the cap; ``skipped``:
    candidates that did not compile (or changed nothing); ``not_run``: mutants with no outcome
    even after one re-run (transport or refusal); ``seed``: the sample's seed when capped;
    ``problem``: why no mutant could be made; ``untrusted``: why the stage did not run at all —
    the patch adds code that could notice its own mutation, so a kill would prove nothing.

    Per property, the mutants' labels (``"arith at line 40"``): ``killed`` (the predicate
    failed), ``survived`` (it passed), ``crashed`` (``label: why`` — an exception marked the
    subject's, any other judge exception, an exit, a crash) and ``hung`` (past its bound);
    crashed and hung are listed, never kills, and not scored. ``controls``: hidden unmutated runs
    done per property; ``controls_failed``: how each control that did not pass ended.
    """

    made: int = 0
    sites: int = 0
    candidates: int = 0
    skipped: int = 0
    not_run: int = 0
    seed: int | None = None
    problem: str = ""
    untrusted: str = ""
    killed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    survived: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    crashed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    hung: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    controls: Mapping[str, int] = field(default_factory=dict)
    controls_failed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def scored(self, pid: str) -> int:
        """Mutants that count for ``pid``'s score: killed + survived."""
        return len(self.killed.get(pid, ())) + len(self.survived.get(pid, ()))

    def score(self, pid: str) -> float | None:
        """killed / (killed + survived) for ``pid``; None when nothing was scored."""
        scored = self.scored(pid)
        return len(self.killed.get(pid, ())) / scored if scored else None

    def ran(self, pid: str) -> int:
        """Mutants with an outcome for ``pid``: scored, crashed or hung."""
        return self.scored(pid) + len(self.crashed.get(pid, ())) + len(self.hung.get(pid, ()))

    def judge(self, property_id: str, min_score: float) -> tuple[int, str]:
        """(credit, why) of a property that passed and executed the symbol, against the base's
        ``min_mutation_score``."""
        pid = property_id
        if self.untrusted:
            return 0, f"mutation evidence not trusted: {self.untrusted}"
        if self.made == 0:
            return 0, NO_MUTANT + (f" ({self.problem})" if self.problem else "")
        if failed := self.controls_failed.get(pid, ()):
            return 0, f"{CONTROL_FAILED} ({'; '.join(failed)})"
        if self.ran(pid) == 0:
            return 0, f"no mutant ran ({self.not_run} not run: transport or refusal)"
        needed, controls = required_controls(min_score), self.controls.get(pid, 0)
        if controls < needed:
            return 0, f"only {controls} of the {needed} mutation controls ran"
        killed, survived = self.killed.get(pid, ()), self.survived.get(pid, ())
        unscored = self._unscored(pid)
        if not killed:
            if not survived:
                return 0, f"no mutant scored ({unscored})"
            tail = f" ({unscored})" if unscored else ""
            return 0, f"killed no mutant — survivors: {_labels(survived)}{tail}"
        got = len(killed) / self.scored(pid)
        if got < min_score:
            return 0, (
                f"mutation score {got:g} below {min_score:g} "
                f"({len(killed)} killed, {len(survived)} survived: {_labels(survived)})"
            )
        return 1, (
            f"passed both local runs, killed {len(killed)} of {self.scored(pid)} scored mutants "
            f"(score {got:g}, {controls} controls passed)"
        )

    def _unscored(self, pid: str) -> str:
        """``2 crashed: a, b; 1 hung: c, not scored``, or ``""``."""
        groups = (("crashed", self.crashed.get(pid, ())), ("hung", self.hung.get(pid, ())))
        parts = [f"{len(v)} {name}: {_labels(v)}" for name, v in groups if v]
        return "; ".join(parts) + (", not scored" if parts else "")


@dataclass(frozen=True, kw_only=True)
class CreditReport:
    """Credits per symbol, coverage, why a symbol earned nothing, evidence and the symbol codes."""

    credits: dict[str, int]
    coverage: float
    codes: tuple[str, ...]
    rows: tuple[CreditRow, ...]
    uncredited: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, dict[str, EvidenceEntry]] = field(default_factory=dict)
    misses: tuple[str, ...] = ()
    unstable: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _runs(stab: Stability | None) -> tuple[str, str]:
    return (stab.outcome(1), stab.outcome(2)) if stab is not None else ("-", "-")


def _judge(  # noqa: PLR0917 - the table's inputs, in its order
    prop: PropertyPin,
    klass: str,
    local: Stability | None,
    remote: Stability | None,
    stopped: str,
    executed: bool | None = None,
    mutation: MutationResult | None = None,
    min_score: float = 0.5,
) -> tuple[int, str, str | None]:
    """(credit, why, code) of one property for one symbol; ``why`` explains a 0."""
    if klass == "fixture_eq":
        return 0, "fixture equality only (R5)", "R5"
    if klass == "freeze_ref":
        return 0, FREEZE_ONLY, "R3"
    if klass == "opaque":  # mock assertions, a helper off the code, no assertion: runs, no credit
        return 0, NO_PREDICATE, None
    if klass != "property":
        return 0, f"not a real predicate ({klass})", None
    if not prop.eligible:
        return 0, f"class {prop.property_class} is not eligible", None
    if stopped:
        return 0, f"{STOPPED_PREFIX}{stopped}", None
    if local is not None and local.passed_both:
        if executed is not None and not executed:
            return 0, NEVER_EXECUTED, None
        if mutation is not None:
            credit, why = mutation.judge(prop.id, min_score)
            return credit, why, None
        return 1, "passed both local runs", None
    if (
        remote is not None
        and remote.passed_both
        and (local is None or local.status == "incomplete")
    ):
        return 0, "only a remote lane passed (R6)", "R6"
    if local is None:
        return 0, "not run", None
    if local.reason:  # e.g. an idempotent_io property whose two applies left different trees
        return 0, f"{local.status}: {local.reason}", None
    return 0, _STATUS_REASONS.get(local.status, f"local: {local.status}"), None


def _why(judged: Sequence[tuple[str, str]]) -> str:
    """One line from the (property id, reason) pairs of a symbol that earned nothing."""
    if not judged:
        return NO_PROPERTY
    reasons = sorted({why for _, why in judged})
    if len(reasons) == 1:
        return reasons[0]
    return "; ".join(f"{pid}: {why}" for pid, why in sorted(judged))


def _evidence(
    stab: Stability | None,
    klass: str,
    executed: bool | None,
    mutation: MutationResult | None,
    pid: str,
) -> EvidenceEntry:
    """What is known of one property for one symbol: its runs, whether they executed the symbol,
    and what its mutants showed (zeros and empty lists when the stage was off or did not reach
    the pair). ``mutants``: the mutants it ran on (scored + crashed + hung); ``killed`` a count,
    ``survivors`` labels; ``score`` null when nothing was scored; ``seed`` only when capped."""
    runs = [r.outcome if r is not None else None for r in stab.runs] if stab is not None else []
    m = mutation or MutationResult()
    out = EvidenceEntry(
        runs=runs,
        assertion_class=klass,
        mutants=m.ran(pid),
        killed=len(m.killed.get(pid, ())),
        survivors=list(m.survived.get(pid, ())),
        sites=m.sites,
        scored=m.scored(pid),
        score=m.score(pid),
        crashed=list(m.crashed.get(pid, ())),
        hung=list(m.hung.get(pid, ())),
        controls=m.controls.get(pid, 0),
        controls_failed=list(m.controls_failed.get(pid, ())),
    )
    if executed is not None:
        out["executed"] = executed
    if m.seed is not None:
        out["seed"] = m.seed
    return out


def _killed_cell(mutation: MutationResult | None, pid: str) -> str:
    """The table's ``killed``: killed/scored; ``-`` when no mutant had an outcome for the pair."""
    if mutation is None or not mutation.ran(pid):
        return "-"
    return f"{len(mutation.killed.get(pid, ()))}/{mutation.scored(pid)}"


@dataclass(frozen=True)
class MutationFindings:
    """What the mutation stage showed: symbol -> what its mutants showed (a symbol missing from
    ``results`` had no mutant made), and the base configuration's threshold ``min_score`` a
    covering property's mutation score must reach (beside one kill, every control passed and at
    least :func:`required_controls` of them run)."""

    results: Mapping[str, MutationResult]
    min_score: float = 0.5


def score(
    *,
    changed_symbols: Sequence[str],
    suite: Sequence[PropertyPin],
    assertion_classes: Mapping[str, str],
    local: Mapping[str, Stability],
    remote: Mapping[str, Stability] | None = None,
    stopped: str = "",
    executed: Mapping[str, Mapping[str, bool]] | None = None,
    mutation: MutationFindings | None = None,
) -> CreditReport:
    """Credit each changed symbol from the suite's two-run results.

    ``executed``: symbol -> property -> whether every local run executed the symbol (a pair
    missing from a given mapping is False); None: not traced, the rule is not applied.
    ``mutation``: what the stage showed (see :class:`MutationFindings`); None: the stage was off.

    ``stopped`` names the posture that stopped the check before its results could count (fixture
    mismatch, oracle moved, pin mutation, not admitted, transport, ...): every credit is then 0,
    every symbol gets R1 with that reason, and the static codes (R3, R5) still apply.
    """
    remote = remote or {}
    credits: dict[str, int] = {}
    uncredited: dict[str, str] = {}
    evidence: dict[str, dict[str, EvidenceEntry]] = {}
    rows: list[CreditRow] = []
    codes: set[str] = set()
    for symbol in changed_symbols:
        offered = [p for p in suite if covering(p, [symbol])]
        if not offered:
            rows.append(
                CreditRow(
                    symbol=symbol,
                    property_id="-",
                    assertion_class="-",
                    run1="-",
                    run2="-",
                    credit=0,
                    note=NO_PROPERTY,
                )
            )
        best, judged = 0, []
        # R3 only when a freeze citation is the only signal on the symbol.
        cited_only = all(assertion_classes.get(p.id) == "freeze_ref" for p in offered)
        for prop in offered:
            klass = assertion_classes.get(prop.id, "opaque")
            lstab = None if stopped else local.get(prop.id)
            hit = None if executed is None else bool(executed.get(symbol, {}).get(prop.id))
            mut = None if mutation is None else mutation.results.get(symbol, MutationResult())
            min_score = 0.5 if mutation is None else mutation.min_score
            credit, why, code = _judge(
                prop,
                klass,
                lstab,
                remote.get(prop.id),
                stopped,
                executed=hit,
                mutation=mut,
                min_score=min_score,
            )
            if code == "R3" and not cited_only:
                code, why = None, FREEZE_BESIDE
            if code:
                codes.add(code)
            best = max(best, credit)
            judged.append((prop.id, why))
            evidence.setdefault(symbol, {})[prop.id] = _evidence(lstab, klass, hit, mut, prop.id)
            run1, run2 = _runs(lstab)
            rows.append(
                CreditRow(
                    symbol=symbol,
                    property_id=prop.id,
                    assertion_class=klass,
                    run1=run1,
                    run2=run2,
                    credit=credit,
                    note=why,
                    executed="-" if hit is None or lstab is None else ("yes" if hit else "no"),
                    killed=_killed_cell(mut, prop.id),
                )
            )
        credits[symbol] = best
        if best == 0:
            codes.add("R1")
            uncredited[symbol] = _why(judged)
    coverage = sum(credits.values()) / len(credits) if credits else 0.0
    notes = () if credits else ("no changed production symbol: nothing to credit, not a pass",)
    ran = {} if stopped else local
    suite_ids = [p.id for p in suite]
    return CreditReport(
        credits=credits,
        coverage=coverage,
        codes=tuple(sorted(codes)),
        rows=tuple(rows),
        uncredited=uncredited,
        evidence=evidence,
        misses=tuple(pid for pid in suite_ids if pid in ran and ran[pid].defect),
        unstable=tuple(pid for pid in suite_ids if pid in ran and ran[pid].disagreement),
        notes=notes,
    )


def rejection_codes(
    *,
    symbol_codes: Sequence[str] = (),
    fixture_mismatch: bool = False,
    freeze_problems: Sequence[str] = (),
    oracle_moved: bool = False,
    pin_mutation: bool = False,
    drift: bool = False,
) -> list[str]:
    """All rejection codes, in R1..R9 order, each once."""
    codes = set(symbol_codes)
    flags = {
        "R2": fixture_mismatch,
        "R4": bool(freeze_problems),
        "R7": oracle_moved,
        "R8": pin_mutation,
        "R9": drift,
    }
    codes.update(code for code, on in flags.items() if on)
    return [c for c in REJECTION_CODES if c in codes]
