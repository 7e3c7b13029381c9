"""patchgate.callguard through a real DaemonServer on a unix socket (issue 25, item 2): stalled
callers hold no request slot beyond the bounds, health is answered while the main bound is full,
beyond a bound the answer is RESOURCE_EXHAUSTED at once, the idle limit ends a stalled call and
releases what it held, and undecodable bytes are INVALID_ARGUMENT. Waits on events only."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.callguard import CallLimits, Watchdog
from patchgate.server import DaemonServer, ServerSettings

SERVICE = "test.Echo"
ECHO = f"/{SERVICE}/Echo"
UPLOAD = f"/{SERVICE}/Upload"
Req = health_pb2.HealthCheckRequest


class _Echo:
    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.uploads_done = threading.Semaphore(0)

    def echo(self, request: Req, _context: grpc.ServicerContext) -> Req:
        self.entered.release()
        return Req(service=request.service.upper())

    def upload(self, requests: Iterator[Req], _context: grpc.ServicerContext) -> Req:
        try:
            return Req(service="".join(r.service for r in requests))
        finally:
            self.uploads_done.release()

    def register(self, server: grpc.Server) -> None:
        handlers = {
            "Echo": grpc.unary_unary_rpc_method_handler(
                self.echo, Req.FromString, Req.SerializeToString
            ),
            "Upload": grpc.stream_unary_rpc_method_handler(
                self.upload, Req.FromString, Req.SerializeToString
            ),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))


def _serve(tmp_path: Path, **limits: Any) -> tuple[DaemonServer, _Echo, str]:
    echo = _Echo()
    settings = ServerSettings(listen=f"unix:{tmp_path}/s.sock", limits=CallLimits(**limits))
    server = DaemonServer(settings, echo.register, [SERVICE])
    return server, echo, server.start()


def _never(stop: threading.Event, first: list[Req] | None = None) -> Iterator[Req]:
    """A request stream that sends ``first`` and then nothing until ``stop``; then ends."""
    yield from first or []
    stop.wait()


def _health(channel: grpc.Channel) -> int:
    reply = health_pb2_grpc.HealthStub(channel).Check(Req(service=""), timeout=30)
    return int(reply.status)


def test_stalled_callers_fill_the_bound_health_answers_and_the_next_is_refused(
    tmp_path: Path,
) -> None:
    server, _echo, address = _serve(tmp_path, max_calls=4, max_calls_per_peer=4)
    stop = threading.Event()
    channel = grpc.insecure_channel(address)
    try:
        stalled_echo = channel.stream_unary(ECHO, Req.SerializeToString, Req.FromString)
        futures = [stalled_echo.future(_never(stop)) for _ in range(4)]
        while server.guard.in_flight()[0] < 4:  # admitted as they start: wait for all four
            threading.Event().wait(0.01)
        assert _health(channel) == health_pb2.HealthCheckResponse.SERVING
        echo_call = channel.unary_unary(ECHO, Req.SerializeToString, Req.FromString)
        with pytest.raises(grpc.RpcError) as err:
            echo_call(Req(service="x"), timeout=30)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "limit" in (err.value.details() or "")
        stop.set()  # the stalled callers end their streams without a message
        for f in futures:
            with pytest.raises(grpc.RpcError):
                f.result(timeout=60)
        assert echo_call(Req(service="x"), timeout=30).service == "X"
        assert server.guard.in_flight() == (0, 0)
    finally:
        stop.set()
        channel.close()
        server.stop(0)


def test_the_idle_limit_ends_a_stalled_upload_and_releases_it(tmp_path: Path) -> None:
    server, echo, address = _serve(tmp_path, idle_seconds=0.2)
    stop = threading.Event()
    channel = grpc.insecure_channel(address)
    try:
        upload = channel.stream_unary(UPLOAD, Req.SerializeToString, Req.FromString)
        future = upload.future(_never(stop, [Req(service="a")]))
        with pytest.raises(grpc.RpcError) as err:
            future.result(timeout=60)  # ends by itself: the caller never stops hanging on
        assert err.value.code() == grpc.StatusCode.CANCELLED
        assert echo.uploads_done.acquire(timeout=60)  # the handler's read ended: it returned
        assert server.guard.in_flight() == (0, 0)
        stop.set()
    finally:
        stop.set()
        channel.close()
        server.stop(0)


def test_undecodable_bytes_are_invalid_argument(tmp_path: Path) -> None:
    server, _echo, address = _serve(tmp_path)
    channel = grpc.insecure_channel(address)
    try:
        raw = channel.unary_unary(ECHO)  # no serializer: the bytes go as they are
        with pytest.raises(grpc.RpcError) as err:
            raw(b"\xff\xff\xff", timeout=30)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid message" in (err.value.details() or "")
    finally:
        channel.close()
        server.stop(0)


def test_watchdog_fires_once_and_never_after_disarm() -> None:
    dog = Watchdog()
    fired = threading.Event()
    try:
        gone = dog.arm(3600.0, fired.set)
        assert dog.pending() == 1
        dog.disarm(gone)
        assert dog.pending() == 0
        dog.arm(0.0, fired.set)
        assert fired.wait(60)
        assert dog.pending() == 0  # fired: no longer pending
    finally:
        dog.stop()


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="per peer"):
        CallLimits(max_calls=2, max_calls_per_peer=3)
    with pytest.raises(ValueError, match="idle"):
        CallLimits(idle_seconds=0)
    assert CallLimits.from_env({"PATCHGATE_MAX_CALLS": "10"}).max_calls_per_peer == 10


_OTHER_CLIENT = """
import sys
import grpc
from grpc_health.v1 import health_pb2
Req = health_pb2.HealthCheckRequest
with grpc.insecure_channel(sys.argv[1]) as channel:
    echo = channel.unary_unary(sys.argv[2], Req.SerializeToString, Req.FromString)
    try:
        print(echo(Req(service="other"), timeout=30).service)
    except grpc.RpcError as exc:
        print(exc.code().name, exc.details())
