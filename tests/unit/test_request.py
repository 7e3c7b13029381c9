"""One Execute request: what the client encodes from its ``ExecuteRequest`` is what the executor
decodes into its ``ExecuteInput``, part by part (the two ends share ``patchgate.request``)."""

from __future__ import annotations

from pathlib import Path

from executord.service.adapter import _to_input
from patchgate.envelope import Envelope, Sig
from patchgate.executor_client import _message
from patchgate.request import (
    CodeTarget,
    ExecuteInput,
    ExecuteRequest,
    PropertyRun,
    TreeItem,
    Variant,
)
from patchgate.symbols import wire_name
from patchgate.v1 import executor_pb2
from tests.unit._gate_helpers import CMD, prop

ENVELOPE = Envelope(payload=b"{}", payload_type="x", signatures=(Sig(keyid="k", sig=b"s"),))
LONG = "m." + "deep_" * 120 + "f"  # a qualified name past the wire's limit: sent as its wire name


def _request(**kw: object) -> ExecuteRequest:
    fields: dict[str, object] = {
        "envelope": ENVELOPE,
        "workspace": Path("/nonexistent"),
        "fixture_root": "fx",
        "properties": (prop("p.a", ("m.f",)), prop("p.b", ("m.g",))),
    }
    return ExecuteRequest(**{**fields, **kw})  # type: ignore[arg-type]


def test_the_executor_decodes_what_the_client_encodes() -> None:
    request = _request(
        runs=1,
        targets=(CodeTarget("m.py", 1, 3, "m.f"), CodeTarget("m.py", 5, 9, LONG)),
        isolation="property",
        judge="on",
        source_roots=("src",),
        production=("m",),
        variants=(Variant("src/m.py", b"x = 1\n", ("p.a",)), Variant("src/m.py", b"x = 2\n")),
        variant_bound_ms=900,
        variant_scope=("p.a", "p.b"),
    )
    tree = [executor_pb2.TreeEntry(path="m.py", digest="a" * 64, size=3, executable=True)]
    env = [executor_pb2.TreeEntry(path="lib/x.py", digest="b" * 64, size=4)]
    assert _to_input(_message(request, "rid", tree, env)) == ExecuteInput(
        request_id="rid",
        envelope=ENVELOPE,
        workspace=(TreeItem("m.py", "a" * 64, 3, executable=True),),
        fixture_root="fx",
        properties=(
            PropertyRun("p.a", (*CMD, "properties/test_x.py::test_p_a")),
            PropertyRun("p.b", (*CMD, "properties/test_x.py::test_p_b")),
        ),
        runs=1,
        targets=(CodeTarget("m.py", 1, 3, "m.f"), CodeTarget("m.py", 5, 9, wire_name(LONG))),
        isolation="property",
        environment=(TreeItem("lib/x.py", "b" * 64, 4),),
        judge="on",
        source_roots=("src",),
        production=("m",),
        variants=(Variant("src/m.py", b"x = 1\n", ("p.a",)), Variant("src/m.py", b"x = 2\n")),
        variant_bound_ms=900,
        variant_scope=("p.a", "p.b"),
    )


def test_a_plain_request_keeps_the_executors_defaults() -> None:
    """No targets, no variants, judge as asked: the executor reads the defaults it always did."""
    got = _to_input(_message(_request(judge="off"), "rid", [], []))
    assert (got.runs, got.isolation, got.judge) == (2, "run", "off")
    assert (got.targets, got.variants, got.variant_scope, got.environment) == ((), (), (), ())
    assert got.source_roots == (".",)  # none sent: the repository root


def test_a_variant_hides_its_source_from_its_repr() -> None:
    """A mutant's source is the one thing a log line must not carry around."""
    assert "x = 1" not in repr(Variant("m.py", b"x = 1\n"))
