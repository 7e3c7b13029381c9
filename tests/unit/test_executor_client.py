"""ExecutorClient pieces without a server: what is uploaded, how gRPC failures are classified."""

from __future__ import annotations

import os
from pathlib import Path

import grpc
import pytest

from patchgate.errors import RefusedError, TransportError
from patchgate.executor_client import _rpc_error, workspace_files


def test_workspace_skips_git_fixture_root_and_symlinks(tmp_path: Path) -> None:
    """Regular files only; .git/ and the fixture root are never part of the workspace."""
    for rel in ("a.py", "pkg/b.py", ".git/HEAD", "fixtures/x.json", "fixturesque/y.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    os.symlink("/etc/passwd", tmp_path / "link")
    assert sorted(workspace_files(tmp_path, "fixtures")) == ["a.py", "fixturesque/y.py", "pkg/b.py"]


class _Err(grpc.RpcError, grpc.Call):  # type: ignore[misc]
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "why"

    # unused grpc.Call surface
    def initial_metadata(self): ...  # type: ignore[no-untyped-def]
    def trailing_metadata(self): ...  # type: ignore[no-untyped-def]
    def is_active(self): ...  # type: ignore[no-untyped-def]
    def time_remaining(self): ...  # type: ignore[no-untyped-def]
    def cancel(self): ...  # type: ignore[no-untyped-def]
    def add_callback(self, callback): ...  # type: ignore[no-untyped-def]


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.PERMISSION_DENIED,
    ],
)
def test_refusals_are_refused_errors(code: grpc.StatusCode) -> None:
    """A refusal means nothing ran."""
    err = _rpc_error(_Err(code))
    assert isinstance(err, RefusedError)
    assert err.code == code.name


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (grpc.StatusCode.UNAVAILABLE, "unavailable"),
        (grpc.StatusCode.DEADLINE_EXCEEDED, "deadline"),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, "resource_exhausted"),
        (grpc.StatusCode.UNKNOWN, "internal"),
    ],
)
def test_infrastructure_codes_are_transport(code: grpc.StatusCode, kind: str) -> None:
    """Everything else is a transport error, never a refusal or an outcome."""
    err = _rpc_error(_Err(code))
    assert isinstance(err, TransportError)
    assert err.kind == kind
