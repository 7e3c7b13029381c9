"""Bounded, fair calls for both daemons: admission per peer and in total, an idle limit on every
request message, a total deadline on every call, and malformed requests answered cleanly.

grpcio's synchronous server gives each call a pool thread from the moment it starts, and (for a
unary request) reads the request message *inside* that thread: a caller that sends headers and
never its message holds a thread for as long as it likes, and a few of them freeze the daemon. The
guard is the outermost interceptor and changes every handler into its stream-request form, so
grpcio reads nothing before the guard runs; then, in order:

1. **Admission.** A call of a *light* method (health, reflection, ``GetInfo``, ``GetKeyring``) is
   counted against its own bound, a call of any other method against the main one; each bound holds
   in total and per peer (the peer address without its port, or on a unix socket the caller's
   uid and pid as the kernel gives them, :mod:`patchgate.peercred`; with mTLS the SPIFFE id
   before it; where the platform gives no credentials, no per-peer bound for plain unix callers:
   they share the total). Beyond either: ``RESOURCE_EXHAUSTED`` naming the bound, at once,
   without reading the request. The server's pool has a thread for every call both bounds admit
   and a few more for refusals, so a light call always finds one: health and ``GetInfo`` are
   answered while the main bound is full.
2. **Idle limit.** Every request message (the one of a unary call, each chunk of an upload) must
   arrive within ``idle_seconds`` of the last; otherwise the call is cancelled (the caller sees
   ``CANCELLED``), its handler's read ends, and whatever it held is released (an upload discards its
   temp file and its blob-store reservation).
3. **Total deadline.** No call lives longer than ``max_call_seconds`` (an Execute cancelled this
   way kills its containers, as when its caller goes away).
4. **Decoding.** The request bytes are decoded here with the method's own deserializer: bytes that
   are no message of the method are ``INVALID_ARGUMENT`` and a log line, never grpcio's
   unlogged ``INTERNAL``.

One watchdog thread keeps every idle and total deadline (a heap); nothing here sleeps per call.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
import structlog

from patchgate.peercred import peer_of

__all__ = ["LIGHT_METHODS", "SHARED", "CallGuard", "CallLimits", "Watchdog", "peer_key"]

log = structlog.get_logger("patchgate.callguard")

#: Methods that are cheap and must be answered while the daemon is busy (their own bound).
LIGHT_METHODS = frozenset({
    "/grpc.health.v1.Health/Check",
    "/grpc.health.v1.Health/Watch",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
    "/patchgate.v1.Executor/GetInfo",
    "/patchgate.v1.Signer/GetKeyring",
})  # fmt: skip


#: The peer of unix callers the platform cannot tell apart (no ``SO_PEERCRED``): the per-peer
#: bound does not apply to it (it would let one such caller refuse every other); they share the
#: total bound alone.
SHARED = "unix"


@dataclass(frozen=True, kw_only=True)
class CallLimits:
    """The bounds of one daemon (see the module docstring)."""

    max_calls: int = 256
    max_calls_per_peer: int = 192
    max_light_calls: int = 32
    max_light_calls_per_peer: int = 16
    idle_seconds: float = 30.0
    max_call_seconds: float = 6 * 3600.0
    light_methods: frozenset[str] = field(default=LIGHT_METHODS)

    def __post_init__(self) -> None:
        if not (
            1 <= self.max_calls_per_peer <= self.max_calls <= 100_000
            and 1 <= self.max_light_calls_per_peer <= self.max_light_calls <= 10_000
            and 0 < self.idle_seconds <= self.max_call_seconds
        ):
            raise ValueError("call limits: 1 <= per peer <= total, 0 < idle <= total deadline")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CallLimits:
        """``PATCHGATE_MAX_CALLS``, ``PATCHGATE_MAX_CALLS_PER_PEER``, ``PATCHGATE_IDLE_SECONDS``,
        ``PATCHGATE_MAX_CALL_SECONDS`` over the defaults (ValueError on a bad value)."""
        base = cls()
        calls = int(env.get("PATCHGATE_MAX_CALLS", base.max_calls))
        per_peer = int(env.get("PATCHGATE_MAX_CALLS_PER_PEER", min(base.max_calls_per_peer, calls)))
        return cls(
            max_calls=calls,
            max_calls_per_peer=per_peer,
            idle_seconds=float(env.get("PATCHGATE_IDLE_SECONDS", base.idle_seconds)),
            max_call_seconds=float(env.get("PATCHGATE_MAX_CALL_SECONDS", base.max_call_seconds)),
        )

    @property
    def threads(self) -> int:
        """The server pool: a thread per admitted call, and some for refusals."""
        return self.max_calls + self.max_light_calls + 8


class Watchdog:
    """One thread that calls ``fire()`` of each armed deadline once it passes, unless disarmed."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._live: set[int] = set()
        self._ids = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="call-watchdog", daemon=True)
        self._thread.start()

    def arm(self, delay: float, fire: Callable[[], None]) -> int:
        """Call ``fire`` in ``delay`` seconds; the handle disarms it."""
        with self._cond:
            handle = next(self._ids)
            heapq.heappush(self._heap, (time.monotonic() + delay, handle, fire))
            self._live.add(handle)
            self._cond.notify()
        return handle

    def disarm(self, handle: int) -> None:
        """``fire`` of ``handle`` will not be called (if it has not been already)."""
        with self._cond:
            self._live.discard(handle)

    def stop(self) -> None:
        """End the thread (pending deadlines never fire)."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join(5.0)

    def pending(self) -> int:
        """Armed deadlines not yet fired nor disarmed (for tests)."""
        with self._cond:
            return len(self._live)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    while self._heap and self._heap[0][1] not in self._live:
                        heapq.heappop(self._heap)  # disarmed: drop it
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                if self._stopped:
                    return
                _, handle, fire = heapq.heappop(self._heap)
                self._live.discard(handle)
            try:
                fire()
            except Exception:  # a failing fire must not end the watchdog
                log.exception("watchdog callback failed")


def peer_key(context: grpc.ServicerContext) -> str:
    """Who a call counts against: the caller's place -- on a unix socket its uid and pid, else
    its address without the port -- and, with mTLS, its SPIFFE id before it (one identity used by
    two hosts or two local processes is two callers). Unix callers the platform does not tell
    apart are :data:`SHARED` (with mTLS: the SPIFFE id alone)."""
    from patchgate.tls import peer_spiffe_id  # noqa: PLC0415 - tls imports grpc credentials

    spiffe = None
    try:
        spiffe = peer_spiffe_id(context)
    except Exception:  # no auth context on an insecure channel
        spiffe = None
    peer = context.peer() or ""
    local = peer_of(peer)  # a unix socket's caller by the kernel's credentials
    if local:
        where = f"unix:{local}"
    elif peer.startswith("unix"):
        where = SHARED
    else:
        host, sep, port = peer.rpartition(":")
        where = host if sep and port.isdigit() else peer
    if spiffe:  # one identity on two hosts (or two local processes) is two callers
        return f"spiffe:{spiffe}" + (f"@{where}" if where != SHARED else "")
    return where


class _Admission:
    def __init__(self, total: int, per_peer: int, what: str) -> None:
        self.total, self.per_peer, self.what = total, per_peer, what
        self.lock = threading.Lock()
        self.count = 0
        self.peers: Counter[str] = Counter()

    def enter(self, peer: str) -> str | None:
        """None when admitted (then ``leave`` once), else the refusal."""
        with self.lock:
            if self.count >= self.total:
                return f"{self.what}: {self.count} calls in flight, the limit is {self.total}"
            if peer != SHARED and self.peers[peer] >= self.per_peer:
                return (
                    f"{self.what}: {self.peers[peer]} calls in flight from this peer, "
                    f"the limit per peer is {self.per_peer}"
                )
            self.count += 1
            self.peers[peer] += 1
            return None

    def leave(self, peer: str) -> None:
        with self.lock:
            self.count -= 1
            self.peers[peer] -= 1
            if self.peers[peer] <= 0:
                del self.peers[peer]


class _Call:
    """One admitted call: its deadlines, and why the guard ended it (if it did)."""

    def __init__(self, guard: CallGuard, context: grpc.ServicerContext, method: str) -> None:
        self.guard, self.context, self.method = guard, context, method
        self.ended_by = ""
        self._total = guard.watchdog.arm(guard.limits.max_call_seconds, self._end_total)

    def _end(self, why: str) -> None:
        if not self.ended_by:
            self.ended_by = why
            log.warning("call ended by the guard", rpc=self.method, reason=why)
        self.context.cancel()  # type: ignore[no-untyped-call]

    def _end_total(self) -> None:
        self._end(f"total deadline of {self.guard.limits.max_call_seconds:g}s")

    def _end_idle(self) -> None:
        self._end(f"no request message for {self.guard.limits.idle_seconds:g}s")

    def close(self) -> None:
        self.guard.watchdog.disarm(self._total)

    def next_raw(self, requests: Iterator[Any]) -> Any:
        """The next request message's bytes within the idle limit (StopIteration: none more)."""
        handle = self.guard.watchdog.arm(self.guard.limits.idle_seconds, self._end_idle)
        try:
            return next(requests)
        except grpc.RpcError:
            raise StopIteration from None  # cancelled (by the guard or the caller)
        finally:
            self.guard.watchdog.disarm(handle)

    def one(self, requests: Iterator[Any], decode: Callable[[Any], Any]) -> Any:
        """The single request message of a unary call, decoded (or the call aborted)."""
        try:
            raw = self.next_raw(requests)
        except StopIteration:
            why = self.ended_by or "the call ended before its request message"
            self.context.abort(grpc.StatusCode.CANCELLED, why)
        return self._decoded(raw, decode)

    def many(self, requests: Iterator[Any], decode: Callable[[Any], Any]) -> Iterator[Any]:
        """The request messages of a client stream, each within the idle limit, decoded."""
        while True:
            try:
                raw = self.next_raw(requests)
            except StopIteration:
                return
            yield self._decoded(raw, decode)

    def _decoded(self, raw: Any, decode: Callable[[Any], Any]) -> Any:
        try:
            return decode(raw)
        except Exception:
            log.info("refused", rpc=self.method, code="INVALID_ARGUMENT", reason="undecodable")
            raise _Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the request is not a valid message of {self.method} ({len(raw)} bytes)",
            ) from None


