"""gRPC daemon plumbing shared by the signer and the executor.

Binds ``unix:/path`` or ``host:port`` (port 0 is allowed; the bound port is reported), registers the
health and reflection services, bounds message size, and every call through
:class:`patchgate.callguard.CallGuard` (admission per peer and in total, idle limit, total deadline,
clean refusal of undecodable requests), and on SIGTERM/SIGINT stops
accepting, drains in-flight RPCs for a grace period, and returns so the process exits 0.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from patchgate import peercred
from patchgate.addr import parse_address
from patchgate.callguard import CallGuard, CallLimits

__all__ = ["Behavior", "CallLimits", "DaemonServer", "ServerSettings", "wrap_handler"]

log = structlog.get_logger("patchgate.server")

Behavior = Callable[[Any, grpc.ServicerContext], Any]
"""A handler's behaviour: ``(request or request iterator, context) -> reply or reply iterator``."""


def wrap_handler(
    handler: grpc.RpcMethodHandler,  # type: ignore[type-arg]
    method: str,
    *,
    unary: Callable[[Behavior, str], Behavior],
    stream: Callable[[Behavior, str], Behavior],
) -> grpc.RpcMethodHandler:  # type: ignore[type-arg]
    """A copy of ``handler`` whose behaviour goes through ``unary`` (methods returning one reply:
    unary-unary, stream-unary) or ``stream`` (methods yielding replies: unary-stream,
    stream-stream). Interceptors use this instead of spelling out the four handler kinds.
    """
    kinds = (
        ("unary_unary", grpc.unary_unary_rpc_method_handler, unary),
        ("stream_unary", grpc.stream_unary_rpc_method_handler, unary),
        ("unary_stream", grpc.unary_stream_rpc_method_handler, stream),
        ("stream_stream", grpc.stream_stream_rpc_method_handler, stream),
    )
    for attr, make, wrap in kinds:
        behavior = getattr(handler, attr)
        if behavior is not None:
            return make(
                wrap(behavior, method), handler.request_deserializer, handler.response_serializer
            )
    return handler


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """How a daemon listens."""

    listen: str
    limits: CallLimits = field(default_factory=CallLimits)
    max_message_bytes: int = 16 << 20
    grace_seconds: float = 10.0
    credentials: grpc.ServerCredentials | None = None
    interceptors: Sequence[grpc.ServerInterceptor[Any, Any]] = field(default_factory=tuple)
    socket_mode: int = 0o660


class DaemonServer:
    """A grpc.Server with health, reflection, and a graceful stop on SIGTERM/SIGINT."""

    def __init__(
        self,
        settings: ServerSettings,
        register: Callable[[grpc.Server], None],
        service_names: Sequence[str],
    ) -> None:
        self._settings = settings
        self._address = parse_address(settings.listen)
        options = [
            ("grpc.max_receive_message_length", settings.max_message_bytes),
            ("grpc.max_send_message_length", settings.max_message_bytes),
            ("grpc.so_reuseport", 0),
        ]
        # The guard is outermost: it admits, times and decodes every call (patchgate.callguard);
        # the pool has a thread for every call it admits, and grpcio's own bound is a backstop.
        self.guard = CallGuard(settings.limits)
        self.server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=settings.limits.threads, thread_name_prefix="rpc"
            ),
            interceptors=[self.guard, *settings.interceptors],
            options=options,
            maximum_concurrent_rpcs=settings.limits.threads * 4,
        )
        register(self.server)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        names = [*service_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name]
        reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], self.server)
        self._service_names = list(service_names)
        self._stopped = threading.Event()
        self.bound: str = ""
        # a unix socket's callers told apart by their credentials (patchgate.peercred)
        self._relay: peercred.UnixRelay | None = None

    def start(self) -> str:
        """Bind and start; return the bound address (with the real port when 0 was asked)."""
        addr = self._address
        if addr.unix_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(addr.unix_path)
        target = addr.grpc_target
        if addr.unix_path is not None and peercred.supported():
            self._relay = peercred.UnixRelay(addr.unix_path, self._settings.socket_mode)
            target = f"unix:{self._relay.inner_path}"
        if self._settings.credentials is not None:
            port = self.server.add_secure_port(target, self._settings.credentials)
        else:
            port = self.server.add_insecure_port(target)
        if port == 0 and addr.unix_path is None:
            raise OSError(f"cannot bind {addr.text}")
        self.server.start()
        if self._relay is not None:
            self._relay.start()
        elif addr.unix_path is not None:
            os.chmod(addr.unix_path, self._settings.socket_mode)
        if addr.unix_path is not None:
            self.bound = f"unix:{addr.unix_path}"
        else:
            host = addr.text.rpartition(":")[0]
            self.bound = f"{host}:{port}"
        for name in ["", *self._service_names]:
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        return self.bound

    def stop(self, grace: float | None = None) -> None:
        """Stop accepting, mark NOT_SERVING, drain in-flight RPCs for ``grace`` seconds."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.health.enter_graceful_shutdown()
        if self._relay is not None:
            self._relay.stop_accepting()
        grace = self._settings.grace_seconds if grace is None else grace
        done = self.server.stop(grace)
        # gRPC cancels every call at the grace; a handler stuck in a call of its own may still
        # hold its thread, and waiting for it must not hold the process (the caller decides).
        if not done.wait(grace + 1.0):
            log.warning("calls still running after the grace", grace_s=grace)
        self.guard.watchdog.stop()
        if self._relay is not None:
            self._relay.stop()
        if self._address.unix_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._address.unix_path)

    def serve_until_signal(self, on_stop: Callable[[], None] | None = None) -> None:
        """Block until SIGTERM/SIGINT, then drain and return (the caller exits 0)."""
        wake = threading.Event()

        def _handler(signum: int, _frame: object) -> None:
            log.info("signal received; draining", signal=signal.Signals(signum).name)
            wake.set()

        signal.signal(signal.SIGTERM, _handler)
        signal.signal(signal.SIGINT, _handler)
        while not wake.wait(0.5):
            pass
        if on_stop is not None:
            on_stop()
        self.stop()
        log.info("stopped")
