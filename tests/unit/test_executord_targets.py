"""Target code ranges in an Execute request: bounded and safe before anything is materialized."""

from __future__ import annotations

import pytest

from executord.errors import InvalidArgument
from executord.runs.checks import MAX_TARGETS, check_request
from executord.runs.request import CodeTarget, ExecuteInput, PropertyRun
from patchgate.digest import Manifest
from patchgate.envelope import Envelope

CMD = ("python", "-m", "pytest")
MANIFEST = Manifest(pin_id="p", files={}, seed=1, clock_bound_ms=1000, allowed_commands=(CMD,))


def _input(*targets: CodeTarget) -> ExecuteInput:
    return ExecuteInput(
        request_id="r",
        envelope=Envelope(payload=b"", payload_type="", signatures=()),
        workspace=(),
        fixture_root="fixtures",
        properties=(PropertyRun("p", (*CMD, "t.py::test_x")),),
        targets=targets,
    )


def test_sane_targets_pass() -> None:
    """A safe path, 1 <= first <= last, a short name."""
    check_request(_input(CodeTarget("billing/core.py", 3, 9, "billing.core.prorate")), MANIFEST)


@pytest.mark.parametrize(
    ("target", "match"),
    [
        (CodeTarget("../etc/passwd", 1, 2, "x"), "target"),
        (CodeTarget("/abs.py", 1, 2, "x"), "target"),
        (CodeTarget("a.py", 0, 2, "x"), "lines"),
        (CodeTarget("a.py", 5, 2, "x"), "lines"),
        (CodeTarget("a.py", 1, 10**9, "x"), "lines"),
        (CodeTarget("a.py", 1, 2, ""), "name"),
        (CodeTarget("a.py", 1, 2, "n" * 513), "name"),
    ],
)
def test_bad_target_is_invalid_argument(target: CodeTarget, match: str) -> None:
    """Unsafe path, impossible lines, empty or oversized name: INVALID_ARGUMENT."""
    with pytest.raises(InvalidArgument, match=match):
        check_request(_input(target), MANIFEST)


def test_too_many_targets_is_invalid_argument() -> None:
    """The count is capped (the reporter's records stay small)."""
    many = tuple(CodeTarget("a.py", 1, 2, f"m.f{i}") for i in range(MAX_TARGETS + 1))
    with pytest.raises(InvalidArgument, match="more than"):
        check_request(_input(*many), MANIFEST)


def test_three_hundred_targets_pass() -> None:
    """A large patch's targets are within the bound (256 used to refuse the whole check)."""
    many = tuple(CodeTarget("a.py", i, i, f"m.f{i}") for i in range(1, 301))
    check_request(_input(*many), MANIFEST)


def test_wire_names_are_short_consistent_and_mapped_back() -> None:
    """A name over the wire limit goes as a hash (the same one each time, distinct per name), a
    short one as itself; the executor's ``executed`` comes back in symbol names, and names the
    client never sent are dropped."""
    import dataclasses  # noqa: PLC0415

    from patchgate.executor_client import ExecutionResult, _named_back  # noqa: PLC0415
    from patchgate.results import RunOutcome  # noqa: PLC0415
    from patchgate.symbols import MAX_TARGET_NAME, WIRE_NAME_CHARS, wire_name  # noqa: PLC0415

    long_a, long_b = "m." + "a" * 600, "m." + "a" * 599 + "b"
    assert wire_name("m.f") == "m.f"
    assert wire_name(long_a) == wire_name(long_a) != wire_name(long_b)
    assert len(wire_name(long_a)) <= WIRE_NAME_CHARS <= MAX_TARGET_NAME
    check_request(_input(CodeTarget("a.py", 1, 2, wire_name(long_a))), MANIFEST)
    outcome = RunOutcome.make("p", 1, "pass", executed=(wire_name(long_a), "m.f", "m.unsent"))
    result = ExecutionResult(
        address="a", lane="local", executor_keyid="k", observed_fixture_digest="d",
        outcomes=(outcome,), transport=(), timings={}, sandbox={}, envelope=None,
        uploaded_bytes=0,
    )  # fmt: skip
    back = _named_back(result, {wire_name(long_a): long_a, "m.f": "m.f"})
    assert back.outcomes == (dataclasses.replace(outcome, executed=tuple(sorted([long_a, "m.f"]))),)
