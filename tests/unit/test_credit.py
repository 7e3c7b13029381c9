"""Per-symbol credit and the rejection codes R1-R9 (DESIGN §6 steps 3, 8, 9)."""

from __future__ import annotations

import datetime as dt

import pytest

from client.verdict.credit import (
    CONTROL_FAILED,
    NEVER_EXECUTED,
    NO_MUTANT,
    NO_PROPERTY,
    MutationFindings,
    MutationResult,
    rejection_codes,
    required_controls,
    score,
)
from client.verdict.stability import assess
from patchgate.pins import Flake
from tests.unit._gate_helpers import prop, run

PRORATE = prop("p.prorate", ("billing.prorate",))
TOTAL = prop("p.total", ("billing.invoice_total",))
SYMBOLS = ("billing.prorate", "billing.invoice_total")
CLOCK = dt.datetime(2026, 9, 10, tzinfo=dt.UTC)
FLK = Flake(
    id="FLK-1",
    signature="TimeoutError: worker",
    opened_on=dt.date(2026, 9, 1),
    expires_on=dt.date(2026, 10, 1),
    tests=("tests/test_w.py::test_drain",),
)


def _passed(*pids: str) -> dict[str, object]:
    return {p: assess(p, [run(p, 1, "pass"), run(p, 2, "pass")]) for p in pids}


