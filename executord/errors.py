"""Errors of the executor daemon.

Hierarchy::

    ExecutorError (PatchgateError)    base; ``status`` names the gRPC status it becomes
    ├── InvalidArgument              malformed request, a blob whose bytes do not hash to its name
    ├── FailedPrecondition           refusals before any container starts: bad envelope, wrong role,
    │                                digest mismatch, disallowed command, missing blob, workspace
    │                                path under the fixture root
    ├── ResourceExhausted            the blob store is full (or the disk is)
    ├── Unavailable                  the daemon is shutting down and takes no new request
    └── SandboxError                 one run could not be carried out; ``kind`` is a transport kind
                                     (unavailable, image_missing, sandbox_start_failed,
                                     resource_exhausted, killed_externally, internal). Never an
                                     outcome; it becomes a TransportRecord of that run.

The service adapter maps ``status`` to a gRPC status in one interceptor; nothing else in the daemon
imports grpc.
"""

from __future__ import annotations

import errno
import os

from patchgate.errors import TRANSPORT_KINDS, PatchgateError

__all__ = [
    "ExecutorError",
    "FailedPrecondition",
    "InvalidArgument",
    "ResourceExhausted",
    "SandboxError",
    "Unavailable",
    "disk_full",
    "sandbox_error",
]

_FULL = {errno.ENOSPC: "no space left", errno.EDQUOT: "disk quota exceeded"}


class ExecutorError(PatchgateError):
    """Base of the executor's errors; ``status`` is the gRPC status name it maps to."""

    status = "INTERNAL"


class InvalidArgument(ExecutorError):
    """The request is malformed, or an uploaded blob does not hash to its name."""

    status = "INVALID_ARGUMENT"


class FailedPrecondition(ExecutorError):
    """A refusal: nothing ran, no container was started."""

    status = "FAILED_PRECONDITION"


class ResourceExhausted(ExecutorError):
    """The blob store cannot take more bytes."""

    status = "RESOURCE_EXHAUSTED"


class Unavailable(ExecutorError):
    """The daemon is shutting down: the request was not started (the client may retry)."""

    status = "UNAVAILABLE"


class SandboxError(ExecutorError):
    """Infrastructure failure of one run; becomes a transport record, never an outcome."""

    def __init__(self, kind: str, detail: str) -> None:
        if kind not in TRANSPORT_KINDS:
            kind = "internal"
        super().__init__(f"sandbox {kind}: {detail}")
        self.kind = kind
        self.detail = detail


def _filesystem(path: str) -> str:
    """The mount point of the filesystem that holds ``path`` (its nearest existing ancestor)."""
    p = os.path.abspath(path)
    while not os.path.exists(p) and p != os.path.dirname(p):
        p = os.path.dirname(p)
    while not os.path.ismount(p):
        p = os.path.dirname(p)
    return p


def disk_full(exc: BaseException) -> ResourceExhausted | None:
    """A full disk or an exceeded quota (``ENOSPC``, ``EDQUOT``) as ``ResourceExhausted`` naming
    the path and its filesystem; ``None`` for any other error. The executor's boundaries (the
    gRPC adapter, a run's transport record) map with it, so a full disk is never ``internal``."""
    for err in (exc, exc.__cause__, exc.__context__):
        if isinstance(err, OSError) and err.errno in _FULL:
            why = _FULL[err.errno]
            if not err.filename:
                return ResourceExhausted(f"{why} on a filesystem of the executor")
            path = os.fsdecode(err.filename)
            return ResourceExhausted(f"{why} on the filesystem at {_filesystem(path)} ({path})")
    return None


def sandbox_error(exc: BaseException) -> SandboxError:
    """An unexpected error of one run as its transport failure: ``resource_exhausted`` naming
    the filesystem for a full disk, else ``internal`` with the error's type."""
    full = disk_full(exc)
    if full is not None:
        return SandboxError("resource_exhausted", str(full))
    return SandboxError("internal", type(exc).__name__)
