"""The one server interceptor: binds per-RPC log context and maps domain errors to gRPC status.

Service methods raise ``signerd.errors.RequestError`` subclasses; this turns each into its
``grpc_code`` with the reason as details. Anything unexpected becomes INTERNAL with a fixed
message (the exception is logged by type only, so no value can leak into a reply).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import grpc
import structlog

from signerd.errors import RequestError

__all__ = ["ErrorMappingInterceptor"]

log = structlog.get_logger("signerd.rpc")

_Behavior = Callable[[Any, grpc.ServicerContext], Any]


def _wrap(method: str, behavior: _Behavior) -> _Behavior:
    def handler(request: Any, context: grpc.ServicerContext) -> Any:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(rpc=method, rpc_id=uuid.uuid4().hex[:16])
        try:
            return behavior(request, context)
        except RequestError as exc:
            log.info("refused", code=exc.grpc_code, reason=exc.reason)
            context.abort(getattr(grpc.StatusCode, exc.grpc_code), exc.reason)
        except Exception as exc:  # any other failure: a fixed message, never its value
            log.error("internal error", error_type=type(exc).__name__)
            context.abort(grpc.StatusCode.INTERNAL, "internal error")
        finally:
            structlog.contextvars.clear_contextvars()
        raise AssertionError("unreachable")  # pragma: no cover - abort always raises

    return handler


class ErrorMappingInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Wraps every unary-unary handler of the given service prefix."""

    def __init__(self, service_prefix: str) -> None:
        self._prefix = service_prefix
        self._wrapped: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """Wrap unary-unary methods of the service; pass everything else through."""
        handler = continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or not method.startswith(self._prefix) or handler.unary_unary is None:
            return handler
        wrapped = self._wrapped.get(method)
        if wrapped is None:  # handlers are fixed at registration: wrap each method once
            wrapped = grpc.unary_unary_rpc_method_handler(
                _wrap(method, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
            self._wrapped[method] = wrapped
        return wrapped