def _score(**kw: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = {
        "changed_symbols": SYMBOLS,
        "suite": (PRORATE, TOTAL),
        "assertion_classes": {"p.prorate": "property", "p.total": "fixture_eq"},
        "local": _passed("p.prorate", "p.total"),
    }
    args.update(kw)
    if "mutation" in args:  # the stage's findings and the threshold they are judged against
        found = args.pop("mutation")
        args["mutation"] = MutationFindings(found, args.pop("min_mutation_score", 0.5))  # type: ignore[arg-type]
    return score(**args)  # type: ignore[arg-type]


def test_worked_example_credits_one_of_two_with_r1_and_r5() -> None:
    r = _score()
    assert r.credits == {"billing.prorate": 1, "billing.invoice_total": 0}
    assert r.coverage == 0.5
    assert r.codes == ("R1", "R5")
    assert r.uncredited == {"billing.invoice_total": "fixture equality only (R5)"}


def test_evidence_names_each_property_and_its_runs() -> None:
    r = _score()
    assert r.evidence["billing.prorate"] == {
        "p.prorate": {
            "runs": ["pass", "pass"],
            "assertion_class": "property",
            "mutants": 0,
            "killed": 0,
            "survivors": [],
            "sites": 0,
            "scored": 0,
            "score": None,
            "crashed": [],
            "hung": [],
            "controls": 0,
            "controls_failed": [],
        }
    }


def _failed(pid: str, outcome: str) -> dict[str, object]:
    return {pid: assess(pid, [run(pid, 1, outcome, "x"), run(pid, 2, outcome, "x")])}


def test_a_symbol_whose_only_property_ran_past_its_bound_gets_r1_and_the_reason() -> None:
    r = _score(
        assertion_classes={"p.prorate": "property", "p.total": "property"},
        local={**_passed("p.prorate"), **_failed("p.total", "exceeded_bound")},
    )
    assert r.credits["billing.invoice_total"] == 0
    assert r.codes == ("R1",)
    assert r.uncredited == {"billing.invoice_total": "ran past its bound"}
    assert r.misses == ("p.total",)


def test_a_symbol_whose_property_failed_both_runs_gets_r1_and_the_reason() -> None:
    r = _score(
        assertion_classes={"p.prorate": "property", "p.total": "property"},
        local={**_passed("p.total"), **_failed("p.prorate", "fail")},
    )
    assert r.codes == ("R1",)
    assert r.uncredited == {"billing.prorate": "the property failed in both runs"}


def test_every_symbol_with_credit_zero_is_uncredited_and_every_credited_one_is_not() -> None:
    r = _score(suite=(PRORATE,), assertion_classes={"p.prorate": "property"})
    zero = {s for s, c in r.credits.items() if c == 0}
    assert set(r.uncredited) == zero == {"billing.invoice_total"}
    assert r.uncredited["billing.invoice_total"] == NO_PROPERTY
    assert r.coverage == (len(r.credits) - len(zero)) / len(r.credits)


def test_two_properties_with_different_reasons_are_both_named() -> None:
    r = _score(
        suite=(PRORATE, prop("p.eq", ("billing.prorate",)), TOTAL),
        assertion_classes={"p.prorate": "property", "p.eq": "fixture_eq", "p.total": "property"},
        local={**_passed("p.total", "p.eq"), **_failed("p.prorate", "error")},
    )
    why = r.uncredited["billing.prorate"]
    assert why == "p.eq: fixture equality only (R5); p.prorate: the property failed in both runs"


def test_real_predicate_passing_both_runs_credits_every_symbol() -> None:
    r = _score(assertion_classes={"p.prorate": "property", "p.total": "property"})
    assert (r.coverage, r.codes) == (1.0, ())


def test_r1_when_no_property_covers_a_symbol() -> None:
    r = _score(suite=(PRORATE,))
    assert r.credits["billing.invoice_total"] == 0
    assert r.codes == ("R1",)
    assert any(row.note == "no property covers it" for row in r.rows)


def test_r3_when_a_freeze_citation_is_the_only_evidence() -> None:
    r = _score(assertion_classes={"p.prorate": "property", "p.total": "freeze_ref"})
    assert r.codes == ("R1", "R3")


def test_no_r3_when_a_freeze_citation_stands_beside_a_credited_predicate() -> None:
    """Issue 17: R3 only when a freeze citation is the only signal on a changed symbol."""
    r = _score(
        suite=(PRORATE, TOTAL, prop("p.freeze", ("billing.prorate",))),
        assertion_classes={
            "p.prorate": "property",
            "p.total": "property",
            "p.freeze": "freeze_ref",
        },
        local=_passed("p.prorate", "p.total"),
    )
    assert r.credits == {"billing.prorate": 1, "billing.invoice_total": 1}
    assert r.codes == ()


def test_no_r3_beside_a_failing_predicate_but_the_citation_is_named() -> None:
    local = {
        **_passed("p.prorate"),
        "p.total": assess(
            "p.total", [run("p.total", 1, "fail", "x"), run("p.total", 2, "fail", "x")]
        ),
    }
    r = _score(
        suite=(PRORATE, TOTAL, prop("p.freeze", ("billing.invoice_total",))),
        assertion_classes={
            "p.prorate": "property",
            "p.total": "property",
            "p.freeze": "freeze_ref",
        },
        local=local,
    )
    assert r.codes == ("R1",)
    assert r.uncredited["billing.invoice_total"] == (
        "p.freeze: a freeze citation, never evidence; p.total: the property failed in both runs"
    )


def test_r3_when_two_freeze_citations_are_the_only_signals() -> None:
    r = _score(
        suite=(PRORATE, TOTAL, prop("p.freeze", ("billing.invoice_total",))),
        assertion_classes={
            "p.prorate": "property",
            "p.total": "freeze_ref",
            "p.freeze": "freeze_ref",
        },
    )
    assert r.codes == ("R1", "R3")
    assert r.uncredited["billing.invoice_total"] == "a freeze citation only (R3)"


def test_r6_when_only_the_remote_lane_passed() -> None:
    r = _score(
        assertion_classes={"p.prorate": "property", "p.total": "property"},
        local=_passed("p.prorate"),
        remote=_passed("p.total"),
    )
    assert r.credits["billing.invoice_total"] == 0
    assert r.codes == ("R1", "R6")
    assert r.uncredited == {"billing.invoice_total": "only a remote lane passed (R6)"}


def test_remote_passes_never_add_credit_next_to_a_local_failure() -> None:
    local = {
        **_passed("p.prorate"),
        "p.total": assess(
            "p.total", [run("p.total", 1, "fail", "x"), run("p.total", 2, "fail", "x")]
        ),
    }
    r = _score(
        assertion_classes={"p.prorate": "property", "p.total": "property"},
        local=local,
        remote=_passed("p.total"),
    )
    assert r.credits["billing.invoice_total"] == 0
    assert r.misses == ("p.total",)


def test_stopped_run_earns_nothing_and_gives_every_symbol_r1_with_the_posture() -> None:
    r = _score(
        assertion_classes={"p.prorate": "property", "p.total": "property"},
        stopped="reject_oracle_moved",
    )
    assert r.credits == {"billing.prorate": 0, "billing.invoice_total": 0}
    assert r.codes == ("R1",)
    assert set(r.uncredited.values()) == {
        "the run was stopped before execution: reject_oracle_moved"
    }
    assert (r.misses, r.unstable) == ((), ())


def test_stopped_run_still_lists_the_static_r5_and_r3() -> None:
    r = _score(
        changed_symbols=(*SYMBOLS, "billing.checkout"),
        suite=(PRORATE, TOTAL, prop("p.freeze", ("billing.checkout",))),
        assertion_classes={
            "p.prorate": "property",
            "p.total": "fixture_eq",
            "p.freeze": "freeze_ref",
        },
        stopped="unavailable",
    )
    assert r.codes == ("R1", "R3", "R5")
    assert r.uncredited["billing.invoice_total"] == "fixture equality only (R5)"


def test_unstable_property_earns_nothing_and_is_listed() -> None:
    local = {
        **_passed("p.total"),
        "p.prorate": assess(
            "p.prorate", [run("p.prorate", 1, "pass"), run("p.prorate", 2, "fail", "x")]
        ),
    }
    r = _score(assertion_classes={"p.prorate": "property", "p.total": "property"}, local=local)
    assert r.credits["billing.prorate"] == 0
    assert r.unstable == ("p.prorate",)
    assert r.uncredited == {"billing.prorate": "unstable: it passed in one run only"}
    assert "R1" in r.codes


def test_empty_symbol_list_is_reported_not_passed() -> None:
    r = _score(changed_symbols=())
    assert r.coverage == 0.0
    assert r.notes


def test_codes_are_ordered_and_unique_across_steps() -> None:
    codes = rejection_codes(
        symbol_codes=["R5", "R1", "R5"],
        fixture_mismatch=True,
        freeze_problems=["x"],
        oracle_moved=True,
        pin_mutation=True,
        drift=True,
    )
    assert codes == ["R1", "R2", "R4", "R5", "R7", "R8", "R9"]


def test_no_codes_when_nothing_found() -> None:
    assert rejection_codes() == []


# Credit is evidence: the runs executed the symbol, and the property killed enough mutants of it
# with every control passed (mutation v2, issue 21).

_RAN = {"billing.prorate": {"p.prorate": True}, "billing.invoice_total": {"p.total": True}}
_CONTROLS = {"p.prorate": 7}  # required_controls(0.5)


def _mr(**kw: object) -> MutationResult:
    args: dict[str, object] = {"made": 4, "sites": 6, "controls": _CONTROLS}
    args.update(kw)
    return MutationResult(**args)  # type: ignore[arg-type]


_KILLED = _mr(
    killed={"p.prorate": ("arith at line 4", "negate at line 2")},
    survived={"p.prorate": ("pass at line 3", "compare at line 5")},
)


def _credit(m: MutationResult, min_score: float = 0.5) -> tuple[int, str]:
    r = _score(executed=_RAN, mutation={"billing.prorate": m}, min_mutation_score=min_score)
    return r.credits["billing.prorate"], r.uncredited.get("billing.prorate", "")


def test_a_property_that_never_executed_the_symbol_does_not_credit_it() -> None:
    r = _score(executed={"billing.prorate": {"p.prorate": False}})
    assert r.credits["billing.prorate"] == 0
    assert r.uncredited["billing.prorate"] == NEVER_EXECUTED
    assert "R1" in r.codes
    assert r.evidence["billing.prorate"]["p.prorate"]["executed"] is False


def test_a_pair_missing_from_executed_is_not_executed() -> None:
    r = _score(executed={})
    assert r.uncredited["billing.prorate"] == NEVER_EXECUTED


def test_executed_and_a_score_at_the_threshold_credit_with_the_evidence() -> None:
    r = _score(executed=_RAN, mutation={"billing.prorate": _KILLED})
    assert r.credits["billing.prorate"] == 1
    assert r.evidence["billing.prorate"]["p.prorate"] == {
        "runs": ["pass", "pass"],
        "assertion_class": "property",
        "executed": True,
        "mutants": 4,
        "killed": 2,
        "survivors": ["pass at line 3", "compare at line 5"],
        "sites": 6,
        "scored": 4,
        "score": 0.5,
        "crashed": [],
        "hung": [],
        "controls": 7,
        "controls_failed": [],
    }
    assert [row.killed for row in r.rows if row.property_id == "p.prorate"] == ["2/4"]


def test_scored_and_score_count_kills_and_survivors_only() -> None:
    m = _mr(
        killed={"p": ("a at line 1",)},
        survived={"p": ("b at line 2", "c at line 3", "d at line 4")},
        crashed={"p": ("e at line 5: ZeroDivisionError",)},
        hung={"p": ("f at line 6",)},
    )
    assert (m.scored("p"), m.score("p"), m.ran("p")) == (4, 0.25, 6)
    assert (m.scored("q"), m.score("q")) == (0, None)


@pytest.mark.parametrize(
    ("killed", "survived", "min_score", "credit"),
    [
        (2, 2, 0.5, 1),  # exactly at the threshold credits
        (1, 3, 0.25, 1),
        (3, 7, 0.3, 1),  # 3/10 == 0.3 in floating point too
        (1, 2, 0.5, 0),  # 0.333 below 0.5
        (4, 0, 1.0, 1),
        (3, 1, 1.0, 0),
        (0, 4, 0.01, 0),  # no kill never credits, however low the threshold
    ],
)
def test_the_threshold_edges(killed: int, survived: int, min_score: float, credit: int) -> None:
    m = _mr(
        killed={"p.prorate": tuple(f"k at line {i}" for i in range(killed))},
        survived={"p.prorate": tuple(f"s at line {i}" for i in range(survived))},
        controls={"p.prorate": required_controls(min_score)},
    )
    assert _credit(m, min_score)[0] == credit


def test_a_score_below_the_threshold_says_so_readably() -> None:
    m = _mr(
        killed={"p.prorate": ("a at line 1",)},
        survived={"p.prorate": ("b at line 2", "c at line 3", "d at line 4")},
    )
    assert _credit(m) == (
        0,
        "mutation score 0.25 below 0.5 (1 killed, 3 survived: b at line 2, c at line 3, "
        "d at line 4)",
    )


@pytest.mark.parametrize(
    ("min_score", "controls"), [(0.5, 7), (0.9, 2), (0.1, 44), (1.0, 2), (0.99, 2), (0.3, 13)]
)
def test_required_controls(min_score: float, controls: int) -> None:
    assert required_controls(min_score) == controls


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5])
def test_required_controls_refuses_a_score_outside_its_range(bad: float) -> None:
    with pytest.raises(ValueError, match="not in"):
        required_controls(bad)


