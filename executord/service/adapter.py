"""gRPC adapter of the executor: proto ↔ domain, and one interceptor mapping errors to statuses.

The logic lives in ``executord.runs.executor`` and ``executord.store.blobstore`` and imports
nothing from grpc.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import structlog

from executord.errors import ExecutorError, Unavailable, disk_full
from executord.runs.build import BuildInput, run_build
from executord.runs.executor import Executor, Prepared, Progress
from executord.runs.request import CodeTarget, ExecuteInput, PropertyRun, TreeItem, Variant
from executord.store.blobstore import BlobStore, Chunk
from patchgate.envelope import Envelope
from patchgate.keys import Keyring
from patchgate.server import wrap_handler
from patchgate.v1 import executor_pb2, executor_pb2_grpc, signer_pb2

__all__ = ["VERSION", "ErrorInterceptor", "ExecutorService"]

log = structlog.get_logger("executord.service.adapter")
VERSION = "0.1.0"
_DONE = object()
_CHUNK = 1 << 20  # a build output file's chunk
_BUILD_TAIL = 8 << 10  # how much of a build's stdout/stderr goes back
_POLL_S = 0.25  # how often a streaming handler looks whether its call is still alive


class ErrorInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Maps an ExecutorError to its gRPC status (the one place that does); else INTERNAL."""

    def intercept_service(
        self, continuation: Callable[[Any], Any], handler_call_details: Any
    ) -> Any:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        return wrap_handler(
            handler, handler_call_details.method, unary=_wrap_unary, stream=_wrap_stream
        )


def _abort(context: grpc.ServicerContext, exc: Exception, method: str) -> None:
    exc = disk_full(exc) or exc
    if isinstance(exc, ExecutorError):
        log.info("refused", method=method, status=exc.status, reason=str(exc))
        context.abort(grpc.StatusCode[exc.status], str(exc))
    log.exception("internal error", method=method)
    context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}")


