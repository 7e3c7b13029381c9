"""client.verdict.receipt: the receipt of DESIGN §7 and the human summary table."""

from __future__ import annotations

import pytest

from client.verdict.credit import CreditRow
from client.verdict.receipt import ReceiptFacts, build_receipt, receipt_problems, render_summary
from patchgate.errors import LedgerError
from patchgate.ledgers import Receipt


def _receipt(**kw: object) -> Receipt:
    args: dict[str, object] = {
        "review_clock": "2026-09-10T12:00:00.000Z",
        "patch_sha256": "a" * 64,
        "decision": "admit",
        "posture": "reject_credit",
        "admit": False,
        "changed_symbols": ["billing.prorate", "billing.invoice_total"],
        "credits": {"billing.prorate": 1},
        "coverage": 0.5,
        "rejection_codes": ["R1", "R5"],
    }
    args.update(kw)
    return build_receipt(ReceiptFacts(**args))  # type: ignore[arg-type]


def test_every_changed_symbol_has_a_credit_entry() -> None:
    assert _receipt().credits == {"billing.prorate": 1, "billing.invoice_total": 0}


def test_receipt_has_exactly_the_v2_fields() -> None:
    body = _receipt().to_json()
    assert set(body) == {
        "schema", "review_clock", "patch_sha256", "decision", "posture", "changed_symbols",
        "excluded_paths", "changed_inputs", "credits", "coverage", "uncredited", "evidence",
        "fixture_status",
        "fixture_digest", "freeze_citations", "flake_observations", "predicate_hashes",
        "rejection_codes", "transport", "lanes", "dual_pin", "override", "mutation", "judge",
        "environment", "admit", "recorded_at",
    }  # fmt: skip
    assert body["schema"] == "patchgate/receipt/v2"
    assert (body["dual_pin"], body["override"]) == ("not_run", {})


V1 = {
    "schema": "patchgate/receipt/v1", "review_clock": "2026-09-10T12:00:00.000Z",
    "patch_sha256": "a" * 64, "decision": "admit", "posture": "reject_credit",
    "changed_symbols": ["m.f"], "excluded_paths": [], "credits": {"m.f": 0}, "coverage": 0.0,
    "fixture_status": "match", "fixture_digest": "b" * 64, "freeze_citations": [],
    "predicate_hashes": {}, "rejection_codes": ["R1"], "transport": [],
    "lanes": {"local": {}, "remote": {}}, "admit": False, "recorded_at": "",
}  # fmt: skip


def test_a_v1_receipt_still_reads_with_empty_v2_fields() -> None:
    r = Receipt.from_json(V1)
    assert (r.schema, r.uncredited, r.evidence, r.flake_observations) == (V1["schema"], {}, {}, [])


def test_a_v1_receipt_carrying_v2_fields_is_refused() -> None:
    with pytest.raises(LedgerError, match="v1"):
        Receipt.from_json({**V1, "uncredited": {"m.f": "why"}})


def test_an_unknown_receipt_schema_is_refused() -> None:
    with pytest.raises(LedgerError, match="schema"):
        Receipt.from_json({**V1, "schema": "patchgate/receipt/v3"})


def test_summary_says_why_each_uncredited_symbol_earned_nothing() -> None:
    r = _receipt(
        uncredited={"billing.invoice_total": "fixture equality only (R5)"},
        flake_observations=[{"flake_id": "FLK-1", "test_id": "t::x"}],
    )
    text = render_summary(r, ())
    assert "uncredited billing.invoice_total: fixture equality only (R5)" in text
    assert "flake      FLK-1 on t::x (never credit)" in text


def test_lanes_always_have_local_and_remote() -> None:
    assert set(_receipt(lanes={"local": {"x": 1}}).lanes) == {"local", "remote"}


def test_receipt_round_trips_through_json() -> None:
    r = _receipt(freeze_citations=["FLK-2", "FLK-1", "FLK-2"])
    assert Receipt.from_json(r.to_json()) == r
    assert r.freeze_citations == ["FLK-1", "FLK-2"]


def test_summary_table_has_the_columns_and_a_row_per_property() -> None:
    rows = (
        CreditRow(symbol="billing.prorate", property_id="p.a", assertion_class="property",
                  run1="pass", run2="pass", credit=1),
        CreditRow(symbol="billing.invoice_total", property_id="p.b", assertion_class="fixture_eq",
                  run1="pass", run2="pass", credit=0),
    )  # fmt: skip
    text = render_summary(_receipt(), rows, ["why not"])
    header = text.splitlines()[0].split()
    assert header == ["symbol", "property", "class", "run", "1", "run", "2", "credit"]
    assert "p.b" in text
    assert "fixture_eq" in text
    assert "R1, R5" in text
    assert "why not" in text
    assert "admit      no" in text


