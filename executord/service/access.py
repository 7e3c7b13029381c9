"""Who may call the Executor service over mTLS: deny by default, only the ``client`` role.

When the daemon serves mTLS, the caller's role is the SPIFFE URI SAN of its verified certificate
(``spiffe://patchgate/role/<role>``, :func:`patchgate.tls.peer_spiffe_role`). Every method of
``patchgate.v1.Executor`` (GetInfo, FindMissingBlobs, UploadBlobs, Execute) needs the role
``client``; any other role, or a certificate without a role, gets PERMISSION_DENIED before the
handler runs. The gRPC health and reflection services stay open (orchestrators probe them).
Over a plaintext unix socket this interceptor is not installed: the socket's directory
permissions are the access control.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import structlog

from patchgate.server import wrap_handler
from patchgate.tls import peer_spiffe_role

__all__ = ["ALLOWED_ROLES", "GUARDED_PREFIX", "RoleInterceptor", "refusal"]

log = structlog.get_logger("executord.service.access")
GUARDED_PREFIX = "/patchgate.v1.Executor/"
ALLOWED_ROLES = frozenset({"client"})


def refusal(method: str, role: str | None) -> str | None:
    """Why ``role`` may not call ``method`` (None: it may)."""
    if not method.startswith(GUARDED_PREFIX):
        return None
    if role is None:
        return "the caller's certificate carries no patchgate role"
    if role not in ALLOWED_ROLES:
        return f"role {role!r} may not call the executor"
    return None


def _check(context: grpc.ServicerContext, method: str) -> None:
    role = peer_spiffe_role(context)
    why = refusal(method, role)
    if why is not None:
        log.warning("denied", method=method, role=role or "", reason=why)
        context.abort(grpc.StatusCode.PERMISSION_DENIED, why)


class RoleInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Checks the caller's role before any handler of the Executor service runs."""

    def intercept_service(
        self, continuation: Callable[[Any], Any], handler_call_details: Any
    ) -> Any:
        handler = continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or not method.startswith(GUARDED_PREFIX):
            return handler
        return wrap_handler(handler, method, unary=_unary, stream=_stream)


def _unary(fn: Callable[[Any, grpc.ServicerContext], Any], method: str) -> Callable[..., Any]:
    def call(request: Any, context: grpc.ServicerContext) -> Any:
        _check(context, method)
        return fn(request, context)

    return call


def _stream(fn: Callable[[Any, grpc.ServicerContext], Any], method: str) -> Callable[..., Any]:
    def call(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        _check(context, method)
        yield from fn(request, context)

    return call