def _wrap_unary(fn: Callable[[Any, grpc.ServicerContext], Any], method: str) -> Callable[..., Any]:
    def call(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return fn(request, context)
        except ExecutorError as exc:
            _abort(context, exc, method)
        except Exception as exc:
            if isinstance(exc, grpc.RpcError) or type(exc).__name__ == "_AbortError":
                raise
            _abort(context, exc, method)
        return None

    return call


def _wrap_stream(fn: Callable[[Any, grpc.ServicerContext], Any], method: str) -> Callable[..., Any]:
    def call(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            yield from fn(request, context)
        except ExecutorError as exc:
            _abort(context, exc, method)
        except Exception as exc:
            if isinstance(exc, grpc.RpcError) or type(exc).__name__ == "_AbortError":
                raise
            _abort(context, exc, method)

    return call


class ExecutorService(executor_pb2_grpc.ExecutorServicer):
    """The Executor service of executor.proto."""

    def __init__(self, executor: Executor, store: BlobStore, operator_keyring: Keyring) -> None:
        self._executor = executor
        self._store = store
        self._keyring = operator_keyring
        self._shutdown = threading.Event()
        self._lock = threading.Lock()
        self._active: dict[str, tuple[threading.Event, threading.Thread]] = {}

    def shutdown(self) -> None:
        """SIGTERM: take no new request; cancel every running one (its containers killed)."""
        with self._lock:
            self._shutdown.set()
            active = list(self._active.values())
        for cancel, _ in active:
            cancel.set()

    def wait_idle(self, deadline: float) -> bool:
        """Wait until the monotonic ``deadline`` for every request's work to end; True if it did."""
        with self._lock:
            workers = [w for _, w in self._active.values()]
        for w in workers:
            w.join(max(0.0, deadline - time.monotonic()))
        return not any(w.is_alive() for w in workers)

    def FindMissingBlobs(
        self, request: executor_pb2.FindMissingBlobsRequest, context: grpc.ServicerContext
    ) -> executor_pb2.FindMissingBlobsResponse:
        for d in request.digests:
            self._store.path(d)  # InvalidArgument on a malformed digest
        return executor_pb2.FindMissingBlobsResponse(missing=self._store.missing(request.digests))

    def UploadBlobs(
        self, request_iterator: Iterator[executor_pb2.BlobChunk], context: grpc.ServicerContext
    ) -> executor_pb2.UploadBlobsResponse:
        chunks = (Chunk(c.digest, c.size, c.offset, bytes(c.data)) for c in request_iterator)
        stats = self._store.ingest(chunks)
        return executor_pb2.UploadBlobsResponse(
            blobs_stored=stats.blobs_stored, bytes_stored=stats.bytes_stored
        )

    def GetInfo(
        self, request: executor_pb2.GetInfoRequest, context: grpc.ServicerContext
    ) -> executor_pb2.ExecutorInfo:
        ring = signer_pb2.Keyring(
            keys=[
                signer_pb2.KeyringEntry(
                    keyid=e.keyid, role=e.role, public_key_pem=k["public_key_pem"]
                )
                for e in self._keyring
                for k in [e.to_json()]
            ]
        )
        ex = self._executor
        return executor_pb2.ExecutorInfo(
            executor_keyid=ex.keyid,
            public_key_pem=ex.public_key_pem,
            image=ex.policy.image,
            runtime=ex.policy.runtime,
            max_parallel=ex.max_parallel,
            version=VERSION,
            operator_keyring=ring,
        )

    def Execute(
        self, request: executor_pb2.ExecuteRequest, context: grpc.ServicerContext
    ) -> Iterator[executor_pb2.ExecuteEvent]:
        inp = _to_input(request)
        structlog.contextvars.bind_contextvars(request_id=inp.request_id)
        try:
            if self._shutdown.is_set():
                raise Unavailable("the executor is shutting down")
            prepared = self._executor.prepare(inp)  # refusals raise here: nothing started
            events: queue.Queue[Any] = queue.Queue()
            cancel = threading.Event()
            if not context.add_callback(cancel.set):
                cancel.set()  # the call already ended
            self._start_work(prepared, events, cancel)
            yield from _drain(events, context)
        finally:
            structlog.contextvars.unbind_contextvars("request_id")

    def Build(
        self, request: executor_pb2.BuildRequest, context: grpc.ServicerContext
    ) -> Iterator[executor_pb2.BuildEvent]:
        """One build step (``executord.runs.build``): its output files in chunks, the result."""
        inp = BuildInput(
            request_id=request.request_id or uuid.uuid4().hex,
            environment=tuple(
                TreeItem(path=e.path, digest=e.digest, size=e.size) for e in request.environment
            ),
            inputs=tuple(
                TreeItem(path=e.path, digest=e.digest, size=e.size, executable=e.executable)
                for e in request.inputs
            ),
            argv=tuple(request.argv),
            outputs=tuple(request.outputs),
            timeout_s=request.timeout_s,
            source_roots=tuple(request.source_roots),
        )
        cancel = threading.Event()
        key = uuid.uuid4().hex
        with self._lock:
            if self._shutdown.is_set():
                raise Unavailable("the executor is shutting down")
            self._active[key] = (cancel, threading.current_thread())
        if not context.add_callback(cancel.set):
            cancel.set()
        structlog.contextvars.bind_contextvars(request_id=inp.request_id)
        try:
            with run_build(self._executor, inp, cancel) as done:
                log.info(
                    "build ran",
                    exit_code=done.exit.exit_code,
                    timed_out=done.exit.timed_out,
                    files=len(done.files),
                )
                for path, full in done.files:
                    yield from _file_chunks(path, full)
                out, err = done.stdout_tail, done.stderr_tail
                yield executor_pb2.BuildEvent(
                    result=executor_pb2.BuildResult(
                        exit_code=-1 if done.exit.exit_code is None else done.exit.exit_code,
                        timed_out=done.exit.timed_out,
                        oom_killed=done.exit.oom_killed,
                        files=len(done.files),
                        ignored=done.ignored,
                        stdout_tail=out[-_BUILD_TAIL:],
                        stderr_tail=err[-_BUILD_TAIL:],
                        run_ms=done.exit.run_ms,
                    )
                )
        finally:
            structlog.contextvars.unbind_contextvars("request_id")
            with self._lock:
                self._active.pop(key, None)

    def _start_work(
        self, prepared: Prepared, events: queue.Queue[Any], cancel: threading.Event
    ) -> None:
        """Run ``prepared`` in a thread a shutdown can cancel; its request dir goes in any case."""
        key = uuid.uuid4().hex
        worker = threading.Thread(
            target=self._work,
            args=(key, prepared, events, cancel),
            name=f"execute-{prepared.inp.request_id[:12]}",
            daemon=True,  # a run wedged in a call that cannot be interrupted must not hold the exit
        )
        with self._lock:
            if self._shutdown.is_set():
                self._executor.cleanup(prepared)
                raise Unavailable("the executor is shutting down")
            self._active[key] = (cancel, worker)
        try:
            worker.start()
        except BaseException:
            with self._lock:
                self._active.pop(key, None)
            self._executor.cleanup(prepared)
            raise

    def _work(
        self, key: str, prepared: Prepared, events: queue.Queue[Any], cancel: threading.Event
    ) -> None:
        try:
            events.put(self._executor.run(prepared, events.put, cancel))
        except BaseException as exc:
            events.put(exc)
        finally:
            try:
                self._executor.cleanup(prepared)  # before the call ends: no debris after a reply
            finally:
                with self._lock:
                    self._active.pop(key, None)
                events.put(_DONE)


def _file_chunks(path: str, full: Path) -> Iterator[executor_pb2.BuildEvent]:
    size = full.stat().st_size
    with full.open("rb") as f:
        offset = 0
        while True:
            data = f.read(_CHUNK)
            yield executor_pb2.BuildEvent(
                file=executor_pb2.BuildFile(path=path, size=size, offset=offset, data=data)
            )
            offset += len(data)
            if offset >= size or not data:
                return


def _drain(
    events: queue.Queue[Any], context: grpc.ServicerContext
) -> Iterator[executor_pb2.ExecuteEvent]:
    """Stream the work's events; stop waiting when the call is over (client gone, or the server
    cancelled it at the end of its shutdown grace) so that no handler outlives the server."""
    while True:
        try:
            item = events.get(timeout=_POLL_S)
        except queue.Empty:
            if not context.is_active():
                return
            continue
        if item is _DONE:
            return
        if isinstance(item, Progress):
            yield executor_pb2.ExecuteEvent(
                progress=executor_pb2.Progress(
                    property_id=item.property_id,
                    run_index=item.run_index,
                    phase=item.phase,
                    message=item.message,
                )
            )
        elif isinstance(item, BaseException):
            raise item
        else:
            report, envelope = item
            yield executor_pb2.ExecuteEvent(
                result=executor_pb2.ExecuteResult(
                    report=report, result_envelope=envelope.to_proto()
                )
            )


def _to_input(request: executor_pb2.ExecuteRequest) -> ExecuteInput:
    return ExecuteInput(
        request_id=request.request_id or uuid.uuid4().hex,
        envelope=Envelope.from_proto(request.fixture_envelope),
        workspace=tuple(
            TreeItem(path=e.path, digest=e.digest, size=e.size, executable=e.executable)
            for e in request.workspace
        ),
        fixture_root=request.fixture_root or "fixtures",
        properties=tuple(
            PropertyRun(id=p.id, command=tuple(p.command)) for p in request.properties
        ),
        runs=request.runs or 2,
        isolation=request.isolation or "run",
        environment=tuple(
            TreeItem(path=e.path, digest=e.digest, size=e.size) for e in request.environment
        ),
        judge=request.judge or "on",
        source_roots=tuple(request.source_roots) or (".",),
        production=tuple(request.production),
        targets=tuple(
            CodeTarget(path=t.path, first_line=t.first_line, last_line=t.last_line, name=t.name)
            for t in request.targets
        ),
        variants=tuple(
            Variant(path=v.path, source=bytes(v.source), scope=tuple(v.scope))
            for v in request.variants
        ),
        variant_bound_ms=request.variant_bound_ms,
        variant_scope=tuple(request.variant_scope),
    )