def test_summary_without_rows_lists_symbols_or_says_there_are_none() -> None:
    assert "billing.prorate" in render_summary(_receipt(), ())
    assert "no changed production symbol" in render_summary(
        _receipt(changed_symbols=[], credits={}), ()
    )


def _consistent(**kw: object) -> Receipt:
    """The worked example's receipt, consistent with itself (v2)."""
    args: dict[str, object] = {
        "uncredited": {"billing.invoice_total": "fixture equality only (R5)"},
        "evidence": {
            "billing.prorate": {"p.a": {"runs": ["pass", "pass"], "assertion_class": "property"}}
        },
        "fixture_status": "match",
    }
    args.update(kw)
    return _receipt(**args)


def test_a_consistent_receipt_has_no_problems() -> None:
    assert receipt_problems(_consistent()) == []


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"rejection_codes": ["R5"]}, "no R1"),
        ({"uncredited": {}}, "does not say why"),
        ({"uncredited": {"billing.invoice_total": "x", "billing.prorate": "y"}}, "earned credit"),
        ({"coverage": 1.0}, "coverage"),
        ({"credits": {"billing.prorate": 1, "billing.invoice_total": 2}}, "other than 0 or 1"),
        ({"changed_symbols": ["billing.prorate"]}, "different symbols"),
        ({"rejection_codes": ["R5", "R1"]}, "out of order"),
        ({"posture": "merge"}, "unknown posture"),
        ({"fixture_status": "probably"}, "unknown fixture_status"),
        ({"evidence": {}}, "credited without a property"),
        ({"evidence": {"billing.prorate": {"p.a": {"runs": ["pass", "fail"]}}}}, "credited"),
        ({"evidence": {"other.f": {}}}, "did not change"),
        ({"flake_observations": [{"flake_id": "F-1"}]}, "flake_observations[0]"),
    ],
)
def test_each_contradiction_is_named(change: dict[str, object], says: str) -> None:
    """verify-receipt's consistency check: each rule fails on the receipt that breaks it."""
    r = _consistent()
    for key, value in change.items():
        setattr(r, key, value)
    problems = receipt_problems(r)
    assert any(says in p for p in problems), problems


def test_admit_without_what_it_needs_is_a_contradiction() -> None:
    r = _consistent(admit=True, posture="human_review")
    assert any("admit is true" in p for p in receipt_problems(r))


def test_an_admitting_receipt_with_not_applicable_fixtures_is_a_contradiction() -> None:
    """Issue 23: no fixtures, no admit (this receipt was consistent before)."""
    r = _receipt(
        credits={"billing.prorate": 1, "billing.invoice_total": 1},
        coverage=1.0,
        rejection_codes=[],
        posture="human_review",
        admit=True,
        fixture_status="not_applicable",
        evidence={
            s: {"p": {"runs": ["pass", "pass"], "assertion_class": "property"}}
            for s in ("billing.prorate", "billing.invoice_total")
        },
    )
    assert any("admit is true" in p for p in receipt_problems(r))


def test_a_v1_receipt_is_not_held_to_the_v2_rules() -> None:
    r = Receipt.from_json(V1)  # credit 0 and R1, but no uncredited: fine for v1
    assert receipt_problems(r) == []


# Credit is evidence: verify-receipt holds a credit to executed and a kill.

_EXECUTED_KILLED = {
    "runs": ["pass", "pass"], "assertion_class": "property", "executed": True, "mutants": 4,
    "killed": 1, "survivors": ["pass at line 3", "arith at line 5", "compare at line 4"],
}  # fmt: skip
_MUTATED = {"enabled": True, "k": 4, "symbols": {}}


def _mutated(**entry: object) -> Receipt:
    return _consistent(
        evidence={"billing.prorate": {"p.a": {**_EXECUTED_KILLED, **entry}}}, mutation=_MUTATED
    )


def test_a_credit_with_execution_and_a_kill_is_consistent() -> None:
    assert receipt_problems(_mutated()) == []


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"executed": False}, "no covering property executed it"),
        ({"killed": 0, "survivors": ["a", "b", "c", "d"]}, "killed a mutant"),
        ({"killed": 2}, "mutants, killed and survivors disagree"),
        ({"mutants": 0, "killed": 1, "survivors": []}, "disagree"),
    ],
)
def test_a_credit_without_its_evidence_is_a_contradiction(
    entry: dict[str, object], says: str
) -> None:
    problems = receipt_problems(_mutated(**entry))
    assert any(says in p for p in problems), problems


