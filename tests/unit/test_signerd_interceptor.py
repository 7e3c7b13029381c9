"""signerd.interceptor: domain errors become their gRPC status; anything else a fixed INTERNAL."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from signerd.errors import AuditUnavailable, InvalidArgument, PermissionDenied, Unauthenticated
from signerd.interceptor import _wrap


class Aborted(Exception):
    pass


class FakeContext:
    """Records abort(code, details) and raises, as grpcio's context does."""

    def __init__(self) -> None:
        self.code: grpc.StatusCode | None = None
        self.details = ""

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.code, self.details = code, details
        raise Aborted


def _run(exc: BaseException) -> FakeContext:
    def behavior(_request: Any, _context: Any) -> Any:
        raise exc

    ctx = FakeContext()
    with pytest.raises(Aborted):
        _wrap("/patchgate.v1.Signer/SignFixtureDigest", behavior)(None, ctx)  # type: ignore[arg-type]
    return ctx


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (InvalidArgument("bad seed"), grpc.StatusCode.INVALID_ARGUMENT),
        (PermissionDenied("executor"), grpc.StatusCode.PERMISSION_DENIED),
        (Unauthenticated("who"), grpc.StatusCode.UNAUTHENTICATED),
        (AuditUnavailable("disk"), grpc.StatusCode.UNAVAILABLE),
    ],
)
def test_request_errors_map_to_their_status_with_the_reason(exc: Exception, code: Any) -> None:
    """Each RequestError becomes its grpc_code; the reason is the details."""
    ctx = _run(exc)
    assert ctx.code == code
    assert ctx.details == str(exc)


def test_unexpected_error_is_internal_with_a_fixed_message() -> None:
    """An unexpected exception's text (which could carry anything) never reaches the caller."""
    ctx = _run(ValueError("secret-looking value 0123456789abcdef"))
    assert ctx.code == grpc.StatusCode.INTERNAL
    assert ctx.details == "internal error"


def test_success_passes_the_reply_through() -> None:
    """A normal return is untouched."""
    assert _wrap("/m", lambda r, c: ("reply", r))("req", FakeContext()) == ("reply", "req")  # type: ignore[arg-type]
