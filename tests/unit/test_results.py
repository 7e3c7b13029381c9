"""Run outcomes vs transport records, failure normalization and outcome hashes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchgate.results import (
    OUTCOMES,
    TRANSPORT_KINDS,
    RunOutcome,
    TransportRecord,
    normalize_failure,
    outcome_hash,
)
from patchgate.v1 import common_pb2


def test_normalization_strips_run_specific_noise() -> None:
    """Addresses, timestamps, durations and temp paths do not change the signature."""
    a = "TimeoutError at 0x7f3a in /tmp/pytest-1/x.py 2026-09-10T12:00:01Z after 1.5s"
    b = "TimeoutError at 0x11aa in /tmp/pytest-9/y.py 2026-09-11T08:30:00Z after 20s"
    assert normalize_failure(a) == normalize_failure(b)
    assert outcome_hash("fail", a) == outcome_hash("fail", b)


def test_hash_separates_outcome_and_message() -> None:
    """Different outcome or different message: different hash."""
    assert outcome_hash("fail", "x") != outcome_hash("error", "x")
    assert outcome_hash("fail", "AssertionError: 1") != outcome_hash("fail", "AssertionError: 2")


@given(st.text(max_size=300))
def test_normalization_is_idempotent(text: str) -> None:
    """Normalizing twice is normalizing once."""
    once = normalize_failure(text)
    assert normalize_failure(once) == once


@given(st.sampled_from(OUTCOMES), st.text(max_size=80), st.integers(1, 2), st.integers(0, 10**6))
def test_run_outcome_proto_round_trip(outcome: str, failure: str, run: int, ms: int) -> None:
    """RunOutcome -> proto -> RunOutcome is the identity; a pass carries no signature."""
    o = RunOutcome.make("prop.a", run, outcome, failure, ms)
    assert RunOutcome.from_proto(o.to_proto()) == o
    if outcome == "pass":
        assert o.failure_signature == ""


def test_executed_targets_survive_the_wire_and_default_to_none() -> None:
    """The reporter's executed targets round-trip through the proto; without them it is empty."""
    o = RunOutcome.make("p", 1, "pass", executed=("billing.prorate", "billing.total"))
    back = RunOutcome.from_proto(o.to_proto())
    assert back.executed == ("billing.prorate", "billing.total")
    assert RunOutcome.make("p", 1, "pass").executed == ()
    assert RunOutcome.from_proto(RunOutcome.make("p", 1, "fail", "x").to_proto()).executed == ()


@given(st.sampled_from(TRANSPORT_KINDS), st.text(max_size=40))
def test_transport_proto_round_trip(kind: str, detail: str) -> None:
    """TransportRecord -> proto -> TransportRecord keeps the kind and detail."""
    t = TransportRecord(kind=kind, detail=detail, property_id="p", run_index=2)
    assert TransportRecord.from_proto(t.to_proto()) == t


def test_transport_kinds_match_the_wire_enum() -> None:
    """Each kind goes on the wire as the enum value of its own name (killed_externally too)."""
    for kind in TRANSPORT_KINDS:
        wire = TransportRecord(kind=kind, detail="").to_proto().kind
        assert common_pb2.TransportKind.Name(wire) == f"TRANSPORT_KIND_{kind.upper()}"
    assert "killed_externally" in TRANSPORT_KINDS


def test_outcomes_and_transport_kinds_are_disjoint() -> None:
    """No transport kind can be read as an outcome, or the reverse."""
    assert not set(OUTCOMES) & set(TRANSPORT_KINDS)
    with pytest.raises(ValueError, match="outcome"):
        RunOutcome.make("p", 1, "unavailable")
    with pytest.raises(ValueError, match="transport"):
        TransportRecord(kind="fail", detail="")


def test_unspecified_outcome_refused() -> None:
    """An outcome left unspecified on the wire is not read as anything."""
    with pytest.raises(ValueError, match="unspecified"):
        RunOutcome.from_proto(common_pb2.RunOutcome(property_id="p", run_index=1))


def test_a_parametrized_property_keeps_its_cases_on_the_wire_and_in_json() -> None:
    """Issue 24: each case's outcome travels with the run (signed with it) and reaches the ledger;
    an unknown case outcome is refused like an unknown outcome."""
    cases = (("t.py::f[b]", "fail"), ("t.py::f[a]", "pass"))
    o = RunOutcome.make("p", 1, "fail", "t.py::f[b]: no", 3, cases=cases)
    assert o.cases == (("t.py::f[a]", "pass"), ("t.py::f[b]", "fail"))
    assert RunOutcome.from_proto(o.to_proto()) == o
    assert o.to_json()["cases"] == {"t.py::f[a]": "pass", "t.py::f[b]": "fail"}
    assert "cases" not in RunOutcome.make("p", 1, "pass").to_json()
    with pytest.raises(ValueError, match="case outcome"):
        RunOutcome.make("p", 1, "pass", cases=(("t.py::f[a]", "green"),))