class _Refused(grpc.RpcError):
    """Raised where the guard reads for a handler (a stream read inside the handler's own code):
    an ``RpcError``, so the daemons' error interceptors pass it through; the guard's wrapper turns
    it into the status."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.status, self.details_text = code, details


@contextmanager
def _statuses(context: grpc.ServicerContext) -> Iterator[None]:
    try:
        yield
    except _Refused as exc:
        context.abort(exc.status, exc.details_text)


class CallGuard(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """The outermost interceptor of a daemon (see the module docstring)."""

    def __init__(self, limits: CallLimits, watchdog: Watchdog | None = None) -> None:
        self.limits = limits
        self.watchdog = watchdog or Watchdog()
        self._main = _Admission(limits.max_calls, limits.max_calls_per_peer, "busy")
        self._light = _Admission(limits.max_light_calls, limits.max_light_calls_per_peer, "busy")
        self._cache: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
        self._cache_lock = threading.Lock()

    def in_flight(self) -> tuple[int, int]:
        """(main, light) calls admitted now."""
        return self._main.count, self._light.count

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """The handler of the method, in stream-request form, under the guard."""
        method: str = handler_call_details.method
        with self._cache_lock:
            cached = self._cache.get(method)
        if cached is not None:
            return cached
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        guarded = self._guard(handler, method)
        with self._cache_lock:
            self._cache[method] = guarded
        return guarded

    def _guard(
        self, handler: grpc.RpcMethodHandler[Any, Any], method: str
    ) -> grpc.RpcMethodHandler[Any, Any]:
        decode: Callable[[Any], Any] = handler.request_deserializer or (lambda raw: raw)
        admission = self._light if method in self.limits.light_methods else self._main
        serialize = handler.response_serializer

        @contextmanager
        def admitted(context: grpc.ServicerContext) -> Iterator[_Call]:
            peer = peer_key(context)
            refusal = admission.enter(peer)
            if refusal is not None:
                log.info("refused", rpc=method, code="RESOURCE_EXHAUSTED", peer=peer)
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal + "; retry later")
            call = _Call(self, context, method)
            try:
                yield call
            finally:
                call.close()
                admission.leave(peer)

        if handler.unary_unary is not None:
            inner_uu = handler.unary_unary

            def uu(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
                with admitted(context) as call, _statuses(context):
                    return inner_uu(call.one(requests, decode), context)

            return grpc.stream_unary_rpc_method_handler(uu, None, serialize)
        if handler.unary_stream is not None:
            inner_us = handler.unary_stream

            def us(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
                with admitted(context) as call, _statuses(context):
                    yield from inner_us(call.one(requests, decode), context)

            return grpc.stream_stream_rpc_method_handler(us, None, serialize)
        if handler.stream_unary is not None:
            inner_su = handler.stream_unary

            def su(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
                with admitted(context) as call, _statuses(context):
                    return inner_su(call.many(requests, decode), context)

            return grpc.stream_unary_rpc_method_handler(su, None, serialize)
        inner_ss = handler.stream_stream
        if inner_ss is None:  # pragma: no cover - a handler has one of the four kinds
            return handler

        def ss(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            with admitted(context) as call, _statuses(context):
                yield from inner_ss(call.many(requests, decode), context)

        return grpc.stream_stream_rpc_method_handler(ss, None, serialize)
