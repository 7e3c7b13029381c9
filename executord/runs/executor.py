"""Execute: verify → materialize → run the suite twice in fresh containers → signed report.

Everything that can refuse (envelope, role, digest recomputed from the bytes to be mounted, allowed
commands, workspace paths, missing blobs) happens in ``prepare``, before any container exists, and
raises FailedPrecondition or InvalidArgument. ``run`` never raises for a run's infrastructure
problem: it becomes a transport record of that run. Outcomes come only from the executor's own
reporter, streamed live over the run's report channel, checked against the container's exit
status (``executord.runs.records``); nothing the sandbox could write is read back by the host.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from executord.errors import FailedPrecondition, SandboxError
from executord.inside import FILES, REPORTER_DIR
from executord.runs.channel import (
    ChannelFactory,
    ReportChannel,
    write_targets,
)
from executord.runs.checks import check_request
from executord.runs.environment import (
    ENV,
    EXECUTOR_ENVIRONMENT,
    Bare,
    apply_overlay,
    materialize_environment,
    python_path,
    sandbox_mounts,
)
from executord.runs.records import (
    BatchVerdict,
    RecordLog,
    batch_outcomes,
    case_outcomes,
    node_arguments,
    outcome_kind,
    property_outcome,
    tree_of,
)
from executord.runs.request import ExecuteInput, PropertyRun, Variant
from executord.runs.sandboxspec import (
    BATCH_NAME,
    INFO,
    PLUGIN_PATH,
    VARIANTS_NAME,
    WORKSPACE,
    JudgeRun,
    RunPaths,
    SandboxLayout,
    run_dir_mode,
    with_reporter,
)
from executord.sandbox.container import (
    ContainerRuntime,
    ContainerSpec,
    Mount,
    SandboxPolicy,
    run_container,
)
from executord.sandbox.output import TAIL_BYTES, OutputCapture, printable
from executord.store.blobstore import BlobStore
from patchgate.batching import Group, group_properties, run_order, variant_members
from patchgate.digest import FileEntry, Manifest, fixture_digest, hash_files
from patchgate.envelope import Envelope, FixtureStatement, verify_fixture_envelope
from patchgate.errors import EnvelopeError
from patchgate.keys import Keyring, Signer
from patchgate.ledgers import now_utc
from patchgate.report import run_binding, sign_result
from patchgate.results import RunOutcome, TransportRecord
from patchgate.v1 import executor_pb2

__all__ = [
    "PLUGIN_PATH",
    "Executor",
    "Prepared",
    "Progress",
    "variant_outcomes",
    "variants_deadline_s",
    "with_reporter",
]

log = structlog.get_logger("executord.runs.executor")
LOG_BUDGET = 2 << 20  # bytes of stdout+stderr tails per report, shared by its runs
_DRAIN_S = 2.0  # after the container ended: how long the report stream may take to close
BATCH_MARGIN_S = 10.0  # a batch's deadline: the sum of its bounds plus max(one bound, this)
SUPERVISOR_MARGIN_MS = 3000  # judge on: the supervisor's deadline, before the container's


@dataclass
class _RunState:
    """What the runs of one request gathered so far (under ``lock``)."""

    tail: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: (property id, run index, variant index: 0 without variants) -> its result
    results: dict[tuple[str, int, int], RunOutcome | TransportRecord] = field(default_factory=dict)
    alone: dict[tuple[str, int], str] = field(default_factory=dict)
    logs: list[tuple[tuple[int, int, int], executor_pb2.RunLog]] = field(default_factory=list)
    phase_ms: dict[str, int] = field(
        default_factory=lambda: {"container_start_ms": 0, "run_ms": 0, "collect_ms": 0}
    )


@dataclass(frozen=True)
class Progress:
    """One progress event."""

    property_id: str
    run_index: int
    phase: str
    message: str = ""


@dataclass
class Prepared:
    """A verified, materialized request, ready to run."""

    inp: ExecuteInput
    statement: FixtureStatement
    observed_digest: str
    req_dir: Path
    timings: dict[str, int] = field(default_factory=dict)
    #: The source roots the signed environment names (None: no environment, the executor's own).
    source_roots: tuple[str, ...] | None = None

    @property
    def workspace_dir(self) -> Path:
        return self.req_dir / "workspace"

    @property
    def fixture_dir(self) -> Path:
        return self.req_dir / "fixtures"

    @property
    def inside_dir(self) -> Path:
        return self.req_dir / "inside"

    @property
    def environment_dir(self) -> Path:
        return self.req_dir / "env" / "tree"


class Executor:
    """The executor's logic; no grpc here (the service adapter is ``executord.service.adapter``)."""

    def __init__(
        self,
        *,
        store: BlobStore,
        runtime: ContainerRuntime,
        signer: Signer,
        operator_keyring: Keyring,
        policy: SandboxPolicy,
        host_mounts: tuple[Mount, ...],
        path_dirs: tuple[str, ...],
        work_dir: Path,
        base_path: tuple[str, ...] = ("/usr/local/bin", "/usr/bin", "/bin"),
        max_parallel: int,
        labels: dict[str, str],
        channels: ChannelFactory = ReportChannel.open,
        bare: Bare | None = None,
    ) -> None:
        if signer.role != "executor":
            raise ValueError("the executor signs with an executor key only")
        self.store = store
        self.runtime = runtime
        self._signer = signer
        self.keyring = operator_keyring
        self.policy = policy
        self.host_mounts = host_mounts
        self.path_dirs = path_dirs
        self.base_path = base_path
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.max_parallel = max(1, max_parallel)
        self._slots = threading.BoundedSemaphore(self.max_parallel)
        self.labels = labels
        self.channels = channels
        self.bare = bare or Bare()

    @property
    def layout(self) -> SandboxLayout:
        """The fixed part of every sandbox, from the executor's settings."""
        return SandboxLayout(
            policy=self.policy,
            host_mounts=self.host_mounts,
            path_dirs=self.path_dirs,
            base_path=self.base_path,
        )

    @property
    def keyid(self) -> str:
        """The executor key id that signs results."""
        return self._signer.keyid

    @property
    def public_key_pem(self) -> str:
        """The executor's public key."""
        return self._signer.public_key_pem()

    @contextlib.contextmanager
    def slot(self, cancel: threading.Event) -> Iterator[None]:
        """One of the ``max_parallel`` sandbox slots (a build's); SandboxError if cancelled."""
        while not self._slots.acquire(timeout=0.5):
            if cancel.is_set():
                raise SandboxError("internal", "cancelled")
        try:
            yield
        finally:
            self._slots.release()

    # -- refusals, before any container ---------------------------------------------------------

    def prepare(self, inp: ExecuteInput) -> Prepared:
        """Verify and materialize; FailedPrecondition / InvalidArgument when anything is off."""
        t0 = time.monotonic()
        try:
            statement = verify_fixture_envelope(inp.envelope, self.keyring)
        except EnvelopeError as exc:
            raise FailedPrecondition(f"fixture envelope refused: {exc}") from exc
        manifest = statement.manifest
        check_request(inp, manifest)
        needed = [e.digest for e in inp.workspace] + [f.sha256 for f in manifest.files.values()]
        needed += [e.digest for e in inp.environment]
        missing = self.store.missing(needed)
        if missing:
            raise FailedPrecondition(
                f"{len(missing)} blob(s) not in the store, e.g. {missing[0][:16]}"
            )
        req_dir = Path(tempfile.mkdtemp(prefix="req-", dir=self.work_dir))
        prepared = Prepared(inp=inp, statement=statement, observed_digest="", req_dir=req_dir)
        try:
            with self.store.referenced(needed):
                self._materialize(prepared)
            observed = self.observed_digest(prepared)
            if observed != statement.digest:
                raise FailedPrecondition(
                    f"fixture digest of the mounted bytes {observed[:16]} "
                    f"!= signed {statement.digest[:16]}"
                )
        except BaseException:
            self.cleanup(prepared)
            raise
        prepared.observed_digest = observed
        prepared.timings["materialize_ms"] = int((time.monotonic() - t0) * 1000)
        prepared.timings["upload_ms"] = self.store.upload_ms(needed)
        return prepared

    def _materialize(self, prepared: Prepared) -> None:
        inp, manifest = prepared.inp, prepared.statement.manifest
        ws, fx = prepared.workspace_dir, prepared.fixture_dir
        ws.mkdir(mode=0o755)
        fx.mkdir(mode=0o755)
        for item in inp.workspace:
            _place(
                self.store.open_blob(item.digest),
                ws / item.path,
                0o755 if item.executable else 0o644,
            )
        prefix = inp.fixture_root + "/"
        for path, entry in manifest.files.items():
            _place(self.store.open_blob(entry.sha256), fx / path[len(prefix) :], 0o444)
        if manifest.environment_digest is not None:
            prepared.environment_dir.parent.mkdir(mode=0o755)
            prepared.source_roots = materialize_environment(
                inp.environment,
                prepared.environment_dir,
                lambda item, dest: _place(self.store.open_blob(item.digest), dest, 0o444),
                manifest.environment_digest,
            )
            apply_overlay(
                prepared.environment_dir,
                ws,
                (inp.fixture_root, fx),
                lambda src, dest: _place(src, dest, 0o444),
            )
        mountpoint = ws / inp.fixture_root
        mountpoint.mkdir(parents=True, exist_ok=True, mode=0o755)
        # A copy beside the request, so that its path means the same to the engine wherever the
        # executor itself runs (in compose, only the state directory is shared with the host).
        prepared.inside_dir.mkdir(mode=0o755)
        # every module of executord/inside/ (the reporter's FILES, the supervisor, the subject,
        # the judge plugin, the wire), never its __init__: nothing there imports the package
        names = {*FILES, *(p.name for p in REPORTER_DIR.glob("*.py") if p.name != "__init__.py")}
        for name in sorted(names):
            _place(REPORTER_DIR / name, prepared.inside_dir / name, 0o444)

    def observed_digest(self, prepared: Prepared) -> str:
        """The digest v1 of the fixture bytes as they sit in the tree that gets mounted."""
        m = prepared.statement.manifest
        prefix = prepared.inp.fixture_root + "/"
        try:
            files = hash_files({p: prepared.fixture_dir / p[len(prefix) :] for p in m.files})
        except OSError:
            return "unreadable"
        return fixture_digest(_with_files(m, files))

    def cleanup(self, prepared: Prepared) -> None:
        """Remove the materialized trees and results."""
        shutil.rmtree(prepared.req_dir, ignore_errors=True)

    # -- runs -----------------------------------------------------------------------------------

    def run(
        self, prepared: Prepared, emit: Callable[[Progress], None], cancel: threading.Event
    ) -> tuple[executor_pb2.ExecutionReport, Envelope]:
        """Run the suite ``runs`` times, each run in fresh sandboxes; sign the report.

        Isolation ``property``: every run of every property is its own sandbox. Isolation ``run``
        (default): the properties sharing a command prefix form a group, and each run of a group
        is one sandbox (a group of one runs exactly as with ``property``); a property its batch
        did not give an outcome is re-run alone (``alone`` in the report says which and why).
        """
        started = now_utc()
        inp = prepared.inp
        emit(Progress("", 0, "verify", f"envelope by {prepared.statement.keyid[:16]}; digest ok"))
        emit(Progress("", 0, "materialize", f"{len(inp.workspace)} workspace files"))
        state = _RunState(tail=min(TAIL_BYTES, LOG_BUDGET // (2 * len(inp.properties) * inp.runs)))
        index = {p.id: i for i, p in enumerate(inp.properties)}
        if inp.isolation == "property":
            groups = [Group((), ((p.id, ()),)) for p in inp.properties]
        else:
            groups = group_properties(
                [(p.id, p.command) for p in inp.properties],
                prepared.statement.manifest.allowed_commands,
            )
        jobs = [(g, r) for g in groups for r in range(1, inp.runs + 1)]
        batch_tail = min(TAIL_BYTES, LOG_BUDGET // (2 * len(jobs)))

        def one(job: tuple[Group, int]) -> None:
            group, r = job
            if inp.variants:
                if variant_plan(inp, group):
                    self._guarded_variants(prepared, state, group, emit, cancel, batch_tail)
                return
            if len(group.members) == 1:
                i = index[group.ids[0]]
                self._alone(prepared, state, i, r, emit, cancel, "")
                return
            verdicts = self._guarded_batch(prepared, state, group, r, emit, cancel, batch_tail)
            for pid, why in verdicts.items():
                self._alone(prepared, state, index[pid], r, emit, cancel, why)

        with ThreadPoolExecutor(max_workers=min(len(jobs), self.max_parallel) or 1) as pool:
            list(pool.map(one, jobs))
        results = sorted(
            state.results.items(), key=lambda kv: (index[kv[0][0]], kv[0][1], kv[0][2])
        )
        outcomes = [v for _, v in results if isinstance(v, RunOutcome)]
        transport = [v for _, v in results if isinstance(v, TransportRecord)]
        report = executor_pb2.ExecutionReport(
            request_id=inp.request_id,
            executor_keyid=self._signer.keyid,
            observed_fixture_digest=prepared.observed_digest,
            pin_id=prepared.statement.manifest.pin_id,
            outcomes=[o.to_proto() for o in outcomes],
            transport=[t.to_proto() for t in transport],
            timings=executor_pb2.PhaseTimings(
                upload_ms=prepared.timings.get("upload_ms", 0),
                materialize_ms=prepared.timings.get("materialize_ms", 0),
                **state.phase_ms,
            ),
            sandbox=self.policy.to_proto(
                prepared.statement.manifest.clock_bound_ms, judge=inp.judge == "on"
            ),
            started_at=started,
            finished_at=now_utc(),
            logs=[log for _, log in sorted(state.logs, key=lambda kv: kv[0])],
            isolation=inp.isolation,
            environment=prepared.statement.manifest.environment_digest or EXECUTOR_ENVIRONMENT,
            judge=inp.judge,
            alone=[
                executor_pb2.AloneRun(property_id=pid, run_index=r, reason=why)
                for (pid, r), why in sorted(
                    state.alone.items(), key=lambda kv: (index[kv[0][0]], kv[0][1])
                )
            ],
        )
        binding = run_binding(
            [(w.path, w.digest, w.size) for w in inp.workspace],
            [(v.path, v.source, v.scope or inp.variant_scope) for v in inp.variants],
            properties=[(p.id, p.command) for p in inp.properties],
            targets=[(t.path, t.first_line, t.last_line, t.name) for t in inp.targets],
            source_roots=inp.source_roots,
            production=inp.production,
        )
        return report, sign_result(report, self._signer, binding)

    def _alone(  # noqa: PLR0917 - private, two call sites
        self,
        prepared: Prepared,
        state: _RunState,
        i: int,
        r: int,
        emit: Callable[[Progress], None],
        cancel: threading.Event,
        why: str,
    ) -> None:
        """One run of one property in a sandbox of its own (``why``: the batch's reason, if any)."""
        prop = prepared.inp.properties[i]
        capture = OutputCapture(state.tail)
        if why:
            emit(Progress(prop.id, r, "alone", why))
        res, ms = self._guarded_run(prepared, i, prop, r, emit, cancel, capture)
        with state.lock:
            state.results[(prop.id, r, 0)] = res
            if why:
                state.alone[(prop.id, r)] = why
            for k, v in ms.items():
                state.phase_ms[k] += v
            if capture.done.is_set():
                state.logs.append(((i, r, 0), _run_log([prop.id], r, capture)))

    def _guarded_batch(  # noqa: PLR0917 - private, one call site
        self,
        prepared: Prepared,
        state: _RunState,
        group: Group,
        r: int,
        emit: Callable[[Progress], None],
        cancel: threading.Event,
        tail: int,
    ) -> dict[str, str]:
        """One run of a group in one sandbox; returns the properties to re-run alone, and why.

        A transport failure of the batch itself (the engine, the image, the start) is a transport
        record of each member, as it would be of each alone; nothing is re-run then."""
        capture = OutputCapture(tail)
        exc: SandboxError | None = None
        verdicts: dict[str, BatchVerdict] = {}
        ms: dict[str, int] = {}
        while not self._slots.acquire(timeout=0.5):
            if cancel.is_set():
                exc = SandboxError("internal", "cancelled")
                break
        else:
            try:
                verdicts, ms = self._batch_run(prepared, group, r, emit, cancel, capture)
            except SandboxError as err:
                log.warning("batch transport failure", properties=len(group.ids), run=r)
                exc = err
            except Exception as err:
                log.exception("batch failed unexpectedly", properties=len(group.ids), run=r)
                exc = SandboxError("internal", type(err).__name__)
            finally:
                self._slots.release()
        first = prepared.inp.properties.index(
            next(p for p in prepared.inp.properties if p.id == group.ids[0])
        )
        with state.lock:
            for k, n in ms.items():
                state.phase_ms[k] += n
            if capture.done.is_set():
                state.logs.append(((first, r, 1), _run_log(group.ids, r, capture)))
            if exc is not None:
                for pid in group.ids:
                    state.results[(pid, r, 0)] = _transport(PropertyRun(pid, ()), r, exc)
                return {}
            for pid, v in verdicts.items():
                if v.outcome is not None:
                    state.results[(pid, r, 0)] = _from_verdict(pid, r, v)
        return {pid: v.alone for pid, v in verdicts.items() if v.outcome is None}

    def _batch_run(  # noqa: PLR0917 - private, one call site
        self,
        prepared: Prepared,
        group: Group,
        r: int,
        emit: Callable[[Progress], None],
        cancel: threading.Event,
        capture: OutputCapture,
    ) -> tuple[dict[str, BatchVerdict], dict[str, int]]:
        if self.observed_digest(prepared) != prepared.statement.digest:
            raise SandboxError("internal", "fixture bytes changed before this run; not run")
        inp, manifest = prepared.inp, prepared.statement.manifest
        paths = self._run_paths(prepared, f"batch-{_slug(group.ids[0])}-{r}")
        argv = group.argv(run_order(group.ids, manifest.seed, r))
        nodes = list(argv[len(group.prefix) :])
        (paths.readable / BATCH_NAME).write_text(
            json.dumps({"bound_ms": manifest.clock_bound_ms, "order": nodes}), encoding="utf-8"
        )
        (paths.readable / BATCH_NAME).chmod(0o444)
        bound_s = manifest.clock_bound_ms / 1000
        deadline_s = bound_s * len(group.ids) + max(bound_s, BATCH_MARGIN_S)
        nonce = secrets.token_hex(16)
        spec = self._spec(
            prepared,
            paths,
            argv,
            nonce,
            batch=True,
            deadline_s=deadline_s,
            labels={
                "patchgate.property": f"batch:{group.ids[0]}"[:128],
                "patchgate.properties": str(len(group.ids)),
                "patchgate.run": str(r),
            },
            output=capture,
        )
        channel = self.channels(paths.run_dir, nonce, judged=inp.judge == "on")
        try:
            emit(Progress("", r, "start", f"batch of {len(group.ids)}: {group.ids[0]}, ..."))
            done = run_container(
                self.runtime, spec, self.policy, clock_bound_s=deadline_s, cancel=cancel
            )
            emit(Progress("", r, "run", f"batch of {len(group.ids)}: exit {done.exit_code}"))
            t0 = time.monotonic()
            records = channel.finish(_DRAIN_S)
        finally:
            channel.close()
        ended = ""
        if done.oom_killed:
            ended = f"OOM-killed at {self.policy.memory_bytes} bytes"
        elif done.timed_out:
            ended = f"past its deadline of {int(deadline_s * 1000)} ms"
        by_id = {p.id: p for p in inp.properties}
        verdicts = batch_outcomes(
            records,
            [
                (pid, node_arguments(by_id[pid].command, manifest.allowed_commands))
                for pid in group.ids
            ],
            done.exit_code,
            PLUGIN_PATH,
            ended=ended,
            bound_text=f"clock bound {manifest.clock_bound_ms} ms exceeded",
        )
        collect = int((time.monotonic() - t0) * 1000)
        for pid, v in verdicts.items():
            if v.outcome is not None:
                emit(Progress(pid, r, "done", v.outcome[0]))
        return verdicts, {
            "container_start_ms": done.start_ms,
            "run_ms": done.run_ms,
            "collect_ms": collect,
        }

    def _guarded_variants(  # noqa: PLR0917 - private, one call site
        self,
        prepared: Prepared,
        state: _RunState,
        group: Group,
        emit: Callable[[Progress], None],
        cancel: threading.Event,
        tail: int,
    ) -> None:
        """Every variant of one group in one sandbox (run 1); a transport failure of the sandbox is
        a transport record of each member (nothing is re-run alone with variants)."""
        capture = OutputCapture(tail)
        exc: SandboxError | None = None
        outcomes: list[RunOutcome] = []
        ms: dict[str, int] = {}
        while not self._slots.acquire(timeout=0.5):
            if cancel.is_set():
                exc = SandboxError("internal", "cancelled")
                break
        else:
            try:
                outcomes, ms = self._variant_run(prepared, group, emit, cancel, capture)
            except SandboxError as err:
                log.warning("variant batch transport failure", properties=len(group.ids))
                exc = err
            except Exception as err:
                log.exception("variant batch failed unexpectedly", properties=len(group.ids))
                exc = SandboxError("internal", type(err).__name__)
            finally:
                self._slots.release()
        first = next(i for i, p in enumerate(prepared.inp.properties) if p.id == group.ids[0])
        with state.lock:
            for k, n in ms.items():
                state.phase_ms[k] += n
            if capture.done.is_set():
                state.logs.append(((first, 1, 1), _run_log(group.ids, 1, capture)))
            if exc is not None:
                for pid in _planned_ids(variant_plan(prepared.inp, group)):
                    state.results[(pid, 1, 0)] = _transport(PropertyRun(pid, ()), 1, exc)
                return
            for o in outcomes:
                state.results[(o.property_id, 1, o.variant)] = o

    def _variant_run(
        self,
        prepared: Prepared,
        group: Group,
        emit: Callable[[Progress], None],
        cancel: threading.Event,
        capture: OutputCapture,
    ) -> tuple[list[RunOutcome], dict[str, int]]:
        if self.observed_digest(prepared) != prepared.statement.digest:
            raise SandboxError("internal", "fixture bytes changed before this run; not run")
        inp, manifest = prepared.inp, prepared.statement.manifest
        by_id = {p.id: p for p in inp.properties}
        first = next(i for i, p in enumerate(inp.properties) if p.id == group.ids[0])
        paths = self._run_paths(prepared, f"variants-{first}-{_slug(group.ids[0])}")
        if len(group.ids) == 1:
            argv = by_id[group.ids[0]].command
            nodes = node_arguments(argv, manifest.allowed_commands)
        else:
            argv = group.argv(run_order(group.ids, manifest.seed, 1))
            nodes = list(argv[len(group.prefix) :])
        bound_ms = manifest.clock_bound_ms
        if inp.variant_bound_ms:
            bound_ms = min(bound_ms, inp.variant_bound_ms) if bound_ms else inp.variant_bound_ms
        plan = variant_plan(inp, group)
        own = {pid: node_arguments(by_id[pid].command, manifest.allowed_commands)
               for pid in _planned_ids(plan)}  # fmt: skip
        members = [[(pid, own[pid]) for pid in scoped] for _, scoped in plan]
        files = _batch_files(
            paths.readable, plan, own, members=len(group.ids), bound_ms=bound_ms, nodes=nodes
        )
        chosen = [inp.variants[g - 1] for g, _ in plan]
        index = tuple(
            (*at, files[tuple(scoped)])
            for at, (_, scoped) in zip(
                _write_variants(paths.run_dir / VARIANTS_NAME, chosen), plan, strict=True
            )
        )
        n = len(plan)
        deadline_s = variants_deadline_s(bound_ms / 1000, [len(scoped) for _, scoped in plan])
        nonce = secrets.token_hex(16)
        spec = self._spec(
            prepared,
            paths,
            argv,
            nonce,
            batch=True,
            deadline_s=deadline_s,
            labels={
                "patchgate.property": f"variants:{group.ids[0]}"[:128],
                "patchgate.properties": str(len(group.ids)),
                "patchgate.variants": str(n),
                "patchgate.run": "1",
            },
            output=capture,
            variants=index,
        )
        channel = self.channels(paths.run_dir, nonce, judged=True, variants=n)
        try:
            emit(Progress("", 1, "start", f"{n} variants of {len(group.ids)}: {group.ids[0]}"))
            done = run_container(
                self.runtime, spec, self.policy, clock_bound_s=deadline_s, cancel=cancel
            )
            emit(Progress("", 1, "run", f"{n} variants: exit {done.exit_code}"))
            t0 = time.monotonic()
            records = channel.finish(_DRAIN_S)
        finally:
            channel.close()
        ended = ""
        if done.oom_killed:
            ended = f"OOM-killed at {self.policy.memory_bytes} bytes"
        elif done.timed_out:
            ended = f"past its deadline of {int(deadline_s * 1000)} ms"
        outcomes = [
            dataclasses.replace(o, variant=plan[o.variant - 1][0])  # the request's numbering
            for o in variant_outcomes(
                records,
                (),
                n,
                ended=ended,
                bound_text=f"clock bound {bound_ms} ms exceeded",
                per_variant=members,
            )
        ]
        for o in outcomes:
            emit(Progress(o.property_id, 1, "done", f"variant {o.variant}: {o.outcome}"))
        collect = int((time.monotonic() - t0) * 1000)
        return outcomes, {
            "container_start_ms": done.start_ms,
            "run_ms": done.run_ms,
            "collect_ms": collect,
        }

    def _guarded_run(  # noqa: PLR0917 - private, one call site
        self,
        prepared: Prepared,
        index: int,
        prop: PropertyRun,
        run_index: int,
        emit: Callable[[Progress], None],
        cancel: threading.Event,
        capture: OutputCapture,
    ) -> tuple[RunOutcome | TransportRecord, dict[str, int]]:
        """One run under a parallelism slot; infrastructure failures become transport records."""
        while not self._slots.acquire(timeout=0.5):
            if cancel.is_set():
                return _transport(prop, run_index, SandboxError("internal", "cancelled")), {}
        try:
            return self._one_run(prepared, index, prop, run_index, emit, cancel, capture)
        except SandboxError as exc:
            log.warning("run transport failure", property=prop.id, run=run_index, kind=exc.kind)
            return _transport(prop, run_index, exc), {}
        except Exception as exc:
            log.exception("run failed unexpectedly", property=prop.id, run=run_index)
            return _transport(prop, run_index, SandboxError("internal", type(exc).__name__)), {}
        finally:
            self._slots.release()

    def _one_run(  # noqa: PLR0917 - private, one call site
        self,
        prepared: Prepared,
        index: int,
        prop: PropertyRun,
        run_index: int,
        emit: Callable[[Progress], None],
        cancel: threading.Event,
        capture: OutputCapture,
    ) -> tuple[RunOutcome | TransportRecord, dict[str, int]]:
        if self.observed_digest(prepared) != prepared.statement.digest:
            raise SandboxError("internal", "fixture bytes changed before this run; not run")
        manifest = prepared.statement.manifest
        paths = self._run_paths(prepared, f"{index}-{run_index}")
        run_dir = paths.run_dir
        nonce = secrets.token_hex(16)
        spec = self._spec(
            prepared,
            paths,
            prop.command,
            nonce,
            batch=False,
            deadline_s=manifest.clock_bound_ms / 1000,
            labels={"patchgate.property": prop.id, "patchgate.run": str(run_index)},
            output=capture,
        )
        channel = self.channels(run_dir, nonce, judged=prepared.inp.judge == "on")
        try:
            emit(Progress(prop.id, run_index, "start"))
            done = run_container(
                self.runtime,
                spec,
                self.policy,
                clock_bound_s=manifest.clock_bound_ms / 1000,
                cancel=cancel,
            )
            emit(Progress(prop.id, run_index, "run", f"exit {done.exit_code}"))
            t0 = time.monotonic()
            records = channel.finish(_DRAIN_S)
        finally:
            channel.close()
        if done.oom_killed:
            raise SandboxError(
                "resource_exhausted", f"OOM-killed at {self.policy.memory_bytes} bytes"
            )
        if done.timed_out:
            outcome = RunOutcome.make(
                prop.id,
                run_index,
                "exceeded_bound",
                f"clock bound {manifest.clock_bound_ms} ms exceeded",
                done.run_ms,
                failure_kind="judge_error",
            )
        else:
            node_args = node_arguments(prop.command, manifest.allowed_commands)
            status, failure, executed = property_outcome(
                records,
                node_args,
                done.exit_code,
                PLUGIN_PATH,
                bound_text=f"clock bound {manifest.clock_bound_ms} ms exceeded",
            )
            outcome = RunOutcome.make(
                prop.id,
                run_index,
                status,
                failure,
                done.run_ms,
                executed=executed,
                tree_hash=tree_of(records, node_args),
                cases=case_outcomes(records, node_args),
                failure_kind=outcome_kind(records.resolved(), node_args, status),
            )
        collect = int((time.monotonic() - t0) * 1000)
        emit(Progress(prop.id, run_index, "done", outcome.outcome))
        return outcome, {
            "container_start_ms": done.start_ms,
            "run_ms": done.run_ms,
            "collect_ms": collect,
        }

    def _python_mounts(self, prepared: Prepared) -> tuple[Mount, ...]:
        """The executor's Python (no environment signed), or the base one and the environment."""
        if prepared.source_roots is None:
            return self.host_mounts
        return sandbox_mounts(self.bare, prepared.environment_dir)

    def _layout(self, prepared: Prepared) -> SandboxLayout:
        """The fixed part of this request's sandboxes: with a signed environment, the base
        interpreter and the environment tree instead of the executor's venv, the environment
        and the source roots on the judge's path, the environment on the subject's."""
        roots = prepared.source_roots
        if roots is None:
            return self.layout
        return dataclasses.replace(
            self.layout,
            host_mounts=self._python_mounts(prepared),
            path_dirs=self.bare.path_dirs,
            python_path=tuple(python_path("", WORKSPACE, roots).split(":")[1:]),
            subject_path=(ENV,),
        )

    def _run_paths(self, prepared: Prepared, name: str) -> RunPaths:
        """The run's directories (see ``_run_dir``), with the targets file in place."""
        inp = prepared.inp
        judge = inp.judge == "on"
        run_dir = prepared.req_dir / "runs" / name
        _run_dir(run_dir, mode=run_dir_mode() if judge else 0o755)
        info = run_dir.with_name(name + "-info") if judge else None
        if info is not None:
            _run_dir(info, mode=0o755)
        paths = RunPaths(
            workspace=prepared.workspace_dir,
            fixtures=prepared.fixture_dir,
            fixture_root=inp.fixture_root,
            inside=prepared.inside_dir,
            run_dir=run_dir,
            info_dir=info,
        )
        targets = [(t.path, t.first_line, t.last_line, t.name) for t in inp.targets]
        if targets:
            write_targets(paths.readable, targets)
        return paths

    def _spec(
        self,
        prepared: Prepared,
        paths: RunPaths,
        argv: tuple[str, ...],
        nonce: str,
        *,
        batch: bool,
        deadline_s: float,
        labels: dict[str, str],
        output: OutputCapture,
        variants: tuple[tuple[str, int, int, str], ...] = (),
    ) -> ContainerSpec:
        inp, manifest = prepared.inp, prepared.statement.manifest
        judge = None
        if inp.judge == "on":
            judge = JudgeRun(
                source_roots=inp.source_roots,
                production=inp.production,
                bound_ms=manifest.clock_bound_ms,
                # the supervisor ends the run first; the container's deadline is the backstop
                deadline_ms=max(1000, int(deadline_s * 1000) - SUPERVISOR_MARGIN_MS),
                variants=variants,
                variant_bound_ms=inp.variant_bound_ms if variants else 0,
            )
        return self._layout(prepared).spec(
            judge=judge,
            argv=argv,
            paths=paths,
            seed=manifest.seed,
            nonce=nonce,
            with_targets=bool(inp.targets),
            batch=batch,
            labels={**self.labels, "patchgate.request": inp.request_id[:128], **labels},
            output=output,
        )


VARIANT_MARGIN_S = 5.0  # with variants: a pair's start and end, beyond its bounds


def variant_plan(inp: ExecuteInput, group: Group) -> list[tuple[int, list[str]]]:
    """The variants the group's sandbox runs, in the request's order: (1-based index in the
    request, the group's members whose tests run in it). A variant's scope is its own
    (``Variant.scope``), else the request's ``variant_scope``, else every member; a variant
    whose scope holds no member of the group does not run in the group's sandbox."""
    plan = []
    for n, v in enumerate(inp.variants, 1):
        scoped = variant_members(group.ids, v.scope, inp.variant_scope)
        if scoped:
            plan.append((n, scoped))
    return plan


def _batch_files(
    readable: Path,
    plan: Sequence[tuple[int, Sequence[str]]],
    own: Mapping[str, Sequence[str]],
    *,
    members: int,
    bound_ms: int,
    nodes: Sequence[str],
) -> dict[tuple[str, ...], str]:
    """One batch file per distinct scope of ``plan`` in ``readable`` (the first one is
    ``BATCH_NAME``, the judge's default); each scope -> its sandbox path ("" for the default).
    Each holds the group's bound and order and, when the scope is not every member of the group,
    the node ids to ``run``: every module is collected, only the scope's tests run."""
    files: dict[tuple[str, ...], str] = {}
    for _, scoped in plan:
        if tuple(scoped) in files:
            continue
        batch: dict[str, object] = {"bound_ms": bound_ms, "order": list(nodes)}
        if len(scoped) < members:
            batch["run"] = [n for pid in scoped for n in own[pid]]
        name = BATCH_NAME if not files else f"batch-{len(files)}.json"
        (readable / name).write_text(json.dumps(batch), encoding="utf-8")
        (readable / name).chmod(0o444)
        files[tuple(scoped)] = "" if name == BATCH_NAME else f"{INFO}/{name}"
    return files


def _planned_ids(plan: Sequence[tuple[int, Sequence[str]]]) -> list[str]:
    """Every property some variant of ``plan`` runs, in the group's order."""
    return list(dict.fromkeys(pid for _, scoped in plan for pid in scoped))


def variants_deadline_s(bound_s: float, scoped: Sequence[int]) -> float:
    """The sandbox deadline of one pair per entry of ``scoped`` (how many properties each
    runs): per pair the sum of its bounds plus max(one bound, ``VARIANT_MARGIN_S``), plus
    ``BATCH_MARGIN_S`` once."""
    return sum(bound_s * k + max(bound_s, VARIANT_MARGIN_S) for k in scoped) + BATCH_MARGIN_S


def variant_outcomes(
    records: RecordLog,
    members: Sequence[tuple[str, Sequence[str]]],
    count: int,
    *,
    ended: str = "",
    bound_text: str = "",
    plugin: str = PLUGIN_PATH,
    per_variant: Sequence[Sequence[tuple[str, Sequence[str]]]] = (),
) -> list[RunOutcome]:
    """Each member property's outcome under each of ``count`` variants (run 1; the members of
    variant n are ``per_variant[n - 1]`` when given), from the
    variants' logs of one sandbox: each judged like one batch run, with its pair's judge status
    (the supervisor's ``judge`` record) as the exit status. A variant without a complete pair of
    records (the sandbox ended, a reset failed, a channel problem) is ``error`` for each member;
    a member its variant did not report is ``error`` too (never re-run alone)."""
    out: list[RunOutcome] = []
    everyone = members
    for n in range(1, count + 1):
        members = per_variant[n - 1] if per_variant else everyone
        part = records.variant_logs[n - 1] if n <= len(records.variant_logs) else None
        if records.problems:
            missing = "report channel: " + "; ".join(records.problems)
        elif part is None:
            missing = records.reset_failure or f"the sandbox ended before it ({ended or 'exit'})"
            missing = f"variant {n} did not run: {missing}"
        else:
            missing = ""
        if part is None or missing:
            out += [RunOutcome.make(pid, 1, "error", missing, failure_kind="judge_error",
                                    variant=n) for pid, _ in members]  # fmt: skip
            continue
        code = part.judge_end[1] if part.judge_end is not None else None
        verdicts = batch_outcomes(
            part,
            members,
            code,
            plugin,
            ended="" if part.judge_end is not None else ended or "cut short",
            bound_text=bound_text,
        )
        for pid, verdict in verdicts.items():
            v = verdict
            if v.outcome is None:
                v = BatchVerdict(("error", v.alone, ()), "", v.duration_ms,
                                 failure_kind="judge_error")  # fmt: skip
            out.append(_from_verdict(pid, 1, v, variant=n))
    return out


def _from_verdict(pid: str, r: int, v: BatchVerdict, *, variant: int = 0) -> RunOutcome:
    assert v.outcome is not None  # noqa: S101 - callers pass verdicts with an outcome
    status, failure, executed = v.outcome
    return RunOutcome.make(
        pid, r, status, failure, v.duration_ms, executed=executed, tree_hash=v.tree,
        cases=v.cases, failure_kind=v.failure_kind, variant=variant,
    )  # fmt: skip


def _write_variants(path: Path, variants: Sequence[Variant]) -> tuple[tuple[str, int, int], ...]:
    """The variants' sources, one after another, in a file only the supervisor's uid reads
    (0400 in its 0700 run directory); where each lies, with its sandbox path."""
    index = []
    offset = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
    with os.fdopen(fd, "wb") as fh:
        for v in variants:
            fh.write(v.source)
            index.append((f"{WORKSPACE}/{v.path}", offset, len(v.source)))
            offset += len(v.source)
    return tuple(index)


def _run_dir(run_dir: Path, *, mode: int) -> None:
    """A run's directory: 0755 for the sandbox user (judge off: the socket, targets, batch);
    judge on, the socket's is the supervisor's alone (``run_dir_mode``) and a second one holds
    what judge and subject read; the request directory stays 0700."""
    run_dir.mkdir(parents=True, mode=mode)
    run_dir.chmod(mode)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:64]


def _run_log(ids: Sequence[str], run_index: int, capture: OutputCapture) -> executor_pb2.RunLog:
    out, err, out_n, err_n = capture.tails()
    return executor_pb2.RunLog(
        property_id=ids[0],
        property_ids=list(ids),
        run_index=run_index,
        stdout_tail=printable(out),
        stderr_tail=printable(err),
        stdout_bytes=out_n,
        stderr_bytes=err_n,
    )


def _with_files(m: Manifest, files: dict[str, FileEntry]) -> Manifest:
    return Manifest(
        pin_id=m.pin_id,
        algorithm=m.algorithm,
        files=files,
        seed=m.seed,
        clock_bound_ms=m.clock_bound_ms,
        allowed_commands=m.allowed_commands,
    )


def _place(blob: Path, dest: Path, mode: int) -> None:
    """Copy one blob into the tree (a copy, so eviction or tampering in the store cannot follow)."""
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    with contextlib.suppress(FileNotFoundError):
        if dest.is_dir():
            raise FailedPrecondition(f"workspace path {dest.name!r} is both a file and a directory")
    try:
        shutil.copyfile(blob, dest)
    except (IsADirectoryError, NotADirectoryError) as exc:
        raise FailedPrecondition(f"workspace paths conflict at {dest.name!r}") from exc
    dest.chmod(mode)


def _transport(prop: PropertyRun, run_index: int, exc: SandboxError) -> TransportRecord:
    return TransportRecord(
        kind=exc.kind, detail=exc.detail, property_id=prop.id, run_index=run_index
    )
