"""Client of ``patchgate-executord``: upload by content, Execute one request, verify the result.

Refusals raise RefusedError (nothing ran). Every other failure is *returned* as an
ExecutionResult whose ``transport`` holds one record per (property, run) not reported: never
raised, never a fail. The result is verified with the executor role against a pinned keyring,
else against the key GetInfo reports (trust on first use). The request: docs/reference/executor.md;
the rest: docs/executor.md, "Client".
"""

from __future__ import annotations

import dataclasses
import os
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf import json_format

from patchgate.addr import parse_address
from patchgate.batching import variant_members
from patchgate.digest import FileEntry, hash_files, validate_path
from patchgate.envelope import Envelope, parse_fixture_statement
from patchgate.environment import cached_tree, environment_digest, tree_files
from patchgate.errors import (
    EnvelopeError,
    EnvironmentBuildError,
    RefusedError,
    TransportError,
    UnsafePathError,
)
from patchgate.evidence import SandboxLog
from patchgate.keys import KeyEntry, Keyring, keyid_of, load_public_pem
from patchgate.report import verify_result
from patchgate.request import ExecuteRequest
from patchgate.results import RunOutcome, TransportRecord
from patchgate.symbols import MAX_TARGETS, wire_name
from patchgate.v1 import common_pb2, executor_pb2, executor_pb2_grpc

if TYPE_CHECKING:
    from patchgate.tls import ClientTLS

__all__ = ["BuildReply", "ExecutionResult", "ExecutorClient", "workspace_files"]

_CHUNK = 1 << 20
_LEARN_TRIES = 8  # TOFU on a dns fleet address: GetInfo calls to meet the replica that signed
_REFUSALS = {
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNAUTHENTICATED,
}
_KINDS = {
    grpc.StatusCode.UNAVAILABLE: "unavailable",
    grpc.StatusCode.DEADLINE_EXCEEDED: "deadline",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "resource_exhausted",
    grpc.StatusCode.CANCELLED: "unavailable",
}


@dataclass(frozen=True, kw_only=True)
class ExecutionResult:
    """What one Execute produced: outcomes and transport records, kept apart."""

    address: str
    lane: str
    executor_keyid: str
    observed_fixture_digest: str
    outcomes: tuple[RunOutcome, ...]
    transport: tuple[TransportRecord, ...]
    timings: dict[str, int]
    sandbox: dict[str, Any]
    envelope: Envelope | None
    uploaded_bytes: int
    logs: tuple[SandboxLog, ...] = ()  # what each sandbox printed: for people, never outcomes
    alone: tuple[tuple[str, int, str], ...] = ()  # (property, run, why) re-run alone in a batch
    judge: str = ""  # "on" or "off", as the signed report says it ran ("" when nothing ran)


def _named_back(result: ExecutionResult, named: dict[str, str]) -> ExecutionResult:
    """``result`` with each outcome's ``executed`` in symbol names again (see ``wire_name``)."""
    outcomes = tuple(
        dataclasses.replace(o, executed=tuple(sorted({named[e] for e in o.executed if e in named})))
        for o in result.outcomes
    )
    return dataclasses.replace(result, outcomes=outcomes)


def workspace_files(workspace: Path, fixture_root: str) -> dict[str, Path]:
    """Every regular file under ``workspace`` but ``.git/`` and the fixture root; no symlinks."""
    out: dict[str, Path] = {}
    root = Path(workspace)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if f"{rel_dir}{d}" not in (".git", fixture_root))
        for name in filenames:
            full = Path(dirpath) / name
            if stat.S_ISREG(os.lstat(full).st_mode):
                out[f"{rel_dir}{name}"] = full
    return out


def _rpc_error(exc: grpc.RpcError) -> Exception:
    code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
    details = (exc.details() if isinstance(exc, grpc.Call) else "") or str(code)
    if code in _REFUSALS:
        return RefusedError(code.name, details)
    return TransportError(_KINDS.get(code, "internal"), f"{code.name}: {details}")


@dataclass(frozen=True, kw_only=True)
class BuildReply:
    """What one Build produced: how the command ended and the output files written under
    ``dest`` (repository path → file)."""

    exit_code: int
    timed_out: bool
    oom_killed: bool
    files: dict[str, Path]
    ignored: int
    stdout_tail: str
    stderr_tail: str
    run_ms: int


