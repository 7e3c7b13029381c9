"""Execute: verify → materialize → run the suite twice in fresh containers → signed report.

``prepare`` refuses before any container exists (``executord.runs.prepared``); ``run`` plans the
sandboxes (one per property run, per batch or per variant batch), runs them on the one run path
(``executord.runs.runpath``: a run's infrastructure problem is its transport record, never an
exception) and signs the report. Outcomes come only from the executor's own reporter.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from executord.errors import SandboxError
from executord.runs.channel import (
    ChannelFactory,
    ReportChannel,
)
from executord.runs.environment import (
    ENV,
    EXECUTOR_ENVIRONMENT,
    Bare,
    python_path,
    sandbox_mounts,
)
from executord.runs.prepared import Prepared, cleanup, observed_digest, prepare
from executord.runs.request import ExecuteInput
from executord.runs.runpath import Progress, RunPath, RunState
from executord.runs.sandboxspec import (
    PLUGIN_PATH,
    WORKSPACE,
    SandboxLayout,
    with_reporter,
)
from executord.runs.variants import (
    variant_plan,
)
from executord.sandbox.container import (
    ContainerRuntime,
    Mount,
    SandboxPolicy,
)
from executord.sandbox.output import TAIL_BYTES
from executord.store.blobstore import BlobStore
from patchgate.batching import Group, group_properties
from patchgate.envelope import Envelope
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
    "with_reporter",
]

LOG_BUDGET = 2 << 20  # bytes of stdout+stderr tails per report, shared by its runs


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
        state = RunState(tail=min(TAIL_BYTES, LOG_BUDGET // (2 * len(inp.properties) * inp.runs)))
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
        runs = RunPath(
            prepared=prepared,
            layout=self._layout(prepared),
            labels=self.labels,
            runtime=self.runtime,
            policy=self.policy,
            slots=self._slots,
            channels=self.channels,
            state=state,
            emit=emit,
            cancel=cancel,
        )

        def one(job: tuple[Group, int]) -> None:
            group, r = job
            if inp.variants:
                if variant_plan(inp, group):
                    runs.variants(group, batch_tail)
                return
            if len(group.members) == 1:
                i = index[group.ids[0]]
                runs.alone(i, r, "")
                return
            verdicts = runs.batch(group, r, batch_tail)
            for pid, why in verdicts.items():
                runs.alone(index[pid], r, why)

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
