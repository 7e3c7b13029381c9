"""Both daemons hold under stalled callers (issue 25, item 2), real daemons on unix sockets.

Per round, N callers hang on at each daemon — signer calls that send their headers and never
their message, executor uploads that send one byte of a blob declared 2 GiB - 8 MiB and stall,
and Executes that never send their request — and while every one of them is still pending a
normal signature, an upload and an Execute complete, and health and GetInfo are answered. Then the
stalled callers let go. Three rounds: the daemons' threads, open fds and resident memory after the
third are no larger than after the second (within a small slack: a thread pool and an allocator
keep what they once needed). N = 20 and 100; bounded in count, ends by itself.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.executor_client import ExecutorClient
from patchgate.request import ExecuteRequest
from patchgate.signer_client import SignerClient
from patchgate.v1 import executor_pb2, executor_pb2_grpc, signer_pb2
from tests.integration.fixtures_executor import ExecutorProc, billing_case
from tests.integration.fixtures_signer import SignerDaemon, numbered_manifest

pytestmark = [pytest.mark.integration, pytest.mark.docker]

SIGN = "/patchgate.v1.Signer/SignFixtureDigest"
UPLOAD = "/patchgate.v1.Executor/UploadBlobs"
EXECUTE = "/patchgate.v1.Executor/Execute"
HUGE = (2 << 30) - (8 << 20)


def usage(pid: int) -> tuple[int, int, int]:
    """(threads, open fds, resident KiB) of process ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return (
        int(fields["Threads"]),
        len(os.listdir(f"/proc/{pid}/fd")),
        int(fields["VmRSS"].split()[0]),
    )


def _hold(stop: threading.Event, first: list[Any]) -> Iterator[Any]:
    yield from first
    stop.wait()


class Stalled:
    """``n`` callers per daemon, each on its own channel, hanging on until ``release``."""

    def __init__(self, signer: str, executor: str, n: int) -> None:
        self.stop = threading.Event()
        self.channels: list[grpc.Channel] = []
        self.futures: list[grpc.Future] = []
        for i in range(n):
            s, e = grpc.insecure_channel(signer), grpc.insecure_channel(executor)
            for ch in (s, e):
                grpc.channel_ready_future(ch).result(timeout=60)
            self.channels += [s, e]
            sign = s.stream_unary(SIGN, signer_pb2.SignFixtureDigestRequest.SerializeToString)
            self.futures.append(sign.future(_hold(self.stop, [])))
            up = e.stream_unary(UPLOAD, executor_pb2.BlobChunk.SerializeToString)
            chunk = executor_pb2.BlobChunk(digest=f"{i:064x}", size=HUGE, offset=0, data=b"x")
            self.futures.append(up.future(_hold(self.stop, [chunk])))
            if i % 4 == 0:
                ex = e.stream_stream(EXECUTE, executor_pb2.ExecuteRequest.SerializeToString)
                call = ex(_hold(self.stop, []))
                self.futures.append(call)

    def pending(self) -> bool:
        return not any(f.done() for f in self.futures)

    def release(self) -> None:
        self.stop.set()
        for f in self.futures:
            # each ends (refused, or cancelled once its stream ends without a message); code()
            # waits for that, of a unary future and of a stream call alike
            assert f.code() is not None  # type: ignore[attr-defined]
        for ch in self.channels:
            ch.close()


def _normal_calls(
    signer: SignerDaemon, executor: ExecutorProc, case: Any, i: int, *, execute: bool = True
) -> None:
    with SignerClient(signer.address, timeout=120) as sc:
        env, digest = sc.sign_fixture_digest(numbered_manifest(i))
    assert env.signatures
    assert digest == numbered_manifest(i).digest()
    with grpc.insecure_channel(executor.address) as ch:
        assert health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=60)
        info = executor_pb2_grpc.ExecutorStub(ch).GetInfo(executor_pb2.GetInfoRequest(), timeout=60)
        assert info.executor_keyid
        data = os.urandom(4096)
        digest = hashlib.sha256(data).hexdigest()
        chunk = executor_pb2.BlobChunk(digest=digest, size=len(data), offset=0, data=data)
        stored = executor_pb2_grpc.ExecutorStub(ch).UploadBlobs(iter([chunk]), timeout=120)
        assert stored.blobs_stored == 1
    if not execute:
        return
    with ExecutorClient(executor.address, timeout=300) as ec:
        result = ec.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
                runs=1,
            )
        )
    assert result.transport == (), result.transport
    assert [o.outcome for o in result.outcomes] == ["pass"]


@pytest.mark.parametrize("n", [20, 100])
def test_stalled_callers_freeze_neither_daemon_and_nothing_grows(
    signer_daemon: SignerDaemon,
    executor_daemon: ExecutorProc,
    operator_key: Any,
    tmp_path: Path,
    n: int,
) -> None:
    case = billing_case(tmp_path, operator_key.signer)
    after: list[tuple[tuple[int, int, int], tuple[int, int, int]]] = []
    for round_ in range(3):
        stalled = Stalled(signer_daemon.address, executor_daemon.address, n)
        try:
            _normal_calls(signer_daemon, executor_daemon, case, round_)
            assert stalled.pending(), "a stalled caller was cut while the normal calls ran"
        finally:
            stalled.release()
        # one more answered call on each daemon: whatever the stalled calls held is let go
        _normal_calls(signer_daemon, executor_daemon, case, 100 + round_, execute=False)
        after.append((usage(signer_daemon.proc.pid), usage(executor_daemon.proc.pid)))
    for second, third in zip(after[1], after[2], strict=True):
        threads2, fds2, rss2 = second
        threads3, fds3, rss3 = third
        assert threads3 <= threads2 + 4, after
        assert fds3 <= fds2 + 8, after
        assert rss3 <= rss2 * 1.10 + 16 * 1024, after


def test_malformed_protobuf_is_invalid_argument_and_logged_on_both_daemons(
    signer_daemon: SignerDaemon, executor_daemon: ExecutorProc
) -> None:
    """Bytes that are no message of the method: INVALID_ARGUMENT and a log line (was INTERNAL,
    unlogged, at the executor), on unary and streaming methods alike."""
    garbage = b"\xff\xff\xff\xff"

    def call(ch: grpc.Channel, method: str, kind: str) -> object:
        if kind == "unary_stream":
            return list(ch.unary_stream(method)(garbage, timeout=60))
        if kind == "stream_unary":
            return ch.stream_unary(method)(iter([garbage]), timeout=60)
        return ch.unary_unary(method)(garbage, timeout=60)

    for address, method, kind in (
        (executor_daemon.address, EXECUTE, "unary_stream"),
        (executor_daemon.address, UPLOAD, "stream_unary"),
        (executor_daemon.address, "/patchgate.v1.Executor/FindMissingBlobs", "unary_unary"),
        (signer_daemon.address, SIGN, "unary_unary"),
    ):
        with grpc.insecure_channel(address) as ch, pytest.raises(grpc.RpcError) as err:
            call(ch, method, kind)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, err.value)
    assert "undecodable" in executor_daemon.log()
    # the daemons still serve
    with SignerClient(signer_daemon.address, timeout=60) as sc:
        assert sc.sign_fixture_digest(numbered_manifest(7))[1]