class ExecutorClient:
    """One executor address (``dns:///`` targets are spread with round-robin)."""

    def __init__(
        self,
        address: str,
        *,
        tls: ClientTLS | None = None,
        timeout: float = 900.0,
        lane: str = "local",
        executor_keyring: Keyring | None = None,
    ) -> None:
        self.address = address
        self.lane = lane
        self.timeout = timeout
        self._keyring = executor_keyring
        self._pinned = executor_keyring is not None
        self._key_lock = threading.Lock()
        target = parse_address(address).grpc_target
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", 16 << 20),
            ("grpc.max_send_message_length", 16 << 20),
        ]
        if address.startswith("dns:"):
            options.append(("grpc.lb_policy_name", "round_robin"))
        if tls is None:
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            options += tls.channel_options()
            self._channel = grpc.secure_channel(target, tls.channel_credentials(), options=options)
        self._stub = executor_pb2_grpc.ExecutorStub(self._channel)  # type: ignore[no-untyped-call]

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def __enter__(self) -> ExecutorClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def info(self) -> executor_pb2.ExecutorInfo:
        """GetInfo; TransportError (or RefusedError) on failure."""
        try:
            reply: executor_pb2.ExecutorInfo = self._stub.GetInfo(
                executor_pb2.GetInfoRequest(), timeout=min(self.timeout, 30.0)
            )
        except grpc.RpcError as exc:
            raise _rpc_error(exc) from None
        return reply

    def _info_key(self) -> KeyEntry:
        info = self.info()
        key = load_public_pem(info.public_key_pem)
        if keyid_of(key) != info.executor_keyid:
            raise TransportError("internal", "GetInfo key id does not match its public key")
        return KeyEntry(keyid=info.executor_keyid, role="executor", public_key=key)

    def _result_keyring(self) -> Keyring:
        with self._key_lock:
            if self._keyring is None:
                self._keyring = Keyring([self._info_key()])
            return self._keyring

    def _tofu_learn(self, keyring: Keyring, wanted: set[str]) -> Keyring:
        """Trust on first use behind one address: meet the replica whose key signed the result.

        A ``dns:///`` address balances calls over several replicas, each with its own key, so the
        result may be signed by a replica other than the one the first GetInfo reached. Unpinned
        only: GetInfo is asked again (round robin moves on) until a key in ``wanted`` is known or
        ``_LEARN_TRIES`` calls were made. Every key learned is one a process at this address
        reported for itself: the same trust as the first GetInfo, never more.
        """
        for _ in range(_LEARN_TRIES):
            if any(keyring.get(k) is not None for k in wanted):
                break
            try:
                entry = self._info_key()
            except (TransportError, RefusedError):
                break
            with self._key_lock:
                grown = Keyring([*(self._keyring or ()), *keyring, entry])
                self._keyring = grown
            keyring = grown
        return keyring

    def upload(self, blobs: dict[str, Path]) -> int:
        """Upload the blobs (digest → file) the executor lacks; return the bytes sent."""
        try:
            missing = self._stub.FindMissingBlobs(
                executor_pb2.FindMissingBlobsRequest(digests=sorted(blobs)), timeout=self.timeout
            ).missing
            if not missing:
                return 0
            sizes = {d: blobs[d].stat().st_size for d in missing}
            self._stub.UploadBlobs(_chunks(blobs, list(missing)), timeout=self.timeout)
        except grpc.RpcError as exc:
            raise _rpc_error(exc) from None
        return sum(sizes.values())

    def execute(
        self, request: ExecuteRequest, on_progress: Callable[[str], None] | None = None
    ) -> ExecutionResult:
        """Upload what is missing, run ``request``, verify the signed result.

        Each outcome's ``executed`` names the ``targets`` its run executed; with ``variants``
        each outcome carries its 1-based ``variant``, and a variant a property has no outcome
        for is a transport record (``empty_response``) of that property. A signed report that
        ran another judge mode than asked is refused (transport ``internal``). What each field
        means: docs/reference/executor.md.
        """
        request_id = request.request_id or uuid.uuid4().hex
        properties, variants = request.properties, request.variants
        ids = [p.id for p in properties]
        per_variant = [variant_members(ids, v.scope, request.variant_scope) for v in variants]
        wanted = set(ids) if not variants else {pid for own in per_variant for pid in own}
        pairs = [
            (p.id, r) for p in properties for r in range(1, request.runs + 1) if p.id in wanted
        ]
        try:
            manifest, signed_digest, _ = parse_fixture_statement(request.envelope.payload)
        except EnvelopeError as exc:
            raise RefusedError("INVALID_ARGUMENT", f"fixture envelope: {exc}") from None
        named = {wire_name(t.name): t.name for t in request.targets[:MAX_TARGETS]}
        workspace = Path(request.workspace)
        files = workspace_files(workspace, request.fixture_root)
        entries = hash_files(files)
        blobs = {e.sha256: files[p] for p, e in entries.items()}
        for path, fe in manifest.files.items():
            blobs[fe.sha256] = workspace / path
        environment = _environment(manifest.environment_digest)
        for fe, full in environment.values():
            blobs[fe.sha256] = full
        tree = [_tree_entry(p, e, files[p]) for p, e in sorted(entries.items())]
        env_tree = [
            executor_pb2.TreeEntry(path=p, digest=fe.sha256, size=fe.size)
            for p, (fe, _) in sorted(environment.items())
        ]
        message = _message(request, request_id, tree, env_tree)
        t0 = time.monotonic()
        uploaded = 0
        try:
            keyring = self._result_keyring()
            uploaded = self.upload(blobs)
            upload_ms = int((time.monotonic() - t0) * 1000)
            result = self._stream(message, on_progress)
        except TransportError as exc:
            return self._failed(pairs, exc.kind, exc.detail, uploaded)
        environment_name = manifest.environment_digest or "executor"
        expected = (request_id, signed_digest, environment_name, request.judge)
        verified = self._verify(result, keyring, expected, pairs, uploaded, upload_ms)
        return _named_back(_variants_checked(verified, pairs, per_variant), named)

    def build(
        self,
        *,
        environment: dict[str, Path],
        inputs: dict[str, Path],
        argv: Sequence[str],
        outputs: Sequence[str],
        timeout_s: int,
        source_roots: Sequence[str],
        dest: Path,
    ) -> BuildReply:
        """Upload the environment tree and the inputs (repository path → file), run the build
        step, write each output file under ``dest`` (a new directory). RefusedError or
        TransportError when the executor refused or could not run it; a reply that breaks the
        protocol (a bad path, chunks out of order, no result) is TransportError."""
        env_entries = hash_files(environment)
        in_entries = hash_files(inputs)
        blobs = {e.sha256: environment[p] for p, e in env_entries.items()}
        blobs |= {e.sha256: inputs[p] for p, e in in_entries.items()}
        request = executor_pb2.BuildRequest(
            request_id=uuid.uuid4().hex,
            environment=[_tree_entry(p, e, environment[p]) for p, e in sorted(env_entries.items())],
            inputs=[_tree_entry(p, e, inputs[p]) for p, e in sorted(in_entries.items())],
            argv=list(argv),
            outputs=list(outputs),
            timeout_s=timeout_s,
            source_roots=list(source_roots),
        )
        dest.mkdir(mode=0o700)
        self.upload(blobs)
        files: dict[str, Path] = {}
        current: tuple[str, int, int] | None = None  # path, size, bytes so far
        try:
            for event in self._stub.Build(request, timeout=self.timeout + timeout_s):
                if event.HasField("result"):
                    if current is not None:
                        raise TransportError("internal", f"build output {current[0]} cut short")
                    r = event.result
                    return BuildReply(
                        exit_code=r.exit_code,
                        timed_out=r.timed_out,
                        oom_killed=r.oom_killed,
                        files=files,
                        ignored=r.ignored,
                        stdout_tail=r.stdout_tail,
                        stderr_tail=r.stderr_tail,
                        run_ms=r.run_ms,
                    )
                current = _build_chunk(event.file, current, files, dest)
        except grpc.RpcError as exc:
            raise _rpc_error(exc) from None
        raise TransportError("empty_response", "the build stream ended without a result")

    def _stream(
        self, request: executor_pb2.ExecuteRequest, on_progress: Callable[[str], None] | None
    ) -> executor_pb2.ExecuteResult:
        try:
            for event in self._stub.Execute(request, timeout=self.timeout):
                if event.HasField("result"):
                    reply: executor_pb2.ExecuteResult = event.result
                    return reply
                if on_progress is not None:
                    p = event.progress
                    on_progress(
                        f"{p.property_id or '-'}#{p.run_index} {p.phase} {p.message}".rstrip()
                    )
        except grpc.RpcError as exc:
            raise _rpc_error(exc) from None
        raise TransportError("empty_response", "the stream ended without a result")

    def _verify(  # noqa: PLR0917 - private helper, called once
        self,
        result: executor_pb2.ExecuteResult,
        keyring: Keyring,
        expected: tuple[str, str, str, str],
        pairs: list[tuple[str, int]],
        uploaded: int,
        upload_ms: int,
    ) -> ExecutionResult:
        report = result.report
        request_id, signed_digest, environment, judge = expected
        envelope = Envelope.from_proto(result.result_envelope)
        if not self._pinned:
            keyring = self._tofu_learn(keyring, {sig.keyid for sig in envelope.signatures})
        try:
            verified = verify_result(envelope, keyring)
        except EnvelopeError as exc:
            return self._failed(pairs, "internal", f"result envelope refused: {exc}", uploaded)
        if verified.report != report or verified.keyid != report.executor_keyid:
            return self._failed(pairs, "internal", "signed report differs", uploaded)
        if report.observed_fixture_digest != signed_digest:
            return self._failed(pairs, "internal", "observed another digest", uploaded)
        # An executor older than the field reports "" for a base with no environment.
        if report.environment != environment and (report.environment, environment) != (
            "",
            "executor",
        ):
            return self._failed(pairs, "internal", "ran in another environment", uploaded)
        if report.request_id != request_id:
            return self._failed(pairs, "internal", "report of another request", uploaded)
        if report.judge != judge:
            return self._failed(
                pairs, "internal", f"asked for judge {judge}, ran {report.judge or 'off'}", uploaded
            )
        extra = {"lane": self.lane, "address": self.address}
        try:
            outcomes = tuple(RunOutcome.from_proto(o) for o in report.outcomes if _wanted(o, pairs))
        except ValueError as exc:
            return self._failed(pairs, "internal", f"malformed report: {exc}", uploaded)
        transport = [TransportRecord.from_proto(t, **extra) for t in report.transport]
        reported = {(o.property_id, o.run_index) for o in outcomes}
        reported |= {(t.property_id, t.run_index) for t in transport}
        transport += [
            TransportRecord(kind="empty_response", detail="run not reported", property_id=pid,
                            run_index=r, **extra)
            for pid, r in pairs
            if (pid, r) not in reported
        ]  # fmt: skip
        timings = json_format.MessageToDict(
            report.timings,
            preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True,
        )
        return ExecutionResult(
            address=self.address,
            lane=self.lane,
            executor_keyid=verified.keyid,
            observed_fixture_digest=report.observed_fixture_digest,
            outcomes=outcomes,
            transport=tuple(transport),
            timings={**{k: int(v) for k, v in timings.items()}, "client_upload_ms": upload_ms},
            sandbox=json_format.MessageToDict(report.sandbox, preserving_proto_field_name=True),
            envelope=envelope,
            uploaded_bytes=uploaded,
            logs=tuple(SandboxLog.from_proto(log) for log in report.logs),
            alone=tuple((a.property_id, int(a.run_index), a.reason) for a in report.alone),
            judge=report.judge,
        )

    def _failed(
        self, pairs: list[tuple[str, int]], kind: str, detail: str, uploaded: int
    ) -> ExecutionResult:
        return ExecutionResult(
            address=self.address,
            lane=self.lane,
            executor_keyid="",
            observed_fixture_digest="",
            outcomes=(),
            transport=tuple(
                TransportRecord(
                    kind=kind,
                    detail=detail,
                    property_id=pid,
                    run_index=r,
                    lane=self.lane,
                    address=self.address,
                )
                for pid, r in pairs
            ),
            timings={},
            sandbox={},
            envelope=None,
            uploaded_bytes=uploaded,
        )