def test_an_admitted_check_without_mutants_needs_allow_unmutated() -> None:
    def admitted(mutation: dict[str, object]) -> Receipt:
        entry = {**_EXECUTED_KILLED, "mutants": 0, "killed": 0, "survivors": []}
        return _receipt(
            credits={"billing.prorate": 1, "billing.invoice_total": 1}, coverage=1.0,
            rejection_codes=[], posture="human_review", admit=True, fixture_status="match",
            evidence={s: {"p": entry} for s in ("billing.prorate", "billing.invoice_total")},
            mutation=mutation,
        )  # fmt: skip

    assert receipt_problems(admitted({"enabled": False, "allow_unmutated": True})) == []
    problems = receipt_problems(admitted({"enabled": False, "allow_unmutated": False}))
    assert any("mutation stage off" in p for p in problems), problems


def test_a_credit_of_a_symbol_whose_mutation_evidence_was_not_trusted_is_a_contradiction() -> None:
    """``mutation.untrusted`` maps a symbol to why no mutant of it counted: its credit was not
    earned; a credit of a symbol the map does not name stands."""
    why = "the patch adds code that can observe its own mutation (m.py:2 attribute .__code__)"
    credited = {"billing.prorate": {"p.a": _EXECUTED_KILLED}}
    named = _consistent(
        evidence=credited, mutation={**_MUTATED, "untrusted": {"billing.prorate": why}}
    )
    assert receipt_problems(named) == [
        "billing.prorate: credit given although its mutation evidence was not trusted"
    ]
    other = _consistent(
        evidence=credited, mutation={**_MUTATED, "untrusted": {"billing.invoice_total": why}}
    )
    assert receipt_problems(other) == []


def test_a_credit_beside_untrusted_mutation_evidence_is_a_contradiction() -> None:
    """An older receipt's ``mutation.untrusted`` (one sentence) says no mutant counted: a credit
    beside it was not earned."""
    receipt = _consistent(
        evidence={"billing.prorate": {"p.a": _EXECUTED_KILLED}},
        mutation={**_MUTATED, "untrusted": "the patch adds code that can observe its own mutation"},
    )
    problems = receipt_problems(receipt)
    assert any("mutation evidence was not trusted" in p for p in problems), problems


# Mutation v2 (issue 21): the arithmetic and the threshold, each invariant caught on its own.

_V2_ENTRY = {
    "runs": ["pass", "pass"], "assertion_class": "property", "executed": True,
    "mutants": 6, "killed": 3, "survivors": ["pass at line 3"], "sites": 9, "scored": 4,
    "score": 0.75, "crashed": ["arith at line 5: ZeroDivisionError"], "hung": ["negate at line 2"],
    "controls": 7, "controls_failed": [],
}  # fmt: skip
_V2_MUTATION = {"enabled": True, "k": 16, "min_mutation_score": 0.5, "controls_required": 7,
                "mutants_run": 6, "symbols": {}}  # fmt: skip


def _v2(mutation: dict[str, object] | None = None, **entry: object) -> Receipt:
    return _consistent(
        evidence={"billing.prorate": {"p.a": {**_V2_ENTRY, **entry}}},
        mutation={**_V2_MUTATION, **(mutation or {})},
    )


def test_a_good_v2_mutation_receipt_has_no_problems() -> None:
    assert receipt_problems(_v2()) == []
    assert receipt_problems(_v2(seed=12345)) == []  # a capped sample records its seed
    # exactly at the threshold: 2 killed of 4 scored at 0.5
    at = _v2(killed=2, survivors=["a", "b"], score=0.5, mutants=6, crashed=["c: x"], hung=["d"])
    assert receipt_problems(at) == []


def test_a_v2_receipt_round_trips_and_still_verifies() -> None:
    r = Receipt.from_json(_v2().to_json())
    assert receipt_problems(r) == []


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"killed": 7, "survivors": [], "scored": 7, "score": 1.0}, "killed 7 > mutants 6"),
        ({"scored": 5}, "scored 5 is not killed + survivors = 4"),
        ({"mutants": 7, "killed": 3}, "mutants 7 is not scored + crashed + hung"),
        ({"score": 0.9}, "score 0.9 is not killed/scored = 0.75"),
        ({"score": None}, "score None is not killed/scored"),
        ({"killed": 0, "survivors": [], "scored": 0, "score": 0.0, "mutants": 2},
         "with no mutant scored"),
        ({"controls": -1}, "not a non-negative integer"),
        ({"crashed": "x"}, "not a list of strings"),
    ],
)  # fmt: skip
def test_each_broken_mutation_count_is_named(entry: dict[str, object], says: str) -> None:
    problems = receipt_problems(_v2(**entry))
    assert any(says in p for p in problems), problems


