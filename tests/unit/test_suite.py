"""The signed suite: one value from the signature step on; every Execute made of it carries the
signed envelope, the tree the digest was signed for, and nothing else of the caller's choosing."""

from __future__ import annotations

from pathlib import Path

from client.gate.runs.judging import JudgeMode
from client.gate.runs.suite import SignedSuite
from patchgate.envelope import Envelope
from patchgate.request import CodeTarget, Variant
from tests.unit._gate_helpers import prop

ENVELOPE = Envelope(payload=b"{}", payload_type="x", signatures=())
SUITE = SignedSuite(
    envelope=ENVELOPE,
    digest="d" * 64,
    workspace=Path("/patched"),
    fixture_root="fx",
    base=Path("/base"),
    executors=("unix:/a", "unix:/b"),
    remote_executor="dns:///remote:7070",
    judge=JudgeMode(judge="on", source_roots=("src",), production=("m",)),
    targets=(CodeTarget("m.py", 1, 2, "m.f"),),
)


def test_a_request_carries_the_signed_parts() -> None:
    r = SUITE.request([prop("p.a", ("m.f",))], runs=2, request_id="rid")
    assert (r.envelope, r.workspace, r.fixture_root) == (ENVELOPE, Path("/patched"), "fx")
    assert ([p.id for p in r.properties], r.runs, r.request_id) == (["p.a"], 2, "rid")
    assert (r.isolation, r.variants, r.variant_bound_ms, r.variant_scope) == ("run", (), 0, ())


def test_a_mutation_request_carries_its_variants() -> None:
    v = Variant("m.py", b"x = 1\n", ("p.a",))
    r = SUITE.request([prop("p.a", ("m.f",))], runs=1, request_id="rid", variants=[v],
                      variant_bound_ms=900, variant_scope=["p.a"])  # fmt: skip
    assert (r.variants, r.variant_bound_ms, r.variant_scope) == ((v,), 900, ("p.a",))


def test_targets_and_judge_mode_are_the_connections_not_the_requests() -> None:
    """``TargetedClient`` adds them: a request made of the suite names neither."""
    r = SUITE.request([prop("p.a", ("m.f",))], runs=2, request_id="rid")
    assert (r.targets, r.judge, r.source_roots, r.production) == ((), "on", (), ())
    assert SUITE.judge.apply(r).production == ("m",)


def test_each_lane_has_its_addresses_and_the_request_ids_their_prefix() -> None:
    assert SUITE.lane_addresses("local") == ("unix:/a", "unix:/b")
    assert SUITE.lane_addresses("remote") == ("dns:///remote:7070",)
    alone = SignedSuite(envelope=ENVELOPE, digest="e" * 64, workspace=Path("/p"), fixture_root="f")
    assert (alone.lane_addresses("remote"), alone.lane_addresses("local")) == ((), ())
    assert SUITE.request_prefix == "d" * 12
