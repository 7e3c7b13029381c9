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
