"""Errors of the signer daemon.

Hierarchy::

    PatchgateError (patchgate.errors)
    └── SignerdError                 base of everything signerd raises on purpose
        ├── ConfigError              serve/keygen refuses to start (bad flags, unsafe socket dir,
        │                            unwritable audit log); one line on stderr, exit 1
        ├── AuditError               the audit log cannot be written or read; a request is refused
        │   └── AuditChainError      audit-verify: the chain is broken at ``line``
        └── RequestError             a request refused on purpose; ``grpc_code`` names the status
            ├── InvalidArgument      non-canonical manifest           → INVALID_ARGUMENT
            ├── Unauthenticated      caller carries no identity        → UNAUTHENTICATED
            ├── PermissionDenied     caller's role may not do this     → PERMISSION_DENIED
            └── AuditUnavailable     audit write failed: fail closed   → UNAVAILABLE

The one server interceptor (``signerd.interceptor``) maps ``RequestError.grpc_code`` to the gRPC
status; domain code never imports grpc.
"""

from __future__ import annotations

from patchgate.errors import PatchgateError
from signerd.excerpt import cap

__all__ = [
    "AuditChainError",
    "AuditError",
    "AuditUnavailable",
    "ConfigError",
    "InvalidArgument",
    "PermissionDenied",
    "RequestError",
    "SignerdError",
    "Unauthenticated",
]


class SignerdError(PatchgateError):
    """Base of every error signerd raises on purpose."""


class ConfigError(SignerdError):
    """The daemon refuses to start with this configuration."""


class AuditError(SignerdError):
    """The audit log cannot be written or read."""


class AuditChainError(AuditError):
    """The audit chain is broken; ``line`` is the 1-based number of the first bad line."""

    def __init__(self, line: int, why: str) -> None:
        super().__init__(f"audit chain broken at line {line}: {why}")
        self.line = line
        self.why = why


class RequestError(SignerdError):
    """A request refused on purpose; ``grpc_code`` is the name of the gRPC status it becomes.

    ``reason`` is capped (``signerd.excerpt.cap``): it goes into the audit line, the log and the
    status details, so it must stay small whatever the request carried.
    """

    grpc_code = "INTERNAL"

    def __init__(self, reason: str) -> None:
        reason = cap(reason)
        super().__init__(reason)
        self.reason = reason


class InvalidArgument(RequestError):
    """The manifest is not canonical or breaks a limit; nothing was signed."""

    grpc_code = "INVALID_ARGUMENT"


class Unauthenticated(RequestError):
    """The caller presented no usable identity."""

    grpc_code = "UNAUTHENTICATED"


class PermissionDenied(RequestError):
    """The caller's role may not call this method (deny by default)."""

    grpc_code = "PERMISSION_DENIED"


class AuditUnavailable(RequestError):
    """The audit line could not be made durable, so the request is refused (fail closed)."""

    grpc_code = "UNAVAILABLE"
