"""Per-symbol property credit and the rejection codes R1-R9 (DESIGN §6 steps 3, 8, 9).

One point per changed symbol: some suite property covers it, is a real predicate (assertion class
``property``) of an eligible class, and passed in both *local* runs. Why a symbol earned nothing::

    R1  no real predicate covers it (a fixture equality, a freeze citation, a tautology or an opaque
        test does not count as coverage)
    R3  a freeze citation is the only evidence for it
    R5  a fixture equality / snapshot comparison is offered as its check
    R6  its only passing results come from a remote lane (remote runs confirm, never credit)

Codes about the patch as a whole come from the other steps: R2 fixture mismatch, R4 unknown, expired
or mismatched freeze id, R7 oracle moved, R8 pin mutation, R9 drift between two pins. Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from client.verdict.admission import covering
from client.verdict.stability import Stability
from patchgate.ledgers import REJECTION_CODES
from patchgate.pins import Flake, PropertyPin
from patchgate.results import normalize_failure

__all__ = [
    "CreditReport",
    "CreditRow",
    "FlakeObservation",
    "check_freezes",
    "observe_flakes",
    "rejection_codes",
    "score",
]


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


@dataclass(frozen=True, kw_only=True)
class CreditReport:
    """Credits per symbol, coverage and the per-symbol rejection codes."""

    credits: dict[str, int]
    coverage: float
    codes: tuple[str, ...]
    rows: tuple[CreditRow, ...]
    misses: tuple[str, ...] = ()
    unstable: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _runs(stab: Stability | None) -> tuple[str, str]:
    return (stab.outcome(1), stab.outcome(2)) if stab is not None else ("-", "-")


def _judge(
    prop: PropertyPin, klass: str, local: Stability | None, remote: Stability | None, scored: bool
) -> tuple[int, str, str | None]:
    """(credit, note, code) of one property for one symbol."""
    if klass == "fixture_eq":
        return 0, "fixture equality is not a check", "R5"
    if klass == "freeze_ref":
        return 0, "a freeze citation is not evidence", "R3"
    if klass != "property":
        return 0, f"{klass}: not a real predicate", None
    if not prop.eligible:
        return 0, f"class {prop.property_class} is not eligible", None
    if not scored:
        return 0, "not scored", None
    if local is not None and local.passed_both:
        return 1, "passed both local runs", None
    if (
        remote is not None
        and remote.passed_both
        and (local is None or local.status == "incomplete")
    ):
        return 0, "only a remote lane passed", "R6"
    status = local.status if local is not None else "not run"
    return 0, f"local: {status}", None


def score(
    *,
    changed_symbols: Sequence[str],
    suite: Sequence[PropertyPin],
    assertion_classes: Mapping[str, str],
    local: Mapping[str, Stability],
    remote: Mapping[str, Stability] | None = None,
    scored: bool = True,
) -> CreditReport:
    """Credit each changed symbol from the suite's two-run results.

    ``scored`` is False when property results may not count at all (fixture mismatch, oracle moved,
    pin mutation, not admitted): every credit is then 0, and the structural codes still apply.
    """
    remote = remote or {}
    credits: dict[str, int] = {}
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
                    note="no property covers it",
                )
            )
        real = False
        best = 0
        for prop in offered:
            klass = assertion_classes.get(prop.id, "opaque")
            real = real or (klass == "property" and prop.eligible)
            lstab, rstab = local.get(prop.id), remote.get(prop.id)
            credit, note, code = _judge(prop, klass, lstab, rstab, scored)
            if code:
                codes.add(code)
            best = max(best, credit)
            run1, run2 = _runs(lstab)
            rows.append(
                CreditRow(
                    symbol=symbol,
                    property_id=prop.id,
                    assertion_class=klass,
                    run1=run1,
                    run2=run2,
                    credit=credit,
                    note=note,
                )
            )
        if not real:
            codes.add("R1")
        credits[symbol] = best
    coverage = sum(credits.values()) / len(credits) if credits else 0.0
    notes = () if credits else ("no changed production symbol: nothing to credit, not a pass",)
    suite_ids = [p.id for p in suite]
    misses = tuple(pid for pid in suite_ids if pid in local and local[pid].defect)
    unstable = tuple(pid for pid in suite_ids if pid in local and local[pid].disagreement)
    return CreditReport(
        credits=credits,
        coverage=coverage,
        codes=tuple(sorted(codes)),
        rows=tuple(rows),
        misses=misses,
        unstable=unstable,
        notes=notes,
    )


def check_freezes(
    citations: Mapping[str, Sequence[str]], flakes: Sequence[Flake], clock: dt.datetime
) -> tuple[str, ...]:
    """R4 problems of the freeze ids cited per property: not in the base ledger, or expired."""
    known = {f.id: f for f in flakes}
    problems: list[str] = []
    for pid, ids in sorted(citations.items()):
        for fid in ids:
            flake = known.get(fid)
            if flake is None:
                problems.append(f"{pid} cites {fid}, which is not in the base flake ledger")
            elif not flake.valid_at(clock):
                problems.append(
                    f"{pid} cites {fid}, which expired on {flake.expires_on.isoformat()}"
                )
    return tuple(problems)


@dataclass(frozen=True, kw_only=True)
class FlakeObservation:
    """A failing test on a valid baseline freeze whose observed failure matches its signature."""

    property_id: str
    test_id: str
    flake_id: str
    observed: str


def observe_flakes(
    *,
    suite: Sequence[PropertyPin],
    local: Mapping[str, Stability],
    citations: Mapping[str, Sequence[str]],
    flakes: Sequence[Flake],
    clock: dt.datetime,
) -> tuple[tuple[FlakeObservation, ...], tuple[str, ...]]:
    """(flake observations, R4 mismatch problems) from the local runs.

    A failing run of a property on a valid flake (the flake lists its test id, or the property cites
    the flake id) is an observation when its normalized failure contains the flake's signature;
    a failure of a property that *cites* a valid flake without matching it is a mismatched freeze
    (R4).
    """
    observations: list[FlakeObservation] = []
    problems: list[str] = []
    for prop in suite:
        stab = local.get(prop.id)
        if stab is None:
            continue
        test_id = prop.command[-1]
        cited = set(citations.get(prop.id, ()))
        relevant = [
            f for f in flakes if f.valid_at(clock) and (test_id in f.tests or f.id in cited)
        ]
        failures = [r for r in stab.runs if r is not None and r.outcome != "pass"]
        if not relevant or not failures:
            continue
        match = next(
            (
                (f, r)
                for f in relevant
                for r in failures
                if normalize_failure(f.signature) in r.failure_signature
            ),
            None,
        )
        if match is not None:
            flake, run = match
            observations.append(
                FlakeObservation(
                    property_id=prop.id,
                    test_id=test_id,
                    flake_id=flake.id,
                    observed=run.failure_signature,
                )
            )
        elif cited:
            problems.append(
                f"{prop.id} failed, but not with the signature of {', '.join(sorted(cited))}"
            )
    return tuple(observations), tuple(problems)


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