def _message(
    request: ExecuteRequest,
    request_id: str,
    tree: Sequence[executor_pb2.TreeEntry],
    environment: Sequence[executor_pb2.TreeEntry],
) -> executor_pb2.ExecuteRequest:
    """``request`` on the wire, with its workspace ``tree`` and ``environment`` by content: at
    most ``MAX_TARGETS`` targets, each named by its wire name."""
    return executor_pb2.ExecuteRequest(
        request_id=request_id,
        fixture_envelope=request.envelope.to_proto(),
        workspace=tree,
        fixture_root=request.fixture_root,
        properties=[
            common_pb2.PropertySpec(id=p.id, claim=p.claim, command=list(p.command))
            for p in request.properties
        ],
        runs=request.runs,
        targets=[
            executor_pb2.CodeTarget(
                path=t.path, first_line=t.first_line, last_line=t.last_line, name=wire_name(t.name)
            )
            for t in request.targets[:MAX_TARGETS]
        ],
        isolation=request.isolation,
        environment=environment,
        judge=request.judge,
        source_roots=list(request.source_roots),
        production=list(request.production),
        variants=[
            executor_pb2.Variant(path=v.path, source=bytes(v.source), scope=list(v.scope))
            for v in request.variants
        ],
        variant_bound_ms=request.variant_bound_ms,
        variant_scope=list(request.variant_scope),
    )


