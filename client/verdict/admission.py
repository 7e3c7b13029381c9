"""The admission matrix (docs/reference/codes.md): first matching row wins.

Rows, in order::

    provenance   provenance incomplete                                  -> reject_provenance
    fixture_role signature invalid, absent or not by an operator key    -> reject_fixture_role
    class        a property covering a changed symbol has an ineligible
                 class or tautological assertions                        -> reject_class
    admit        otherwise                                              -> admit

Admit means the suite may start, not merge. The suite is every pinned property except
``external_probe``; an ineligible or tautological property that covers no changed symbol is skipped
and listed, and so is a property quarantined by a valid freeze citation (it is a citation, never
evidence: see :func:`client.verdict.flakes.quarantined`). This module is pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from patchgate.ledgers import Admission
from patchgate.pins import PropertyPin
from patchgate.symbols import covers
from patchgate.vocabulary import DECISIONS as _DECISIONS

__all__ = [
    "DECISIONS",
    "ROWS",
    "AdmissionDecision",
    "covering",
    "covers_symbol",
    "decide",
]

DECISIONS = _DECISIONS  # the vocabulary's
ROWS = ("provenance", "fixture_role", "class", "admit")
TAUTOLOGY = "tautology"


def covers_symbol(cover: str, symbol: str) -> bool:
    """Whether a ``covers`` entry of a property pin names ``symbol`` (exact).

    ``billing.prorate`` covers itself and everything defined inside it
    (``billing.prorate.<locals>.f``); ``billing.Line`` covers its methods; a module name
    ``billing.orders`` covers its module-level code ``module:billing.orders`` and every symbol
    defined in that file, never a symbol of another module or a sub-package (``billing`` does not
    cover ``billing.orders.load_orders``). The module of a symbol comes from the gate's
    :class:`patchgate.symbols.Symbol`; a plain name is covered only by an entry equal to it.
    """
    return covers(cover, symbol)


def covering(prop: PropertyPin, symbols: Iterable[str]) -> tuple[str, ...]:
    """The symbols among ``symbols`` that ``prop`` covers."""
    return tuple(s for s in symbols if any(covers(c, s) for c in prop.covers))


@dataclass(frozen=True, kw_only=True)
class AdmissionDecision:
    """The matrix's answer: decision, the row that fired, why, and the suite to run."""

    decision: str
    row: str
    reasons: tuple[str, ...] = ()
    suite: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = field(default=())
    unknown_covers: tuple[str, ...] = ()

    @property
    def admitted(self) -> bool:
        """True when the suite may start."""
        return self.decision == "admit"

    def to_record(self) -> Admission:
        """The ``admission.json`` record (notes are appended to the reasons, marked as notes)."""
        return Admission(
            decision=self.decision,
            row=self.row,
            reasons=[*self.reasons, *(f"note: {n}" for n in self.notes)],
            suite=list(self.suite),
            skipped=[{"property_id": p, "reason": r} for p, r in self.skipped],
            unknown_covers=list(self.unknown_covers),
        )


def _suite(
    properties: Sequence[PropertyPin],
    assertion_classes: Mapping[str, str],
    symbols: Sequence[str],
    quarantined: Mapping[str, str],
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], tuple[str, ...]]:
    """(suite, skipped, problems of properties that cover changed symbols)."""
    suite: list[str] = []
    skipped: list[tuple[str, str]] = []
    problems: list[str] = []
    for prop in properties:
        hit = covering(prop, symbols)
        klass = assertion_classes.get(prop.id, "opaque")
        weak: list[str] = []
        if not prop.eligible:
            weak.append(f"class {prop.property_class!r} is not eligible")
        if klass == TAUTOLOGY:
            weak.append("its assertions are tautological")
        if hit and weak:
            problems.append(f"{prop.id} covers {', '.join(hit)} but {' and '.join(weak)}")
        if prop.property_class == "external_probe":
            skipped.append((prop.id, "external_probe never runs in the gate"))
        elif prop.id in quarantined:
            skipped.append((prop.id, quarantined[prop.id]))
        elif weak and not hit:
            skipped.append((prop.id, f"covers no changed symbol and {' and '.join(weak)}"))
        else:
            suite.append(prop.id)
    return tuple(suite), tuple(skipped), tuple(problems)


def decide(
    *,
    provenance_problems: Sequence[str],
    signature_problem: str | None,
    properties: Sequence[PropertyPin],
    assertion_classes: Mapping[str, str],
    changed_symbols: Sequence[str],
    notes: Sequence[str] = (),
    unknown_covers: Sequence[str] = (),
    quarantined: Mapping[str, str] | None = None,
) -> AdmissionDecision:
    """Apply the matrix.

    ``signature_problem`` is None only for an envelope verified by an operator key. A property whose
    assertion class is unknown counts as ``opaque`` (it runs; it never earns credit).
    ``unknown_covers`` (``property id: entry`` naming no symbol of the base tree) are listed in
    the record whatever the decision; such an entry covers nothing that exists, so it credits
    nothing. ``quarantined`` (property id -> why) are listed as skipped and do not run.
    """
    suite, skipped, class_problems = _suite(
        properties, assertion_classes, changed_symbols, quarantined or {}
    )

    def made(decision: str, row: str, reasons: Sequence[str] = ()) -> AdmissionDecision:
        return AdmissionDecision(
            decision=decision,
            row=row,
            reasons=tuple(reasons),
            suite=suite,
            skipped=skipped,
            notes=tuple(notes),
            unknown_covers=tuple(unknown_covers),
        )

    if provenance_problems:
        return made("reject_provenance", "provenance", provenance_problems)
    if signature_problem is not None:
        return made("reject_fixture_role", "fixture_role", [signature_problem])
    if class_problems:
        return made("reject_class", "class", class_problems)
    return made("admit", "admit")
