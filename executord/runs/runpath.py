"""The one run path of a request: a sandbox slot, the sandbox (its run directory, container and
report stream) and what its records mean for a single run, a batch or a variant batch; any
infrastructure failure on the way is a transport record of the sandbox's properties.

The executor (``executord.runs.executor``) plans the jobs and signs the report; a ``RunPath``
runs them for one request.
"""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import structlog

from executord.errors import SandboxError, sandbox_error
from executord.runs.channel import ChannelFactory, write_targets
from executord.runs.prepared import Prepared, observed_digest
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
from executord.runs.request import PropertyRun
from executord.runs.sandboxspec import (
    BATCH_NAME,
    PLUGIN_PATH,
    VARIANTS_NAME,
    JudgeRun,
    RunPaths,
    SandboxLayout,
    run_dir_mode,
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
    SandboxPolicy,
    run_container,
)
from executord.sandbox.output import OutputCapture, printable
from patchgate.batching import Group, run_order
from patchgate.results import RunOutcome, TransportRecord
from patchgate.v1 import executor_pb2

__all__ = ["Progress", "RunPath", "RunState"]

log = structlog.get_logger("executord.runs.executor")
_DRAIN_S = 2.0  # after the container ended: how long the report stream may take to close
SUPERVISOR_MARGIN_MS = 3000  # judge on: the supervisor's deadline, before the container's
_T = TypeVar("_T")
#: Where a variant's source lies for the supervisor: (sandbox path, offset, length, batch file)
_VariantIndex = tuple[tuple[str, int, int, str], ...]


@dataclass(frozen=True)
class Progress:
    """One progress event."""

    property_id: str
    run_index: int
    phase: str
    message: str = ""


@dataclass
class RunState:
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


def _no_files(paths: RunPaths) -> _VariantIndex:
    del paths
    return ()


@dataclass(frozen=True)
class Sandbox:
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
class Ran:
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


