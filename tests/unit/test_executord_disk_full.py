"""A full disk under the executor (issue 41, item 4): ``resource_exhausted`` naming the path's
filesystem, at both boundaries (a run's transport record, the gRPC status of a call), never
``internal`` "OSError"; any other OSError stays internal."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import grpc
import pytest

from executord.errors import ResourceExhausted, disk_full, sandbox_error
from executord.runs.fakeruntime import FakeRun, FakeRuntime
from executord.runs.runpath import RunPath
from executord.service.adapter import _wrap_unary
from tests.unit.test_executord_runs import _execute, _rig

RESOURCE_EXHAUSTED = 6  # TRANSPORT_KIND_RESOURCE_EXHAUSTED
INTERNAL = 7  # TRANSPORT_KIND_INTERNAL


def _full(path: Path, code: int = errno.ENOSPC) -> OSError:
    return OSError(code, os.strerror(code), str(path))


@pytest.mark.parametrize(
    ("code", "why"), [(errno.ENOSPC, "no space left"), (errno.EDQUOT, "disk quota exceeded")]
)
def test_a_full_disk_names_the_path_and_its_filesystem(tmp_path: Path, code: int, why: str) -> None:
    mount = tmp_path
    while not os.path.ismount(mount):
        mount = mount.parent
    path = tmp_path / "req-1" / "ws" / "not-yet-made"
    full = disk_full(_full(path, code))
    assert isinstance(full, ResourceExhausted)
    assert str(full) == f"{why} on the filesystem at {mount} ({path})"
    wrapped = RuntimeError("while writing")
    wrapped.__cause__ = _full(path, code)
    assert disk_full(wrapped) is not None  # raised from a full disk: still one
    assert disk_full(OSError(errno.EACCES, "denied", str(path))) is None
    assert disk_full(ValueError("x")) is None


def test_a_run_that_meets_a_full_disk_is_a_resource_exhausted_transport_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun()))

    def full(*_a: Any, **_k: Any) -> Any:
        raise _full(rig.executor.work_dir / "req" / "results")

    monkeypatch.setattr(RunPath, "_sandbox", full)  # the one run path's sandbox run
    report = _execute(rig, runs=1)
    assert list(report.outcomes) == []
    assert [t.kind for t in report.transport] == [RESOURCE_EXHAUSTED]
    assert "no space left on the filesystem at /" in report.transport[0].detail
    assert str(rig.executor.work_dir / "req" / "results") in report.transport[0].detail


def test_another_unexpected_error_of_a_run_stays_internal() -> None:
    """The honest shape: an OSError that is not a full disk is still ``internal``."""
    err = sandbox_error(OSError(errno.EIO, "i/o error", "/x"))
    assert (err.kind, err.detail) == ("internal", "OSError")
    assert sandbox_error(_full(Path("/x"))).kind == "resource_exhausted"


class _Aborted(Exception):
    pass


class _Context:
    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.code, self.details = code, details
        raise _Aborted


@pytest.mark.parametrize(
    ("exc", "code", "details"),
    [
        (_full(Path("/var/lib/x")), grpc.StatusCode.RESOURCE_EXHAUSTED, "no space left on the"),
        (OSError(errno.EIO, "i/o"), grpc.StatusCode.INTERNAL, "internal error: OSError"),
    ],
)
def test_a_call_that_meets_a_full_disk_is_resource_exhausted(
    exc: Exception, code: grpc.StatusCode, details: str
) -> None:
    def handler(_request: object, _context: object) -> None:
        raise exc

    context = _Context()
    with pytest.raises(_Aborted):
        _wrap_unary(handler, "/patchgate.v1.Executor/Execute")(None, context)
    assert context.code == code
    assert context.details.startswith(details)
