"""Two-run stability (DESIGN §6 step 8) and freeze proposals."""

from __future__ import annotations

import dataclasses

from client.verdict.stability import TREES_DIFFER, assess, assess_all, freeze_proposal
from patchgate.results import RunOutcome
from tests.unit._gate_helpers import prop, run

P = prop("p.a", ("m.f",))
IO = prop("p.a", ("m.f",), "idempotent_io")


def _tree(o: RunOutcome, tree: str) -> RunOutcome:
    return dataclasses.replace(o, tree_hash=tree)


def test_same_hash_twice_is_the_result() -> None:
    s = assess("p.a", [run("p.a", 1, "pass"), run("p.a", 2, "pass")])
    assert (s.status, s.passed_both, s.defect) == ("pass", True, False)


def test_failure_in_both_runs_is_a_defect_not_unstable() -> None:
    s = assess(
        "p.a", [run("p.a", 1, "fail", "assert 1 == 2"), run("p.a", 2, "fail", "assert 1 == 2")]
    )
    assert (s.status, s.defect, s.disagreement) == ("fail", True, False)


def test_two_different_failures_are_still_a_defect() -> None:
    s = assess("p.a", [run("p.a", 1, "fail", "assert 1 == 2"), run("p.a", 2, "error", "KeyError")])
    assert s.defect
    assert not s.disagreement


def test_pass_then_fail_is_unstable() -> None:
    s = assess("p.a", [run("p.a", 1, "pass"), run("p.a", 2, "fail", "boom")])
    assert (s.status, s.disagreement) == ("unstable", True)


def test_a_missing_run_is_incomplete_never_a_disagreement() -> None:
    s = assess("p.a", [run("p.a", 1, "pass")])
    assert (s.status, s.disagreement, s.outcome(2)) == ("incomplete", False, "-")


def test_other_properties_outcomes_are_ignored() -> None:
    s = assess("p.a", [run("p.b", 1, "fail", "x"), run("p.a", 1, "pass"), run("p.a", 2, "pass")])
    assert s.status == "pass"


def test_freeze_proposed_for_idempotent_io_whose_runs_left_the_same_tree() -> None:
    one, two = (
        _tree(run("p.a", 1, "pass"), "t" * 64),
        _tree(run("p.a", 2, "fail", "boom"), "t" * 64),
    )
    s = assess("p.a", [one, two], same_tree=True)
    proposal = freeze_proposal(s, IO, fixture_digest="d" * 64, assertion_class="property")
    assert proposal is not None
    assert proposal["status"] == "proposed"
    assert proposal["test_id"].endswith("::test_p_a")
    assert proposal["fixture_digest"] == "d" * 64
    assert proposal["outcome_hashes"] == [one.outcome_hash, two.outcome_hash]


def test_a_pure_fn_that_disagrees_with_itself_never_proposes_a_freeze() -> None:
    """Issue 17: a pure function that disagrees with itself is a defect, not a flake."""
    s = assess("p.a", [run("p.a", 1, "pass"), run("p.a", 2, "fail", "boom")])
    assert s.disagreement
    assert freeze_proposal(s, P, fixture_digest="d" * 64, assertion_class="property") is None


def test_idempotent_io_proposes_no_freeze_without_the_same_measured_tree() -> None:
    for trees in (("", ""), ("a" * 64, ""), ("a" * 64, "b" * 64)):
        runs = [_tree(run("p.a", 1, "pass"), trees[0]), _tree(run("p.a", 2, "fail", "x"), trees[1])]
        s = assess("p.a", runs, same_tree=True)
        assert freeze_proposal(s, IO, fixture_digest="d", assertion_class="property") is None


def test_two_applies_that_leave_different_trees_are_unstable() -> None:
    """Issue 17: idempotent_io means two applies leave the same tree."""
    runs = [_tree(run("p.a", 1, "pass"), "a" * 64), _tree(run("p.a", 2, "pass"), "b" * 64)]
    s = assess_all(["p.a"], runs, same_tree={"p.a"})["p.a"]
    assert (s.status, s.reason, s.passed_both) == ("unstable", TREES_DIFFER, False)
    # the same runs of a pure_fn property: the tree is not part of its meaning
    assert assess_all(["p.a"], runs)["p.a"].status == "pass"
    # the same tree, or a tree not measured, is no disagreement
    same = [_tree(run("p.a", 1, "pass"), "a" * 64), _tree(run("p.a", 2, "pass"), "a" * 64)]
    assert assess("p.a", same, same_tree=True).status == "pass"
    unmeasured = [run("p.a", 1, "pass"), _tree(run("p.a", 2, "pass"), "a" * 64)]
    assert assess("p.a", unmeasured, same_tree=True).status == "pass"


def test_no_freeze_for_an_ineligible_class() -> None:
    s = assess("p.a", [run("p.a", 1, "pass"), run("p.a", 2, "fail", "boom")])
    slow = prop("p.a", ("m.f",), "bounded_time")
    assert freeze_proposal(s, slow, fixture_digest="d", assertion_class="property") is None


def test_no_freeze_for_a_defect() -> None:
    s = assess("p.a", [run("p.a", 1, "fail", "x"), run("p.a", 2, "fail", "x")])
    assert freeze_proposal(s, IO, fixture_digest="d", assertion_class="property") is None


def test_no_freeze_for_a_missing_run() -> None:
    s = assess("p.a", [run("p.a", 2, "fail", "x")])
    assert freeze_proposal(s, P, fixture_digest="d", assertion_class="property") is None