def _variants_checked(
    result: ExecutionResult, pairs: list[tuple[str, int]], per_variant: Sequence[Sequence[str]]
) -> ExecutionResult:
    """Without variants: ``result``. With variants (``per_variant[n - 1]``: the properties
    variant n runs): only the outcomes asked for, and a transport record for each (property,
    variant) asked for without an outcome."""
    if not per_variant or result.envelope is None:
        return result
    asked = {(pid, n) for n, own in enumerate(per_variant, 1) for pid in own}
    outcomes = tuple(o for o in result.outcomes if (o.property_id, o.variant) in asked)
    seen = {(o.property_id, o.variant) for o in outcomes}
    failed = {t.property_id for t in result.transport}
    extra = [
        TransportRecord(kind="empty_response", detail=f"variant {n} not reported",
                        property_id=pid, run_index=r, lane=result.lane, address=result.address)
        for pid, r in pairs
        if pid not in failed
        for n in range(1, len(per_variant) + 1)
        if (pid, n) in asked and (pid, n) not in seen
    ]  # fmt: skip
    return dataclasses.replace(result, outcomes=outcomes, transport=(*result.transport, *extra))


def _wanted(o: common_pb2.RunOutcome, pairs: list[tuple[str, int]]) -> bool:
    return (o.property_id, o.run_index) in pairs


