"""A receipt against its recomputation from signed evidence (issue 43): each differing field is
named, and only an equal admit with no problem holds."""

from __future__ import annotations

from client.verdict.recompute import differences, holds

FIELDS = {
    "patch_sha256": "ab" * 32,
    "changed_symbols": ["billing.prorate", "billing.total"],
    "credits": {"billing.prorate": 1, "billing.total": 1},
    "coverage": 1.0,
    "rejection_codes": [],
    "decision": "admit",
    "posture": "human_review",
    "admit": True,
}


def test_an_equal_admit_holds_and_list_order_does_not_matter() -> None:
    receipt = {**FIELDS, "changed_symbols": ["billing.total", "billing.prorate"]}
    assert differences(receipt, FIELDS) == []
    assert holds(receipt, FIELDS, []) is True


def test_each_edited_field_is_named() -> None:
    receipt = {**FIELDS, "admit": False, "credits": {"billing.prorate": 1, "billing.total": 0}}
    found = differences(receipt, FIELDS)
    assert [d.split(":")[0] for d in found] == ["receipt credits", "receipt admit"]
    assert holds(receipt, FIELDS, []) is False


def test_a_problem_or_a_rejection_never_holds() -> None:
    assert holds(FIELDS, FIELDS, ["missing: no signed run result"]) is False
    rejected = {**FIELDS, "admit": False}
    assert holds(rejected, rejected, []) is False


def test_a_field_the_recomputation_did_not_reach_is_not_compared() -> None:
    reached = {"patch_sha256": FIELDS["patch_sha256"], "admit": False}
    assert differences(FIELDS, reached) == [
        "receipt admit: says True, the signed evidence gives False"
    ]
