"""The Execute adapter's request lifecycle (issue 12, shutdown and debris), with the fake runtime
and a fake call context: request dirs go on every path, shutdown cancels and refuses, a stuck run
is reported as stuck."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from executord.errors import FailedPrecondition, Unavailable
from executord.runs.fakeruntime import FakeRun, FakeRuntime
from executord.service.adapter import ExecutorService
from patchgate.keys import Keyring
from patchgate.v1 import common_pb2, executor_pb2
from tests.unit.test_executord_runs import FIXTURES, OPERATOR, Rig, _input, _rig


class FakeContext:
    """The two things the handler asks of a gRPC call: a done-callback and whether it lives."""

    def __init__(self) -> None:
        self.active = True
        self._callbacks: list[Callable[[], None]] = []

    def add_callback(self, cb: Callable[[], None]) -> bool:
        self._callbacks.append(cb)
        return True

    def is_active(self) -> bool:
        return self.active

    def end(self) -> None:
        """The client went away."""
        self.active = False
        for cb in self._callbacks:
            cb()


class StuckRuntime(FakeRuntime):
    """A runtime whose wait never returns until released: a call nobody can interrupt."""

    def __init__(self) -> None:
        super().__init__(script=lambda _s: FakeRun(hang=True))
        self.waiting = threading.Event()
        self.release = threading.Event()

    def wait(self, cid: str, timeout_s: float) -> int | None:
        self.waiting.set()
        self.release.wait()
        return 137


def _request(rig: Rig) -> executor_pb2.ExecuteRequest:
    inp = _input(rig)
    return executor_pb2.ExecuteRequest(
        request_id=inp.request_id,
        fixture_envelope=inp.envelope.to_proto(),
        workspace=[
            executor_pb2.TreeEntry(path=t.path, digest=t.digest, size=t.size) for t in inp.workspace
        ],
        fixture_root=inp.fixture_root,
        properties=[common_pb2.PropertySpec(id=p.id, command=p.command) for p in inp.properties],
        runs=inp.runs,
    )


def _service(rig: Rig) -> ExecutorService:
    return ExecutorService(rig.executor, rig.store, Keyring([OPERATOR.keyring_entry()]))


def _req_dirs(rig: Rig) -> list[Path]:
    return list(rig.executor.work_dir.glob("req-*"))


def _consume(
    service: ExecutorService, rig: Rig, ctx: FakeContext
) -> tuple[threading.Thread, list[Any]]:
    box: list[Any] = []

    def go() -> None:
        try:
            box.extend(service.Execute(_request(rig), ctx))  # type: ignore[arg-type]
        except BaseException as exc:
            box.append(exc)

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    return worker, box


def test_request_dir_is_gone_when_the_call_ends(tmp_path: Path) -> None:
    """Success: the result arrives and, by the end of the call, the request dir is removed."""
    rig = _rig(tmp_path)
    events = list(_service(rig).Execute(_request(rig), FakeContext()))  # type: ignore[arg-type]
    assert events[-1].HasField("result")
    assert _req_dirs(rig) == []


def test_refusal_after_materializing_leaves_no_request_dir(tmp_path: Path) -> None:
    """A stored fixture blob altered on disk is refused after materializing: nothing left."""
    rig = _rig(tmp_path)
    blob = rig.store.path(next(iter(rig.manifest.files.values())).sha256)
    blob.chmod(0o644)
    blob.write_bytes(b"tampered" + next(iter(FIXTURES.values())))
    with pytest.raises(FailedPrecondition, match="digest"):
        list(_service(rig).Execute(_request(rig), FakeContext()))  # type: ignore[arg-type]
    assert _req_dirs(rig) == []


def test_shutdown_cancels_running_requests_and_refuses_new_ones(tmp_path: Path) -> None:
    """SIGTERM's first step: the running request ends as transport, its containers and request
    dir gone; a new request is UNAVAILABLE before anything is prepared."""
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(hang=True)), clock_bound_ms=60000)
    service = _service(rig)
    worker, box = _consume(service, rig, FakeContext())
    deadline = time.monotonic() + 10
    while not rig.runtime.created and time.monotonic() < deadline:
        time.sleep(0.01)
    service.shutdown()
    assert service.wait_idle(time.monotonic() + 10)
    worker.join(10)
    report = box[-1].result.report
    assert list(report.outcomes) == []
    assert report.transport
    assert rig.runtime.live == []
    assert _req_dirs(rig) == []
    with pytest.raises(Unavailable, match="shutting down"):
        list(service.Execute(_request(rig), FakeContext()))  # type: ignore[arg-type]
    assert _req_dirs(rig) == []


def test_client_gone_cancels_the_run_and_the_handler_returns(tmp_path: Path) -> None:
    """A cancelled call: the handler stops waiting at once; the run is cancelled and cleaned up."""
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(hang=True)), clock_bound_ms=60000)
    service = _service(rig)
    ctx = FakeContext()
    worker, _ = _consume(service, rig, ctx)
    while not rig.runtime.created:
        time.sleep(0.01)
    ctx.end()
    worker.join(5)
    assert not worker.is_alive()
    assert service.wait_idle(time.monotonic() + 10)
    assert rig.runtime.live == []
    assert _req_dirs(rig) == []


def test_a_stuck_run_is_reported_stuck_and_still_cleans_up_once_released(tmp_path: Path) -> None:
    """A run blocked in a call that does not return: ``wait_idle`` says so by its deadline (the
    daemon then exits hard); released, it still removes its container and request dir."""
    runtime = StuckRuntime()
    rig = _rig(tmp_path, runtime, clock_bound_ms=60000)
    service = _service(rig)
    ctx = FakeContext()
    worker, _ = _consume(service, rig, ctx)
    assert runtime.waiting.wait(10)
    service.shutdown()
    ctx.end()  # the server cancels the call at the end of its grace
    worker.join(5)
    assert not worker.is_alive(), "the handler must not wait for a stuck run"
    t0 = time.monotonic()
    assert not service.wait_idle(t0 + 0.3)
    assert time.monotonic() - t0 < 2
    runtime.release.set()
    assert service.wait_idle(time.monotonic() + 10)
    assert runtime.live == []
    assert _req_dirs(rig) == []
