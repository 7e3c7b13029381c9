"""Trust on first use behind one fleet address: a result signed by another replica's key.

A ``dns:///`` address balances over replicas with their own keys. Unpinned, the client asks GetInfo
again until it meets the signer (each key a process at the address reported for itself); pinned,
it never learns a key. No server: ``info`` is answered by a scripted list of replicas.
"""

from __future__ import annotations

import itertools

from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.keys import Keyring, Signer
from patchgate.report import sign_result
from patchgate.v1 import common_pb2, executor_pb2

DIGEST = "d" * 64
R1, R2 = Signer.generate("executor"), Signer.generate("executor")


class _Fleet(ExecutorClient):
    """GetInfo answered by replicas in round-robin order; counts the calls."""

    def __init__(self, replicas: list[Signer], **kw: object) -> None:
        super().__init__("dns:///fleet.invalid:1", **kw)  # type: ignore[arg-type]
        self._next = itertools.cycle(replicas)
        self.info_calls = 0

    def info(self) -> executor_pb2.ExecutorInfo:
        self.info_calls += 1
        r = next(self._next)
        return executor_pb2.ExecutorInfo(executor_keyid=r.keyid, public_key_pem=r.public_key_pem())


def _result(signer: Signer, judge: str = "on") -> executor_pb2.ExecuteResult:
    report = executor_pb2.ExecutionReport(
        request_id="rq",
        judge=judge,
        executor_keyid=signer.keyid,
        observed_fixture_digest=DIGEST,
        outcomes=[
            common_pb2.RunOutcome(property_id="p", run_index=i, outcome=common_pb2.OUTCOME_PASS)
            for i in (1, 2)
        ],
    )
    return executor_pb2.ExecuteResult(
        report=report, result_envelope=sign_result(report, signer).to_proto()
    )


def _verify(client: ExecutorClient, signer: Signer, ran: str = "on") -> ExecutionResult:
    keyring = client._result_keyring()
    expected = ("rq", DIGEST, "executor", "on")
    return client._verify(_result(signer, ran), keyring, expected, [("p", 1), ("p", 2)], 0, 0)


def test_result_of_another_replica_verifies_after_meeting_it() -> None:
    client = _Fleet([R1, R2])
    try:
        got = _verify(client, R2)  # first GetInfo met R1; the result is R2's
    finally:
        client.close()
    assert got.executor_keyid == R2.keyid
    assert [o.outcome for o in got.outcomes] == ["pass", "pass"]
    assert got.transport == ()


def test_key_never_reported_at_the_address_is_refused() -> None:
    stranger = Signer.generate("executor")
    client = _Fleet([R1, R2])
    try:
        got = _verify(client, stranger)
    finally:
        client.close()
    assert got.outcomes == ()
    assert {t.kind for t in got.transport} == {"internal"}
    assert client.info_calls <= 9  # bounded: first GetInfo + at most 8 more


def test_pinned_keyring_never_learns_a_key() -> None:
    client = _Fleet([R1, R2], executor_keyring=Keyring([R1.keyring_entry()]))
    try:
        got = _verify(client, R2)
    finally:
        client.close()
    assert client.info_calls == 0
    assert got.outcomes == ()
    assert {t.kind for t in got.transport} == {"internal"}


def test_a_report_that_ran_another_judge_mode_than_asked_is_refused() -> None:
    """Asked for the judge, signed as run without it (an old executor ignores the field): the
    passes are not taken (issue 20)."""
    for ran in ("off", ""):
        client = _Fleet([R1])
        try:
            got = _verify(client, R1, ran=ran)
        finally:
            client.close()
        assert got.outcomes == ()
        assert {t.kind for t in got.transport} == {"internal"}
        assert "asked for judge on" in got.transport[0].detail