def test_a_failed_control_voids_the_property_s_mutation_evidence() -> None:
    m = _mr(
        killed={"p.prorate": ("a at line 1", "b at line 2")},
        controls_failed={"p.prorate": ("control 3: error",)},
    )
    credit, why = _credit(m)
    assert credit == 0
    assert why == f"{CONTROL_FAILED} (control 3: error)"


def test_too_few_controls_do_not_credit() -> None:
    m = _mr(killed={"p.prorate": ("a at line 1",)}, controls={"p.prorate": 6})
    assert _credit(m) == (0, "only 6 of the 7 mutation controls ran")
    assert _credit(_mr(killed={"p.prorate": ("a at line 1",)}, controls={}))[0] == 0


def test_crashed_and_hung_mutants_never_count() -> None:
    """A crash or a hang is no kill and not scored: with only those, nothing credits; beside one
    kill and one survivor, they do not move the score."""
    only = _mr(
        crashed={"p.prorate": ("a at line 1: SystemExit", "b at line 2: ZeroDivisionError")},
        hung={"p.prorate": ("c at line 3",)},
    )
    credit, why = _credit(only)
    assert credit == 0
    assert why == (
        "no mutant scored (2 crashed: a at line 1: SystemExit, b at line 2: ZeroDivisionError; "
        "1 hung: c at line 3, not scored)"
    )
    beside = _mr(
        killed={"p.prorate": ("k at line 1",)},
        survived={"p.prorate": ("s at line 2",)},
        crashed={"p.prorate": tuple(f"x at line {i}: boom" for i in range(10))},
        hung={"p.prorate": tuple(f"h at line {i}" for i in range(10))},
    )
    assert _credit(beside)[0] == 1  # 1/2 = 0.5: the 20 unscored mutants change nothing
    r = _score(executed=_RAN, mutation={"billing.prorate": beside})
    e = r.evidence["billing.prorate"]["p.prorate"]
    assert (e["mutants"], e["killed"], e["scored"], len(e["crashed"]), len(e["hung"])) == (
        22, 1, 2, 10, 10
    )  # fmt: skip
    assert [row.killed for row in r.rows if row.property_id == "p.prorate"] == ["1/2"]