@dataclass(frozen=True, kw_only=True)
class RunPath:
    """The runs of one prepared request, each in sandboxes of its own, gathered in ``state``."""

    prepared: Prepared
    layout: SandboxLayout  # this request's (see ``Executor._layout``)
    labels: dict[str, str]  # the executor's container labels
    runtime: ContainerRuntime
    policy: SandboxPolicy
    slots: threading.BoundedSemaphore  # the executor's ``max_parallel`` sandbox slots
    channels: ChannelFactory
    state: RunState
    emit: Callable[[Progress], None]
    cancel: threading.Event

    def alone(self, i: int, r: int, why: str) -> None:
        """One run of one property in a sandbox of its own (``why``: the batch's reason, if any)."""
        prop = self.prepared.inp.properties[i]
        if why:
            self.emit(Progress(prop.id, r, "alone", why))
        box = Sandbox(
            name=f"{i}-{r}",
            argv=prop.command,
            deadline_s=self.prepared.statement.manifest.clock_bound_ms / 1000,
            labels={"patchgate.property": prop.id, "patchgate.run": str(r)},
            judged=self.prepared.inp.judge == "on",
            batch=False,
            progress=(prop.id, r),
        )
        outcome = self._guarded(
            box,
            lambda ran: self._single_outcome(prop, r, ran),
            ids=(prop.id,),
            log_key=(i, r, 0),
            tail=self.state.tail,
        )
        with self.state.lock:
            if outcome is not None:
                self.state.results[(prop.id, r, 0)] = outcome
            if why:
                self.state.alone[(prop.id, r)] = why

    def batch(self, group: Group, r: int, tail: int) -> dict[str, str]:
        """One run of a group in one sandbox; returns the properties to re-run alone, and why.

        A transport failure of the batch itself (the engine, the image, the start) is a transport
        record of each member, as it would be of each alone; nothing is re-run then."""
        manifest = self.prepared.statement.manifest
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

        box = Sandbox(
            name=f"batch-{_slug(group.ids[0])}-{r}",
            argv=argv,
            deadline_s=bound_s * n + max(bound_s, BATCH_MARGIN_S),
            labels={
                "patchgate.property": f"batch:{group.ids[0]}"[:128],
                "patchgate.properties": str(n),
                "patchgate.run": str(r),
            },
            judged=self.prepared.inp.judge == "on",
            progress=("", r),
            said=f"batch of {n}: {group.ids[0]}, ...",
            prefix=f"batch of {n}: ",
            files=files,
        )
        verdicts = self._guarded(
            box,
            lambda ran: self._batch_verdicts(group, r, ran, box.deadline_s),
            ids=group.ids,
            log_key=(self._first(group), r, 1),
            tail=tail,
        )
        if verdicts is None:
            return {}
        with self.state.lock:
            for pid, v in verdicts.items():
                if v.outcome is not None:
                    self.state.results[(pid, r, 0)] = from_verdict(pid, r, v)
        return {pid: v.alone for pid, v in verdicts.items() if v.outcome is None}

    def variants(self, group: Group, tail: int) -> None:
        """Every variant of one group in one sandbox (run 1); a transport failure of the sandbox is
        a transport record of each member (nothing is re-run alone with variants)."""
        inp, manifest = self.prepared.inp, self.prepared.statement.manifest
        by_id = {p.id: p for p in inp.properties}
        first = self._first(group)
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

        box = Sandbox(
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

        def outcomes(ran: Ran) -> list[RunOutcome]:
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
                self.emit(Progress(o.property_id, 1, "done", f"variant {o.variant}: {o.outcome}"))
            return out

        got = self._guarded(
            box,
            outcomes,
            ids=planned_ids(plan),
            log_key=(first, 1, 1),
            tail=tail,
        )
        with self.state.lock:
            for o in got or ():
                self.state.results[(o.property_id, 1, o.variant)] = o

    # -- the one run path: a slot, a sandbox, its records, transport failures mapped once -------

    def _guarded(
        self,
        box: Sandbox,
        judge: Callable[[Ran], _T],
        *,
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
        ran: Ran | None = None
        while not self.slots.acquire(timeout=0.5):
            if self.cancel.is_set():
                exc = SandboxError("internal", "cancelled")
                break
        else:
            try:
                ran = self._sandbox(box, capture)
                got = judge(ran)
            except SandboxError as err:
                log.warning("run transport failure", sandbox=box.name, kind=err.kind)
                exc = err
            except Exception as err:
                log.exception("run failed unexpectedly", sandbox=box.name)
                exc = sandbox_error(err)
            finally:
                self.slots.release()
        r = box.progress[1]
        ms = ran.phase_ms() if ran is not None and exc is None else {}
        with self.state.lock:
            for k, v in ms.items():
                self.state.phase_ms[k] += v
            if capture.done.is_set():
                self.state.logs.append((log_key, _run_log(ids, r, capture)))
            if exc is not None:
                for pid in ids:
                    self.state.results[(pid, r, 0)] = _transport(pid, r, exc)
        return got

    def _sandbox(self, box: Sandbox, capture: OutputCapture) -> Ran:
        """One sandbox: the fixture bytes checked again, its run directory and files, the
        container and its report stream; SandboxError for a failure of the infrastructure."""
        if observed_digest(self.prepared) != self.prepared.statement.digest:
            raise SandboxError("internal", "fixture bytes changed before this run; not run")
        paths = self._run_paths(box.name)
        variants = box.files(paths)
        nonce = secrets.token_hex(16)
        spec = self._spec(
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
            self.emit(Progress(pid, r, "start", box.said))
            done = run_container(
                self.runtime, spec, self.policy, clock_bound_s=box.deadline_s, cancel=self.cancel
            )
            self.emit(Progress(pid, r, "run", f"{box.prefix}exit {done.exit_code}"))
            t0 = time.monotonic()
            records = channel.finish(_DRAIN_S)
        finally:
            channel.close()
        return Ran(done, records, t0)

    def _single_outcome(self, prop: PropertyRun, r: int, ran: Ran) -> RunOutcome:
        """A single run's outcome from its records (an OOM kill is the infrastructure's)."""
        manifest, done = self.prepared.statement.manifest, ran.done
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
        self.emit(Progress(prop.id, r, "done", outcome.outcome))
        return outcome

    def _batch_verdicts(
        self, group: Group, r: int, ran: Ran, deadline_s: float
    ) -> dict[str, BatchVerdict]:
        """Each member's verdict from a batch's records: its outcome, or why it runs alone."""
        manifest = self.prepared.statement.manifest
        by_id = {p.id: p for p in self.prepared.inp.properties}
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
                self.emit(Progress(pid, r, "done", v.outcome[0]))
        return verdicts

    def _first(self, group: Group) -> int:
        """The request's index of the group's first property."""
        return next(i for i, p in enumerate(self.prepared.inp.properties) if p.id == group.ids[0])

    def _run_paths(self, name: str) -> RunPaths:
        """The run's directories (see ``_run_dir``), with the targets file in place."""
        inp = self.prepared.inp
        judge = inp.judge == "on"
        run_dir = self.prepared.req_dir / "runs" / name
        _run_dir(run_dir, mode=run_dir_mode() if judge else 0o755)
        info = run_dir.with_name(name + "-info") if judge else None
        if info is not None:
            _run_dir(info, mode=0o755)
        paths = RunPaths(
            workspace=self.prepared.workspace_dir,
            fixtures=self.prepared.fixture_dir,
            fixture_root=inp.fixture_root,
            inside=self.prepared.inside_dir,
            run_dir=run_dir,
            info_dir=info,
        )
        targets = [(t.path, t.first_line, t.last_line, t.name) for t in inp.targets]
        if targets:
            write_targets(paths.readable, targets)
        return paths

    def _spec(
        self,
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
        inp, manifest = self.prepared.inp, self.prepared.statement.manifest
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
        return self.layout.spec(
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
