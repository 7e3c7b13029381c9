"""A receipt against its recomputation from signed evidence (issue 43): each differing field is
named, and only an equal admit with no problem holds."""

from __future__ import annotations

from client.gate.runs.signed import SignedRun, stage_k
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


def _batch(request_id: str) -> SignedRun:
    return SignedRun(f"{request_id}.json", (), (("m.py", "ab" * 32, ("p",)),), request_id)


def test_every_mutation_batch_of_the_stage_must_be_kept_and_name_the_receipts_cap() -> None:
    problems: list[str] = []
    assert stage_k([_batch("d-mutation-1of2-k16")], 16, problems) == 16
    assert problems == ["missing: mutation batch 2 of 2 has no signed result"]
    problems = []
    both = [_batch("d-mutation-1of2-k16"), _batch("d-mutation-2of2-k16-rerun1")]
    assert stage_k(both, 4, problems) == 16
    assert problems == ["receipt mutation.k: says 4, the signed batches ran 16"]
    problems = []
    assert stage_k([_batch("d-mutation-1")], 16, problems) == 16
    assert problems == [
        "mis-bound: d-mutation-1.json: a mutation batch without its place in the stage"
    ]