def _environment(digest: str | None) -> dict[str, tuple[FileEntry, Path]]:
    """The files of the cached environment tree the signed manifest names (none: empty).

    RefusedError when it is not cached here or its bytes no longer hash to the signed digest.
    """
    if digest is None:
        return {}
    tree = cached_tree(digest)
    if tree is None:
        raise RefusedError(
            "FAILED_PRECONDITION",
            f"environment {digest[:16]} is not in the local cache; run patchgate env build",
        )
    try:
        files = tree_files(tree)
        entries = hash_files(files)
    except (OSError, EnvironmentBuildError) as exc:
        raise RefusedError("FAILED_PRECONDITION", f"environment {digest[:16]}: {exc}") from None
    if environment_digest(entries) != digest:
        raise RefusedError(
            "FAILED_PRECONDITION", f"cached environment {digest[:16]} changed on disk"
        )
    return {p: (e, files[p]) for p, e in entries.items()}


def _build_chunk(
    chunk: executor_pb2.BuildFile,
    current: tuple[str, int, int] | None,
    files: dict[str, Path],
    dest: Path,
) -> tuple[str, int, int] | None:
    """Append one chunk of a build output under ``dest``; the file in progress, or None."""
    if current is None:
        try:
            validate_path(chunk.path)
        except UnsafePathError as exc:
            raise TransportError("internal", f"build output: {exc}") from None
        if chunk.offset != 0 or chunk.path in files:
            raise TransportError("internal", f"build output {chunk.path}: chunks out of order")
        full = dest / chunk.path
        try:
            full.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            full.write_bytes(b"")
        except OSError as exc:  # a path that is also a directory of another output
            raise TransportError("internal", f"build output {chunk.path}: {exc}") from None
        files[chunk.path] = full
        current = (chunk.path, chunk.size, 0)
    path, size, done = current
    if chunk.path != path or chunk.offset != done or chunk.size != size:
        raise TransportError("internal", f"build output {path}: chunks out of order")
    if done + len(chunk.data) > size:
        raise TransportError("internal", f"build output {path}: more bytes than its size")
    with files[path].open("ab") as fh:
        fh.write(chunk.data)
    done += len(chunk.data)
    return None if done == size else (path, size, done)


def _tree_entry(path: str, entry: FileEntry, full: Path) -> executor_pb2.TreeEntry:
    return executor_pb2.TreeEntry(
        path=path, digest=entry.sha256, size=entry.size, executable=os.access(full, os.X_OK)
    )


def _chunks(blobs: dict[str, Path], digests: list[str]) -> Iterator[executor_pb2.BlobChunk]:
    for d in digests:
        path = blobs[d]
        size = path.stat().st_size
        with open(path, "rb") as fh:
            offset = 0
            while True:
                data = fh.read(_CHUNK)
                if not data and offset > 0:
                    break
                yield executor_pb2.BlobChunk(digest=d, size=size, offset=offset, data=data)
                offset += len(data)
                if offset >= size:
                    break