"""


def test_one_local_clients_held_calls_never_refuse_another_client(tmp_path: Path) -> None:
    """Issue 41: every unix-socket caller was the one peer ``unix``, so one client holding its
    share of calls refused a normal call of another. Two real clients (two processes) over a real
    unix socket: the one holding its per-peer share is refused its next call, the other is
    served, each told apart by the kernel's credentials."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    server, _echo, address = _serve(tmp_path, max_calls=8, max_calls_per_peer=4)
    stop = threading.Event()
    channel = grpc.insecure_channel(address)
    try:
        stalled = channel.stream_unary(ECHO, Req.SerializeToString, Req.FromString)
        futures = [stalled.future(_never(stop)) for _ in range(4)]
        while server.guard.in_flight()[0] < 4:
            threading.Event().wait(0.01)
        mine = channel.unary_unary(ECHO, Req.SerializeToString, Req.FromString)
        with pytest.raises(grpc.RpcError) as err:
            mine(Req(service="x"), timeout=30)  # this client's own share is full
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "from this peer" in (err.value.details() or "")
        other = subprocess.run(
            [sys.executable, "-c", _OTHER_CLIENT, address, ECHO],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        assert other.stdout.strip() == "OTHER", other.stdout + other.stderr
        stop.set()
        for f in futures:
            with pytest.raises(grpc.RpcError):
                f.result(timeout=60)
        assert server.guard.in_flight() == (0, 0)
    finally:
        stop.set()
        channel.close()
        server.stop(0)


def test_callers_the_platform_cannot_tell_apart_share_the_total_alone() -> None:
    """No credentials (``unix`` alone): no per-peer bound that one caller could fill for all."""
    from patchgate.callguard import SHARED, _Admission  # noqa: PLC0415
    from patchgate.peercred import peer_of  # noqa: PLC0415

    gate = _Admission(total=3, per_peer=1, what="busy")
    assert [gate.enter(SHARED) for _ in range(3)] == [None, None, None]
    assert "3 calls in flight" in (gate.enter(SHARED) or "")
    named = _Admission(total=3, per_peer=1, what="busy")
    assert named.enter("unix:uid=1,pid=2") is None
    assert "from this peer" in (named.enter("unix:uid=1,pid=2") or "")
    assert named.enter("unix:uid=1,pid=3") is None
    # only the relay's own names carry credentials; a caller's chosen address does not
    assert peer_of("unix:/tmp/patchgate-peers-ab12/c.1000.77.3") == "uid=1000,pid=77"
    assert peer_of("unix:/tmp/mine/c.0.1.2") is None
    assert peer_of("unix:") is None


class _Ctx:
    """What ``peer_key`` asks of a call: its peer string and its auth context."""

    def __init__(self, peer: str, spiffe: str = "") -> None:
        self._peer, self._spiffe = peer, spiffe

    def peer(self) -> str:
        return self._peer

    def auth_context(self) -> dict[str, list[bytes]]:
        return {"peer_spiffe_id": [self._spiffe.encode()]} if self._spiffe else {}


def test_one_mtls_identity_on_two_hosts_or_two_local_processes_is_two_callers() -> None:
    """Issue 41: every mTLS client with one identity was one peer, so one of them holding its
    share refused the others. The identity is counted with its place."""
    from patchgate.callguard import SHARED, peer_key  # noqa: PLC0415

    role = "spiffe://patchgate/role/client"
    a = peer_key(_Ctx("ipv4:10.0.0.1:5001", role))  # type: ignore[arg-type]
    b = peer_key(_Ctx("ipv4:10.0.0.2:5001", role))  # type: ignore[arg-type]
    assert a != b
    # the honest shape: one host's connections (two ports) stay one caller
    assert a == peer_key(_Ctx("ipv4:10.0.0.1:6002", role))  # type: ignore[arg-type]
    relay = "unix:/tmp/patchgate-peers-x/c.1000.{}.1"
    p1 = peer_key(_Ctx(relay.format(11), role))  # type: ignore[arg-type]
    p2 = peer_key(_Ctx(relay.format(12), role))  # type: ignore[arg-type]
    assert p1 != p2
    assert p1 == f"spiffe:{role}@unix:uid=1000,pid=11"
    assert peer_key(_Ctx("unix:", role)) == f"spiffe:{role}"  # type: ignore[arg-type]
    assert peer_key(_Ctx("unix:")) == SHARED  # type: ignore[arg-type]
    assert peer_key(_Ctx("ipv6:[::1]:7000")) == "ipv6:[::1]"  # type: ignore[arg-type]
