"""Two-run stability (DESIGN §6 step 8) and freeze proposals."""

from __future__ import annotations

from client.verdict.stability import assess, freeze_proposal
from tests.unit._gate_helpers import prop, run

P = prop("p.a", ("m.f",))


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


def test_freeze_proposed_for_eligible_real_disagreement() -> None:
    s = assess("p.a", [run("p.a", 1, "pass"), run("p.a", 2, "fail", "boom")])
    proposal = freeze_proposal(s, P, fixture_digest="d" * 64, assertion_class="property")
    assert proposal is not None
    assert proposal["status"] == "proposed"
    assert proposal["test_id"].endswith("::test_p_a")


def test_no_freeze_for_an_ineligible_class() -> None:
    s = assess("p.a", [run("p.a", 1, "pass"), run("p.a", 2, "fail", "boom")])
    slow = prop("p.a", ("m.f",), "bounded_time")
    assert freeze_proposal(s, slow, fixture_digest="d", assertion_class="property") is None


def test_no_freeze_for_a_defect() -> None:
    s = assess("p.a", [run("p.a", 1, "fail", "x"), run("p.a", 2, "fail", "x")])
    assert freeze_proposal(s, P, fixture_digest="d", assertion_class="property") is None


def test_no_freeze_for_a_missing_run() -> None:
    s = assess("p.a", [run("p.a", 2, "fail", "x")])
    assert freeze_proposal(s, P, fixture_digest="d", assertion_class="property") is None
