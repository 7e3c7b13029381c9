"""An ``opaque`` property earns no credit: "no visible predicate" (issue 15, item 3)."""

from __future__ import annotations

from client.verdict.admission import decide
from client.verdict.credit import NO_PREDICATE, score
from client.verdict.stability import assess
from tests.unit._gate_helpers import prop, run

PRORATE = prop("p.prorate", ("billing.prorate",))
MOCKED = prop("p.mocked", ("billing.prorate",))


def _passed(*pids: str) -> dict[str, object]:
    return {p: assess(p, [run(p, 1, "pass"), run(p, 2, "pass")]) for p in pids}


def test_an_opaque_property_that_passed_both_runs_earns_no_credit() -> None:
    r = score(
        changed_symbols=("billing.prorate",),
        suite=(MOCKED,),
        assertion_classes={"p.mocked": "opaque"},
        local=_passed("p.mocked"),  # type: ignore[arg-type]
    )
    assert r.credits == {"billing.prorate": 0}
    assert r.uncredited == {"billing.prorate": NO_PREDICATE}
    assert NO_PREDICATE == "no visible predicate"
    assert r.codes == ("R1",)  # no code of its own: it is R1's reason
    assert r.evidence["billing.prorate"]["p.mocked"]["assertion_class"] == "opaque"


def test_an_opaque_property_beside_a_real_one_takes_nothing_away() -> None:
    r = score(
        changed_symbols=("billing.prorate",),
        suite=(PRORATE, MOCKED),
        assertion_classes={"p.prorate": "property", "p.mocked": "opaque"},
        local=_passed("p.prorate", "p.mocked"),  # type: ignore[arg-type]
    )
    assert (r.credits, r.uncredited, r.codes) == ({"billing.prorate": 1}, {}, ())


def test_a_property_of_unknown_class_is_opaque_and_earns_nothing() -> None:
    r = score(
        changed_symbols=("billing.prorate",),
        suite=(MOCKED,),
        assertion_classes={},
        local=_passed("p.mocked"),  # type: ignore[arg-type]
    )
    assert r.uncredited == {"billing.prorate": NO_PREDICATE}


def test_an_opaque_property_is_admitted_and_runs() -> None:
    """Unlike a tautology, an opaque property is not refused at admission: it runs."""
    decision = decide(
        provenance_problems=(),
        signature_problem=None,
        properties=(MOCKED,),
        assertion_classes={"p.mocked": "opaque"},
        changed_symbols=("billing.prorate",),
    )
    assert (decision.decision, decision.suite) == ("admit", ("p.mocked",))
    tautology = decide(
        provenance_problems=(),
        signature_problem=None,
        properties=(MOCKED,),
        assertion_classes={"p.mocked": "tautology"},
        changed_symbols=("billing.prorate",),
    )
    assert tautology.decision == "reject_class"