def test_a_property_that_killed_no_mutant_does_not_credit_and_lists_survivors() -> None:
    weak = _mr(made=2, survived={"p.prorate": ("a at line 1", "b at line 2")})
    r = _score(executed=_RAN, mutation={"billing.prorate": weak})
    assert r.credits["billing.prorate"] == 0
    assert r.uncredited["billing.prorate"] == (
        "killed no mutant — survivors: a at line 1, b at line 2"
    )


def test_no_mutant_made_and_none_run_do_not_credit() -> None:
    no_site = "no mutable site on the lines the patch changed"
    r = _score(executed=_RAN, mutation={"billing.prorate": MutationResult(problem=no_site)})
    assert r.uncredited["billing.prorate"] == f"{NO_MUTANT} ({no_site})"
    r = _score(executed=_RAN, mutation={})  # a symbol missing from the stage's findings
    assert r.uncredited["billing.prorate"] == NO_MUTANT
    lost = _mr(not_run=4, controls={})
    r = _score(executed=_RAN, mutation={"billing.prorate": lost})
    assert r.uncredited["billing.prorate"].startswith("no mutant ran (4 not run")


def test_seed_is_in_the_evidence_only_when_capped() -> None:
    capped = _score(executed=_RAN, mutation={"billing.prorate": _mr(candidates=40, seed=123)})
    assert capped.evidence["billing.prorate"]["p.prorate"]["seed"] == 123
    plain = _score(executed=_RAN, mutation={"billing.prorate": _KILLED})
    assert "seed" not in plain.evidence["billing.prorate"]["p.prorate"]


