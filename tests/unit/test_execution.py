"""client.gate.runs.execution with fake executor clients: spread, concurrency, transport re-run."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from client.gate.runs.execution import (
    LaneClient,
    LaneResult,
    LaneTerms,
    default_concurrency,
    run_lane,
)
from client.gate.runs.suite import SignedSuite
from patchgate.envelope import Envelope
from patchgate.errors import RefusedError, TransportError
from patchgate.executor_client import ExecutionResult
from patchgate.pins import PropertyPin
from patchgate.request import ExecuteRequest
from patchgate.results import RunOutcome, TransportRecord

DIGEST = "d" * 64
ENVELOPE = Envelope(payload_type="x", payload=b"{}", signatures=())


def _prop(i: int) -> PropertyPin:
    return PropertyPin(
        id=f"p{i}", claim="c", property_class="pure_fn", covers=("m.f",), command=("python",)
    )


SUITE = [_prop(i) for i in range(4)]


def ok(address: str, pid: str, keyid: str = "", digest: str = DIGEST) -> ExecutionResult:
    """Both runs passed on ``address``, signed by ``keyid`` (default: derived from the address)."""
    return ExecutionResult(
        address=address, lane="local", executor_keyid=keyid or f"key-{address}",
        observed_fixture_digest=digest,
        outcomes=(RunOutcome.make(pid, 1, "pass"), RunOutcome.make(pid, 2, "pass")),
        transport=(), timings={}, sandbox={}, envelope=None, uploaded_bytes=10,
    )  # fmt: skip


def lost(
    address: str, pid: str, kind: str = "unavailable", runs: Sequence[int] = (1, 2)
) -> ExecutionResult:
    """No outcome: one transport record per run."""
    return ExecutionResult(
        address=address, lane="local", executor_keyid="", observed_fixture_digest="",
        outcomes=(),
        transport=tuple(
            TransportRecord(kind=kind, detail="gone", property_id=pid, run_index=r,
                            lane="local", address=address)
            for r in runs
        ),
        timings={}, sandbox={}, envelope=None, uploaded_bytes=0,
    )  # fmt: skip


Script = Callable[[str, str, int], ExecutionResult]  # (address, property id, call no.) -> result


@dataclass
class Fleet:
    """Fake clients for several addresses sharing one script; records every call."""

    script: Script
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # address, pid, request id
    closed: list[str] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)
    peak: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def connect(self, address: str) -> LaneClient:
        return FakeClient(address, self)


@dataclass
class FakeClient:
    address: str
    fleet: Fleet

    def execute(
        self, request: ExecuteRequest, on_progress: Callable[[str], None] | None = None
    ) -> ExecutionResult:
        pid, request_id = request.properties[0].id, request.request_id
        f = self.fleet
        with f.lock:
            n = sum(1 for a, p, _ in f.calls if p == pid) + 1
            f.calls.append((self.address, pid, request_id or ""))
            f.in_flight[self.address] = f.in_flight.get(self.address, 0) + 1
            f.peak[self.address] = max(f.peak.get(self.address, 0), f.in_flight[self.address])
        try:
            return f.script(self.address, pid, n)
        finally:
            with f.lock:
                f.in_flight[self.address] -= 1

    def close(self) -> None:
        self.fleet.closed.append(self.address)


def _run(fleet: Fleet, addresses: Sequence[str], suite: Sequence[PropertyPin] = SUITE,
         **kw: object) -> LaneResult:  # fmt: skip
    signed = SignedSuite(
        envelope=ENVELOPE, digest=DIGEST, workspace=Path("/nonexistent"), fixture_root="fixtures"
    )
    terms = LaneTerms(runs=2, connect=fleet.connect, **kw)  # type: ignore[arg-type]
    return run_lane(signed, "local", addresses, suite, terms)


def _ids(result: LaneResult) -> set[str]:
    return {o.property_id for o in result.outcomes}


def test_default_concurrency_is_two_for_dns_fleets_else_one() -> None:
    assert default_concurrency("dns:///tasks.executord:7070") == 2
    assert default_concurrency("unix:/run/x.sock") == 1
    assert default_concurrency("localhost:7070") == 1


def test_properties_spread_over_two_addresses_and_name_their_key() -> None:
    barrier = threading.Barrier(2, timeout=10)

    def script(address: str, pid: str, _n: int) -> ExecutionResult:
        if pid in ("p0", "p1"):
            barrier.wait()  # the two addresses hold one property each at the same time
        return ok(address, pid)

    fleet = Fleet(script)
    result = _run(fleet, ["A", "B"])
    assert _ids(result) == {p.id for p in SUITE}
    assert {a for a, _, _ in fleet.calls} == {"A", "B"}
    assert {r["executor_keyid"] for r in result.results} == {"key-A", "key-B"}
    for r in result.results:
        assert r["executor_keyid"] == f"key-{r['address']}"
    assert sorted(fleet.closed) == ["A", "B"]


def test_dns_address_runs_two_properties_at_once() -> None:
    """Two Execute calls are in flight together on one dns address (round robin spreads them)."""
    barrier = threading.Barrier(2, timeout=10)

    def script(address: str, pid: str, _n: int) -> ExecutionResult:
        if pid in ("p0", "p1"):
            barrier.wait()  # breaks (and the test fails) unless both are in flight together
        return ok(address, pid)

    fleet = Fleet(script)
    result = _run(fleet, ["dns:///tasks.executord:7070"])
    assert _ids(result) == {p.id for p in SUITE}
    assert fleet.peak["dns:///tasks.executord:7070"] == 2


def test_plain_address_runs_one_property_at_a_time() -> None:
    fleet = Fleet(lambda a, p, _n: ok(a, p))
    _run(fleet, ["unix:/x.sock"])
    assert fleet.peak["unix:/x.sock"] == 1


def test_concurrency_flag_overrides_the_default() -> None:
    barrier = threading.Barrier(3, timeout=10)

    def script(address: str, pid: str, _n: int) -> ExecutionResult:
        if pid in ("p0", "p1", "p2"):
            barrier.wait()
        return ok(address, pid)

    fleet = Fleet(script)
    _run(fleet, ["unix:/x.sock"], concurrency=3)
    assert fleet.peak["unix:/x.sock"] == 3


def test_transport_only_result_is_rerun_on_the_other_address() -> None:
    def script(address: str, pid: str, _n: int) -> ExecutionResult:
        return lost(address, pid) if address == "A" else ok(address, pid)

    fleet = Fleet(script)
    result = _run(fleet, ["A", "B"])
    assert _ids(result) == {p.id for p in SUITE}
    assert all(o.outcome == "pass" for o in result.outcomes)
    assert result.transport == []  # nothing is missing
    failed_on_a = [p for a, p, _ in fleet.calls if a == "A"]
    assert failed_on_a  # A took work and lost it ...
    assert {r.property_id for r in result.retried} == set(failed_on_a)  # ... which is recorded
    assert all(r.address == "A" for r in result.retried)
    for pid in failed_on_a:  # ... and each was re-run once, on B, with a fresh request id
        reruns = [(a, rid) for a, p, rid in fleet.calls if p == pid]
        assert [a for a, _ in reruns] == ["A", "B"]
        assert reruns[1][1].endswith("-rerun1")
        assert result.keyid_of(pid) == "key-B"


def test_single_address_reruns_on_the_same_address() -> None:
    """A dns fleet address: the fresh Execute is balanced onto a surviving replica."""

    def script(address: str, pid: str, n: int) -> ExecutionResult:
        if pid == "p1" and n == 1:
            return lost(address, pid)
        return ok(address, pid, keyid="replica-2" if n == 2 else "replica-1")

    fleet = Fleet(script)
    result = _run(fleet, ["dns:///fleet:1"])
    assert _ids(result) == {p.id for p in SUITE}
    assert [c[1] for c in fleet.calls].count("p1") == 2
    assert len(result.retried) == 2
    assert result.transport == []
    assert result.keyid_of("p1") == "replica-2"
    attempts = [r["attempt"] for r in result.results if r["property_id"] == "p1"]
    assert attempts == [1, 2]


def test_rerun_happens_once_then_transport_stays_transport() -> None:
    fleet = Fleet(lambda a, p, _n: lost(a, p))
    result = _run(fleet, ["A", "B"], suite=SUITE[:1])
    assert len(fleet.calls) == 2  # the first attempt and exactly one re-run
    assert result.outcomes == []
    assert [t.kind for t in result.transport] == ["unavailable", "unavailable"]
    assert len(result.retried) == 2


def test_partial_result_is_not_rerun() -> None:
    """One run reported, one lost: the missing run stays transport (incomplete), no re-run."""

    def script(address: str, pid: str, _n: int) -> ExecutionResult:
        got = ok(address, pid)
        return ExecutionResult(
            **{**got.__dict__, "outcomes": got.outcomes[:1],
               "transport": lost(address, pid, "resource_exhausted", runs=(2,)).transport}
        )  # fmt: skip

    fleet = Fleet(script)
    result = _run(fleet, ["A", "B"], suite=SUITE[:1])
    assert len(fleet.calls) == 1
    assert [t.kind for t in result.transport] == ["resource_exhausted"]
    assert result.retried == []


def test_refusal_is_not_rerun_and_is_not_transport() -> None:
    def script(address: str, pid: str, _n: int) -> ExecutionResult:
        raise RefusedError("FAILED_PRECONDITION", "bad envelope")

    fleet = Fleet(script)
    result = _run(fleet, ["A", "B"], suite=SUITE[:1])
    assert len(fleet.calls) == 1
    assert result.transport == []
    assert result.retried == []
    assert result.outcomes == []
    assert "refused (FAILED_PRECONDITION): bad envelope" in result.refusals[0]


def test_raised_transport_error_is_rerun_like_a_returned_one() -> None:
    def script(address: str, pid: str, n: int) -> ExecutionResult:
        if n == 1:
            raise TransportError("deadline", "slow")
        return ok(address, pid)

    fleet = Fleet(script)
    result = _run(fleet, ["A"], suite=SUITE[:1])
    assert [r.kind for r in result.retried] == ["deadline"]
    assert result.retried[0].property_id == "p0"
    assert result.retried[0].address == "A"
    assert _ids(result) == {"p0"}


def test_other_digest_discards_outcomes_without_rerun() -> None:
    fleet = Fleet(lambda a, p, _n: ok(a, p, digest="e" * 64))
    result = _run(fleet, ["A"], suite=SUITE[:1])
    assert result.outcomes == []
    assert len(fleet.calls) == 1
    assert "observed fixture digest" in result.refusals[0]


def test_unexpected_error_propagates_instead_of_hanging() -> None:
    def script(address: str, pid: str, _n: int) -> ExecutionResult:
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError, match="bug"):
        _run(Fleet(script), ["A", "B"])


def test_duplicate_addresses_are_one_address() -> None:
    """``--executor A --executor A``: a re-run is not stuck waiting for 'another' A."""

    def script(address: str, pid: str, n: int) -> ExecutionResult:
        return lost(address, pid) if n == 1 else ok(address, pid)

    fleet = Fleet(script)
    result = _run(fleet, ["A", "A"], suite=SUITE[:2])
    assert _ids(result) == {"p0", "p1"}


def test_lane_summary_names_every_result_and_its_key() -> None:
    fleet = Fleet(lambda a, p, _n: ok(a, p))
    result = _run(fleet, ["A"], suite=SUITE[:1])
    summary = result.summary({"p0": "pass"})
    assert summary["results"] == [
        {"property_id": "p0", "attempt": 1, "address": "A", "executor_keyid": "key-A",
         "outcomes": {"1": "pass", "2": "pass"}, "transport": []}
    ]  # fmt: skip
    assert summary["executors"]["A"]["executor_keyids"] == ["key-A"]
    assert summary["retried"] == 0
