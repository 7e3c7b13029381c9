"""The merge table (client.verdict.posture): one test per row, and the order between neighbours."""

from __future__ import annotations

import pytest

from client.verdict.posture import Facts, merge

OK = {"decision": "admit", "coverage": 1.0, "changed_symbols": 2, "suite_passed": True}


def _merge(**kw: object):  # type: ignore[no-untyped-def]
    return merge(Facts(**{**OK, **kw}))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("facts", "row", "posture", "exit_code"),
    [
        ({"decision": "reject_provenance"}, "provenance", "reject_admission", 1),
        ({"codes": ["R2"], "fixture_refused": True}, "fixture", "reject_unscored", 2),
        ({"signer_transport": True}, "signer_transport", "unavailable", 4),
        ({"decision": "reject_fixture_role"}, "admission", "reject_admission", 1),
        ({"decision": "reject_class"}, "admission", "reject_admission", 1),
        ({"codes": ["R8"]}, "pin_mutation", "reject_pin_mutation", 1),
        ({"codes": ["R7"]}, "oracle_moved", "reject_oracle_moved", 1),
        ({"executor_refused": True}, "executor_refused", "reject_unscored", 2),
        ({"local_transport": True}, "local_transport", "unavailable", 4),
        ({"codes": ["R9"]}, "drift", "reject_fixture_drift", 3),
        ({"property_misses": ["p"]}, "property_miss", "reject_property_miss", 1),
        ({"no_fixtures": True}, "no_fixtures", "reject_credit", 1),
        ({"no_fixtures": True, "flake_observed": True}, "no_fixtures", "reject_credit", 1),
        ({"coverage": 0.5, "codes": ["R1", "R5"]}, "credit", "reject_credit", 1),
        ({"changed_symbols": 0}, "credit", "reject_credit", 1),
        ({"suite_passed": False}, "credit", "reject_credit", 1),
        ({"flake_observed": True}, "flake", "review", 0),
        ({"second_pin_agrees": True}, "pins_agree", "review", 0),
        ({}, "passed", "human_review", 0),
    ],
)
def test_each_row(facts: dict[str, object], row: str, posture: str, exit_code: int) -> None:
    v = _merge(**facts)
    assert (v.row, v.posture, v.exit_code, v.admit) == (row, posture, exit_code, exit_code == 0)


def test_pin_mutation_is_an_earlier_step_than_the_fixture_digest() -> None:
    assert _merge(codes=["R2", "R8"]).posture == "reject_pin_mutation"


def test_oracle_moved_wins_over_a_class_rejection() -> None:
    assert _merge(codes=["R7"], decision="reject_class").posture == "reject_oracle_moved"


def test_pin_mutation_beats_oracle_moved() -> None:
    assert _merge(codes=["R7", "R8"]).posture == "reject_pin_mutation"


def test_local_transport_is_never_a_property_miss() -> None:
    assert _merge(local_transport=True, property_misses=["p"]).posture == "unavailable"


def test_property_miss_wins_whatever_the_credit() -> None:
    assert _merge(property_misses=["p"], coverage=1.0).posture == "reject_property_miss"


def test_any_code_blocks_admission_at_full_coverage() -> None:
    assert _merge(codes=["R4"]).admit is False


def test_drift_beats_property_miss() -> None:
    assert _merge(codes=["R9"], property_misses=["p"]).exit_code == 3


def test_the_remote_lane_confirms_only_a_green_local_lane_of_pure_fn_properties() -> None:
    """Issue 17: remote runs start only after every local run passed, only for pure_fn."""
    from client.gate.pipeline import remote_not_run  # noqa: PLC0415 - one test of the gate

    assert remote_not_run(local_ran=True, local_green=True, confirmable=True) == ""
    assert "did not pass" in remote_not_run(local_ran=True, local_green=False, confirmable=True)
    assert "pure_fn" in remote_not_run(local_ran=True, local_green=True, confirmable=False)
    # --remote-only: no local lane, the remote lane is the (never admitted) confirmation run
    assert remote_not_run(local_ran=False, local_green=False, confirmable=True) == ""
