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
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import structlog

from executord.errors import SandboxError
from executord.runs.channel import (
    ChannelFactory,
    ReportChannel,
    write_targets,
)
from executord.runs.environment import (
    ENV,
    EXECUTOR_ENVIRONMENT,
    Bare,
    python_path,
    sandbox_mounts,
)
from executord.runs.prepared import Prepared, cleanup, observed_digest, prepare
from executord.runs.records import (
    BatchVerdict,
    RecordLog,
    batch_outcomes,
    case_outcomes,
    from_verdict,
    node_arguments,
    outcome_kind,
    property_outcome,
    tree_of,
)
from executord.runs.request import ExecuteInput, PropertyRun
from executord.runs.sandboxspec import (
    BATCH_NAME,
    PLUGIN_PATH,
    VARIANTS_NAME,
    WORKSPACE,
    JudgeRun,
    RunPaths,
    SandboxLayout,
    run_dir_mode,
    with_reporter,
)
from executord.runs.variants import (
    BATCH_MARGIN_S,
    batch_files,
    planned_ids,
    variant_outcomes,
    variant_plan,
    variants_deadline_s,
    write_variants,
)
from executord.sandbox.container import (
    ContainerExit,
    ContainerRuntime,
    ContainerSpec,
    Mount,
    SandboxPolicy,
    run_container,
)
from executord.sandbox.output import TAIL_BYTES, OutputCapture, printable
from executord.store.blobstore import BlobStore
from patchgate.batching import Group, group_properties, run_order
from patchgate.envelope import Envelope
from patchgate.keys import Keyring, Signer
from patchgate.ledgers import now_utc
from patchgate.report import sign_result
from patchgate.results import RunOutcome, TransportRecord
from patchgate.v1 import executor_pb2

__all__ = [
    "PLUGIN_PATH",
    "Executor",
    "Prepared",
    "Progress",
    "with_reporter",
]

log = structlog.get_logger("executord.runs.executor")
LOG_BUDGET = 2 << 20  # bytes of stdout+stderr tails per report, shared by its runs
_DRAIN_S = 2.0  # after the container ended: how long the report stream may take to close
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


_T = TypeVar("_T")
#: Where a variant's source lies for the supervisor: (sandbox path, offset, length, batch file)
_VariantIndex = tuple[tuple[str, int, int, str], ...]


def _no_files(paths: RunPaths) -> _VariantIndex:
    del paths
    return ()


@dataclass(frozen=True)
class _Sandbox:
    """One sandbox of a request: what it runs, for how long, and how its progress reads."""

    name: str  # its run directory's
    argv: tuple[str, ...]
    deadline_s: float
    labels: dict[str, str]
    judged: bool
    progress: tuple[str, int]  # the property id ("" for a group) and run index of its events
    batch: bool = True
    said: str = ""  # the "start" event's message
    prefix: str = ""  # before "exit N" in the "run" event's message
    #: the files it reads, written into its run directory; where its variants lie
    files: Callable[[RunPaths], _VariantIndex] = _no_files
    variants: int = 0  # how many variants it runs


@dataclass(frozen=True)
class _Ran:
    """A sandbox that ended: the container's exit, its records, when reading them ended."""

    done: ContainerExit
    records: RecordLog
    collect_from: float

    def ended(self, memory_bytes: int, deadline_s: float) -> str:
        """Why the container did not exit by itself ("" when it did)."""
        if self.done.oom_killed:
            return f"OOM-killed at {memory_bytes} bytes"
        if self.done.timed_out:
            return f"past its deadline of {int(deadline_s * 1000)} ms"
        return ""

    def phase_ms(self) -> dict[str, int]:
        """The container's start and run times, and the time since its records were read."""
        collect = int((time.monotonic() - self.collect_from) * 1000)
        return {"container_start_ms": self.done.start_ms, "run_ms": self.done.run_ms,
                "collect_ms": collect}  # fmt: skip