def test_untrusted_mutation_evidence_never_credits_even_with_kills() -> None:
    """A patch whose code could notice its own mutation: its kills prove nothing (issue 15)."""
    why = "the patch adds code that can observe its own mutation (m.py:3 name __file__)"
    untrusted = _mr(killed={"p.prorate": ("a at line 1",) * 4}, untrusted=why)
    r = _score(executed=_RAN, mutation={"billing.prorate": untrusted})
    assert r.credits["billing.prorate"] == 0
    assert r.uncredited["billing.prorate"] == f"mutation evidence not trusted: {why}"
    assert "R1" in r.codes


def test_one_killing_property_is_enough_beside_a_weak_one() -> None:
    weak = prop("p.weak", ("billing.prorate",))
    both = _mr(
        killed={"p.prorate": ("a at line 1",)},
        survived={"p.weak": ("x at line 1",)},
        controls={"p.prorate": 7, "p.weak": 7},
    )
    r = _score(
        suite=(PRORATE, TOTAL, weak),
        assertion_classes={"p.prorate": "property", "p.total": "fixture_eq", "p.weak": "property"},
        local=_passed("p.prorate", "p.total", "p.weak"),
        executed={"billing.prorate": {"p.prorate": True, "p.weak": True}},
        mutation={"billing.prorate": both},
    )
    assert r.credits["billing.prorate"] == 1
    assert r.evidence["billing.prorate"]["p.weak"]["killed"] == 0
