"""patchgate.signer_client without a server: gRPC status → refusal or transport error; wire form."""

from __future__ import annotations

import grpc
import pytest

from patchgate.digest import FileEntry, Manifest
from patchgate.errors import RefusedError, TransportError
from patchgate.signer_client import _map_rpc_error, manifest_to_proto


class FakeCall(grpc.RpcError, grpc.Call):  # type: ignore[misc]
    """An RpcError carrying a status, as grpcio raises them."""

    def __init__(self, code: grpc.StatusCode, details: str = "why") -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def initial_metadata(self) -> None: ...
    def trailing_metadata(self) -> None: ...
    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> None: ...
    def cancel(self) -> bool:
        return False

    def add_callback(self, callback: object) -> bool:
        return False


@pytest.mark.parametrize(
    "code",
    ["INVALID_ARGUMENT", "PERMISSION_DENIED", "UNAUTHENTICATED", "FAILED_PRECONDITION"],
)
def test_refusal_codes_become_refused_error(code: str) -> None:
    """The four decision codes are RefusedError(code name, details)."""
    err = _map_rpc_error(FakeCall(getattr(grpc.StatusCode, code), "nope"))
    assert isinstance(err, RefusedError)
    assert (err.code, err.reason) == (code, "nope")


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("UNAVAILABLE", "unavailable"),
        ("CANCELLED", "unavailable"),
        ("DEADLINE_EXCEEDED", "deadline"),
        ("INTERNAL", "internal"),
        ("UNKNOWN", "internal"),
        ("RESOURCE_EXHAUSTED", "internal"),
    ],
)
def test_other_codes_become_transport_errors(code: str, kind: str) -> None:
    """Infrastructure codes are TransportError of the documented kind, never a refusal."""
    err = _map_rpc_error(FakeCall(getattr(grpc.StatusCode, code)))
    assert isinstance(err, TransportError)
    assert err.kind == kind


def test_manifest_wire_form_is_in_canonical_order() -> None:
    """Files by UTF-8 path bytes, commands by compact JSON text."""
    m = Manifest(
        pin_id="p",
        files={"b": FileEntry("1" * 64, 1), "a": FileEntry("2" * 64, 2)},
        seed=3,
        clock_bound_ms=4,
        allowed_commands=(("python", "-q"), ("python",)),
    )
    msg = manifest_to_proto(m)
    assert [f.path for f in msg.files] == ["a", "b"]
    assert [list(c.argv) for c in msg.allowed_commands] == [["python", "-q"], ["python"]]
    assert (msg.pin_id, msg.seed, msg.clock_bound_ms, msg.algorithm) == ("p", 3, 4, "sha256")