@dataclass(frozen=True)
class Progress:
    """One progress event."""

    property_id: str
    run_index: int
    phase: str
    message: str = ""


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
        return prepare(inp, keyring=self.keyring, store=self.store, work_dir=self.work_dir)

    def observed_digest(self, prepared: Prepared) -> str:
        """The digest v1 of the fixture bytes as they sit in the tree that gets mounted."""
        return observed_digest(prepared)

    def cleanup(self, prepared: Prepared) -> None:
        """Remove the materialized trees and results."""
        cleanup(prepared)

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
                    self._variants(prepared, state, group, emit, cancel, batch_tail)
                return
            if len(group.members) == 1:
                i = index[group.ids[0]]
                self._alone(prepared, state, i, r, emit, cancel, "")
                return
            verdicts = self._batch(prepared, state, group, r, emit, cancel, batch_tail)
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
        return report, sign_result(report, self._signer)

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
        if why:
            emit(Progress(prop.id, r, "alone", why))
        box = _Sandbox(
            name=f"{i}-{r}",
            argv=prop.command,
            deadline_s=prepared.statement.manifest.clock_bound_ms / 1000,
            labels={"patchgate.property": prop.id, "patchgate.run": str(r)},
            judged=prepared.inp.judge == "on",
            batch=False,
            progress=(prop.id, r),
        )
        outcome = self._guarded(
            prepared,
            state,
            box,
            lambda ran: self._single_outcome(prepared, prop, r, ran, emit),
            emit=emit,
            cancel=cancel,
            ids=(prop.id,),
            log_key=(i, r, 0),
            tail=state.tail,
        )
        with state.lock:
            if outcome is not None:
                state.results[(prop.id, r, 0)] = outcome
            if why:
                state.alone[(prop.id, r)] = why

    def _batch(  # noqa: PLR0917 - private, one call site
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
        manifest = prepared.statement.manifest
        argv = group.argv(run_order(group.ids, manifest.seed, r))
        nodes = list(argv[len(group.prefix) :])
        bound_s = manifest.clock_bound_ms / 1000
        n = len(group.ids)

        def files(paths: RunPaths) -> _VariantIndex:
            (paths.readable / BATCH_NAME).write_text(
                json.dumps({"bound_ms": manifest.clock_bound_ms, "order": nodes}), encoding="utf-8"
            )
            (paths.readable / BATCH_NAME).chmod(0o444)
            return ()

        box = _Sandbox(
            name=f"batch-{_slug(group.ids[0])}-{r}",
            argv=argv,
            deadline_s=bound_s * n + max(bound_s, BATCH_MARGIN_S),
            labels={
                "patchgate.property": f"batch:{group.ids[0]}"[:128],
                "patchgate.properties": str(n),
                "patchgate.run": str(r),
            },
            judged=prepared.inp.judge == "on",
            progress=("", r),
            said=f"batch of {n}: {group.ids[0]}, ...",
            prefix=f"batch of {n}: ",
            files=files,
        )
        verdicts = self._guarded(
            prepared,
            state,
            box,
            lambda ran: self._batch_verdicts(prepared, group, r, ran, emit, box.deadline_s),
            emit=emit,
            cancel=cancel,
            ids=group.ids,
            log_key=(self._first(prepared, group), r, 1),
            tail=tail,
        )
        if verdicts is None:
            return {}
        with state.lock:
            for pid, v in verdicts.items():
                if v.outcome is not None:
                    state.results[(pid, r, 0)] = from_verdict(pid, r, v)
        return {pid: v.alone for pid, v in verdicts.items() if v.outcome is None}

    def _variants(  # noqa: PLR0917 - private, one call site
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
        inp, manifest = prepared.inp, prepared.statement.manifest
        by_id = {p.id: p for p in inp.properties}
        first = self._first(prepared, group)
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
               for pid in planned_ids(plan)}  # fmt: skip
        members = [[(pid, own[pid]) for pid in scoped] for _, scoped in plan]
        n = len(plan)

        def files(paths: RunPaths) -> _VariantIndex:
            names = batch_files(
                paths.readable, plan, own, members=len(group.ids), bound_ms=bound_ms, nodes=nodes
            )
            chosen = [inp.variants[g - 1] for g, _ in plan]
            at = write_variants(paths.run_dir / VARIANTS_NAME, chosen)
            placed = zip(at, plan, strict=True)
            return tuple((*a, names[tuple(scoped)]) for a, (_, scoped) in placed)

        box = _Sandbox(
            name=f"variants-{first}-{_slug(group.ids[0])}",
            argv=argv,
            deadline_s=variants_deadline_s(bound_ms / 1000, [len(scoped) for _, scoped in plan]),
            labels={
                "patchgate.property": f"variants:{group.ids[0]}"[:128],
                "patchgate.properties": str(len(group.ids)),
                "patchgate.variants": str(n),
                "patchgate.run": "1",
            },
            judged=True,
            progress=("", 1),
            said=f"{n} variants of {len(group.ids)}: {group.ids[0]}",
            prefix=f"{n} variants: ",
            files=files,
            variants=n,
        )

        def outcomes(ran: _Ran) -> list[RunOutcome]:
            out = [
                dataclasses.replace(o, variant=plan[o.variant - 1][0])  # the request's numbering
                for o in variant_outcomes(
                    ran.records,
                    (),
                    n,
                    ended=ran.ended(self.policy.memory_bytes, box.deadline_s),
                    bound_text=f"clock bound {bound_ms} ms exceeded",
                    per_variant=members,
                )
            ]
            for o in out:
                emit(Progress(o.property_id, 1, "done", f"variant {o.variant}: {o.outcome}"))
            return out

        got = self._guarded(
            prepared,
            state,
            box,
            outcomes,
            emit=emit,
            cancel=cancel,
            ids=planned_ids(plan),
            log_key=(first, 1, 1),
            tail=tail,
        )
        with state.lock:
            for o in got or ():
                state.results[(o.property_id, 1, o.variant)] = o

    # -- the one run path: a slot, a sandbox, its records, transport failures mapped once -------

    def _guarded(
        self,
        prepared: Prepared,
        state: _RunState,
        box: _Sandbox,
        judge: Callable[[_Ran], _T],
        *,
        emit: Callable[[Progress], None],
        cancel: threading.Event,
        ids: Sequence[str],
        log_key: tuple[int, int, int],
        tail: int,
    ) -> _T | None:
        """``box`` run under one of the ``max_parallel`` slots and ``judge``'s reading of it; its
        phase times and output tails go to ``state``. An infrastructure failure (the engine, the
        image, a cancel, an OOM kill of a single run, anything unexpected) is a transport record
        of each of ``ids`` in ``state`` instead, and None is returned."""
        capture = OutputCapture(tail)
        got: _T | None = None
        exc: SandboxError | None = None
        ran: _Ran | None = None
        while not self._slots.acquire(timeout=0.5):
            if cancel.is_set():
                exc = SandboxError("internal", "cancelled")
                break
        else:
            try:
                ran = self._sandbox(prepared, box, emit, cancel, capture)
                got = judge(ran)
            except SandboxError as err:
                log.warning("run transport failure", sandbox=box.name, kind=err.kind)
                exc = err
            except Exception as err:
                log.exception("run failed unexpectedly", sandbox=box.name)
                exc = SandboxError("internal", type(err).__name__)
            finally:
                self._slots.release()
        r = box.progress[1]
        ms = ran.phase_ms() if ran is not None and exc is None else {}
        with state.lock:
            for k, v in ms.items():
                state.phase_ms[k] += v
            if capture.done.is_set():
                state.logs.append((log_key, _run_log(ids, r, capture)))
            if exc is not None:
                for pid in ids:
                    state.results[(pid, r, 0)] = _transport(pid, r, exc)
        return got

    def _sandbox(
        self,
        prepared: Prepared,
        box: _Sandbox,
        emit: Callable[[Progress], None],
        cancel: threading.Event,
        capture: OutputCapture,
    ) -> _Ran:
        """One sandbox: the fixture bytes checked again, its run directory and files, the
        container and its report stream; SandboxError for a failure of the infrastructure."""
        if self.observed_digest(prepared) != prepared.statement.digest:
            raise SandboxError("internal", "fixture bytes changed before this run; not run")
        paths = self._run_paths(prepared, box.name)
        variants = box.files(paths)
        nonce = secrets.token_hex(16)
        spec = self._spec(
            prepared,
            paths,
            box.argv,
            nonce,
            batch=box.batch,
            deadline_s=box.deadline_s,
            labels=box.labels,
            output=capture,
            variants=variants,
        )
        channel = self.channels(paths.run_dir, nonce, judged=box.judged, variants=box.variants)
        pid, r = box.progress
        try:
            emit(Progress(pid, r, "start", box.said))
            done = run_container(
                self.runtime, spec, self.policy, clock_bound_s=box.deadline_s, cancel=cancel
            )
            emit(Progress(pid, r, "run", f"{box.prefix}exit {done.exit_code}"))
            t0 = time.monotonic()
            records = channel.finish(_DRAIN_S)
        finally:
            channel.close()
        return _Ran(done, records, t0)

    def _single_outcome(
        self,
        prepared: Prepared,
        prop: PropertyRun,
        r: int,
        ran: _Ran,
        emit: Callable[[Progress], None],
    ) -> RunOutcome:
        """A single run's outcome from its records (an OOM kill is the infrastructure's)."""
        manifest, done = prepared.statement.manifest, ran.done
        bound_text = f"clock bound {manifest.clock_bound_ms} ms exceeded"
        if done.oom_killed:
            raise SandboxError(
                "resource_exhausted", f"OOM-killed at {self.policy.memory_bytes} bytes"
            )
        if done.timed_out:
            outcome = RunOutcome.make(
                prop.id, r, "exceeded_bound", bound_text, done.run_ms, failure_kind="judge_error"
            )
        else:
            node_args = node_arguments(prop.command, manifest.allowed_commands)
            status, failure, executed = property_outcome(
                ran.records, node_args, done.exit_code, PLUGIN_PATH, bound_text=bound_text
            )
            outcome = RunOutcome.make(
                prop.id,
                r,
                status,
                failure,
                done.run_ms,
                executed=executed,
                tree_hash=tree_of(ran.records, node_args),
                cases=case_outcomes(ran.records, node_args),
                failure_kind=outcome_kind(ran.records.resolved(), node_args, status),
            )
        emit(Progress(prop.id, r, "done", outcome.outcome))
        return outcome

    def _batch_verdicts(  # noqa: PLR0917 - private, one call site
        self,
        prepared: Prepared,
        group: Group,
        r: int,
        ran: _Ran,
        emit: Callable[[Progress], None],
        deadline_s: float,
    ) -> dict[str, BatchVerdict]:
        """Each member's verdict from a batch's records: its outcome, or why it runs alone."""
        manifest = prepared.statement.manifest
        by_id = {p.id: p for p in prepared.inp.properties}
        verdicts = batch_outcomes(
            ran.records,
            [
                (pid, node_arguments(by_id[pid].command, manifest.allowed_commands))
                for pid in group.ids
            ],
            ran.done.exit_code,
            PLUGIN_PATH,
            ended=ran.ended(self.policy.memory_bytes, deadline_s),
            bound_text=f"clock bound {manifest.clock_bound_ms} ms exceeded",
        )
        for pid, v in verdicts.items():
            if v.outcome is not None:
                emit(Progress(pid, r, "done", v.outcome[0]))
        return verdicts

    @staticmethod
    def _first(prepared: Prepared, group: Group) -> int:
        """The request's index of the group's first property."""
        return next(i for i, p in enumerate(prepared.inp.properties) if p.id == group.ids[0])

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


def _transport(pid: str, run_index: int, exc: SandboxError) -> TransportRecord:
    return TransportRecord(kind=exc.kind, detail=exc.detail, property_id=pid, run_index=run_index)