def test_v2_evidence_without_a_new_key_is_named() -> None:
    r = _v2()
    del r.evidence["billing.prorate"]["p.a"]["controls_failed"]
    problems = receipt_problems(r)
    assert any("lacks controls_failed" in p for p in problems), problems


def test_a_credit_without_a_kill_is_named_in_v2() -> None:
    problems = receipt_problems(_v2(killed=0, survivors=["a", "b", "c", "d"], scored=4, score=0.0))
    assert any("no covering property killed a mutant" in p for p in problems), problems


def test_a_credit_below_the_recorded_min_mutation_score_is_named() -> None:
    problems = receipt_problems(_v2(mutation={"min_mutation_score": 0.8, "controls_required": 3}))
    assert any("below min_mutation_score 0.8" in p for p in problems), problems


def test_a_credit_with_too_few_controls_is_named() -> None:
    problems = receipt_problems(_v2(controls=6))
    assert any("6 controls, 7 required" in p for p in problems), problems


def test_a_credit_beside_a_failed_control_is_named() -> None:
    problems = receipt_problems(_v2(controls_failed=["control 4: error"]))
    assert any("a mutation control failed" in p for p in problems), problems


@pytest.mark.parametrize(
    "mutation",
    [{"controls_required": 2}, {"min_mutation_score": 0}, {"min_mutation_score": 1.5},
     {"min_mutation_score": "0.5"}, {"controls_required": None}],
)  # fmt: skip
def test_a_threshold_that_disagrees_with_its_controls_is_named(
    mutation: dict[str, object],
) -> None:
    problems = receipt_problems(_v2(mutation=mutation))
    assert any("controls_required is not required_controls" in p for p in problems), problems


def test_one_qualifying_property_is_enough_beside_a_weak_one() -> None:
    weak = {**_V2_ENTRY, "killed": 0, "survivors": ["a", "b", "c", "d"], "score": 0.0,
            "controls_failed": ["control 1: fail"]}  # fmt: skip
    r = _consistent(
        evidence={"billing.prorate": {"p.a": _V2_ENTRY, "p.weak": weak}}, mutation=_V2_MUTATION
    )
    assert receipt_problems(r) == []


def test_an_uncredited_symbol_is_not_held_to_the_threshold() -> None:
    """Only a credit needs a qualifying property; the arithmetic still holds for every entry."""
    low = {**_V2_ENTRY, "killed": 1, "survivors": ["a", "b", "c"], "score": 0.25}
    r = _consistent(
        evidence={
            "billing.prorate": {"p.a": _V2_ENTRY},
            "billing.invoice_total": {"p.t": low},
        },
        mutation=_V2_MUTATION,
    )
    assert receipt_problems(r) == []


def test_v2_keys_beside_a_mutation_entry_without_a_threshold_are_named() -> None:
    r = _consistent(evidence={"billing.prorate": {"p.a": _V2_ENTRY}}, mutation=_MUTATED)
    problems = receipt_problems(r)
    assert any("records no min_mutation_score" in p for p in problems), problems


def test_a_mutation_v1_receipt_still_verifies_without_the_new_keys() -> None:
    """A receipt written before mutation v2: no min_mutation_score, no scored, no controls."""
    assert receipt_problems(_mutated()) == []


def test_a_stopped_check_with_v2_evidence_and_no_mutation_entry_verifies() -> None:
    zero = {"runs": [], "assertion_class": "property", "mutants": 0, "killed": 0,
            "survivors": [], "sites": 0, "scored": 0, "score": None, "crashed": [], "hung": [],
            "controls": 0, "controls_failed": []}  # fmt: skip
    r = _receipt(
        credits={}, coverage=0.0, rejection_codes=["R1"], posture="reject_pin_mutation",
        uncredited={s: "the run was stopped before execution: x"
                    for s in ("billing.prorate", "billing.invoice_total")},
        evidence={"billing.prorate": {"p.a": zero}},
    )  # fmt: skip
    assert receipt_problems(r) == []
    r.evidence["billing.prorate"]["p.a"]["scored"] = 1  # v2 keys still have to add up
    problems = receipt_problems(r)
    assert any("scored 1 is not killed + survivors = 0" in p for p in problems), problems
