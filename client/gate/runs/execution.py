"""Running the admitted suite on one lane's executors, and the one scheduler the gate shares.

One Execute per property (isolation ``property``) or per chunk of command-prefix groups (``run``);
the jobs go through a :class:`Scheduler` (a queue shared by every worker of the lane, a job re-run
meant for another address skipped) that the mutation stage's batches use too. A transport-only
result is re-run once, a refusal never; an interrupted lane cancels every stream in flight. The
rules and why: docs/lanes.md, "Several executors in one lane".
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from client.gate.runs.spread import plan_chunks
from client.gate.runs.suite import SignedSuite
from patchgate.envelope import Envelope, parse_fixture_statement
from patchgate.errors import EnvelopeError, RefusedError, TransportError
from patchgate.evidence import SandboxLog
from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.keys import Keyring
from patchgate.pins import PropertyPin
from patchgate.receipt_parts import LaneSummary
from patchgate.request import ExecuteRequest
from patchgate.results import RunOutcome, TransportRecord
from patchgate.tls import ClientTLS
from patchgate.vocabulary import Isolation

__all__ = [
    "Executes",
    "LaneClient",
    "LaneResult",
    "LaneTerms",
    "Scheduler",
    "default_concurrency",
    "drive",
    "run_lane",
]

Progress = Callable[[str], None]
MAX_ATTEMPTS = 2  # the first Execute and one re-run of a transport-only result


class Executes(Protocol):
    """What the gate needs from an executor client (``ExecutorClient`` and ``TargetedClient``
    satisfy it): the lanes and the mutation stage alike."""

    address: str

    def execute(
        self, request: ExecuteRequest, on_progress: Callable[[str], None] | None = None
    ) -> ExecutionResult:
        """Run ``request``; refusals raise RefusedError, transport comes back in the result."""
        ...

    def close(self) -> None:
        """Release the channel."""
        ...


#: The lanes' name for the one client Protocol.
LaneClient = Executes

Connect = Callable[[str], LaneClient]


def default_concurrency(address: str) -> int:
    """Properties in flight per address: 2 for a ``dns:`` fleet address (round robin), else 1."""
    return 2 if address.startswith("dns:") else 1


@dataclass(kw_only=True)
class LaneResult:
    """Everything one lane returned for one suite on one fixture envelope."""

    lane: str
    outcomes: list[RunOutcome] = field(default_factory=list)
    transport: list[TransportRecord] = field(default_factory=list)  # runs left without outcome
    retried: list[TransportRecord] = field(default_factory=list)  # attempts that were re-run
    refusals: list[str] = field(default_factory=list)
    executors: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    logs: list[SandboxLog] = field(default_factory=list)  # for people: never read for outcomes

    def keyid_of(self, property_id: str) -> str:
        """The executor key id whose outcomes were kept for ``property_id`` ("" if none)."""
        for r in self.results:
            if r["property_id"] == property_id and r["outcomes"]:
                return str(r["executor_keyid"])
        return ""

    def summary(self, status_by_id: dict[str, str]) -> LaneSummary:
        """The ``lanes.<lane>`` entry of the receipt."""
        return LaneSummary(
            executors=self.executors,
            status_by_id=status_by_id,
            refusals=list(self.refusals),
            transport=len(self.transport),
            retried=len(self.retried),
            results=list(self.results),
        )


@dataclass(frozen=True)
class _Job:
    props: tuple[PropertyPin, ...]  # one property (isolation property) or a chunk of groups
    attempt: int = 1
    avoid: str | None = None  # the address whose transport failure this re-run follows

    @property
    def label(self) -> str:
        first = self.props[0].id
        return first if len(self.props) == 1 else f"{first} +{len(self.props) - 1}"


def _why(outcome: RunOutcome) -> str:
    """A failed run's reason for the progress line: the first line of its failure signature."""
    text = outcome.failure_signature.strip() if outcome.outcome != "pass" else ""
    return f" ({text.splitlines()[0][:100]})" if text else ""


def _result_entry(result: ExecutionResult, pid: str, attempt: int) -> dict[str, Any]:
    return {
        "property_id": pid,
        "attempt": attempt,
        "address": result.address,
        "executor_keyid": result.executor_keyid,
        "outcomes": {str(o.run_index): o.outcome for o in result.outcomes if o.property_id == pid},
        "transport": sorted({t.kind for t in result.transport if t.property_id == pid}),
        **({"alone": {str(r): why for p, r, why in result.alone if p == pid}} if any(
            p == pid for p, _r, _w in result.alone) else {}),
    }  # fmt: skip


def _record(
    result: ExecutionResult, lane: LaneResult, expected_digest: str, pids: Sequence[str]
) -> None:
    info = lane.executors.setdefault(
        result.address,
        {"executor_keyid": "", "executor_keyids": [], "properties": [], "uploaded_bytes": 0},
    )
    info["properties"].extend(pids)
    info["uploaded_bytes"] += result.uploaded_bytes
    if result.executor_keyid:
        info["executor_keyid"] = info["executor_keyid"] or result.executor_keyid
        if result.executor_keyid not in info["executor_keyids"]:
            info["executor_keyids"].append(result.executor_keyid)
    observed = result.observed_fixture_digest
    if result.outcomes and observed != expected_digest:
        lane.refusals.extend(
            f"{pid}: executor {result.address} observed fixture digest {observed or '(none)'}, "
            f"not the signed {expected_digest}; its outcomes are discarded"
            for pid in pids
        )
        return
    mine = set(pids)
    lane.outcomes.extend(o for o in result.outcomes if o.property_id in mine)
    lane.transport.extend(t for t in result.transport if t.property_id in mine)
    lane.logs.extend(g for g in result.logs if mine.intersection(g.properties))


def _failed(
    client: LaneClient, lane: str, props: Sequence[PropertyPin], exc: TransportError
) -> ExecutionResult:
    records = tuple(
        TransportRecord(
            kind=exc.kind, detail=exc.detail, property_id=p.id, lane=lane, address=client.address
        )
        for p in props
    )
    return ExecutionResult(
        address=client.address, lane=lane, executor_keyid="", observed_fixture_digest="",
        outcomes=(), transport=records, timings={}, sandbox={}, envelope=None, uploaded_bytes=0,
    )  # fmt: skip


class _Avoids(Protocol):
    @property
    def avoid(self) -> str | None:
        """The address whose transport failure this re-run follows (None: any address)."""
        ...


J = TypeVar("J", bound=_Avoids)


class Scheduler(Generic[J]):
    """A shared queue of jobs (a lane's properties, the mutation stage's batches); workers of one
    address skip a re-run meant for another address."""

    def __init__(self, jobs: Sequence[J], addresses: Sequence[str]) -> None:
        self._jobs: deque[J] = deque(jobs)
        self._pending = len(self._jobs)
        self._several = len(set(addresses)) > 1
        self._cond = threading.Condition()
        self._cancelled = False

    def cancel(self) -> None:
        """Start no queued job any more; ``take`` returns None from now on."""
        with self._cond:
            self._cancelled = True
            self._jobs.clear()
            self._cond.notify_all()

    def take(self, address: str) -> J | None:
        """The next job this address may run; None when every job is finished or cancelled."""
        with self._cond:
            while True:
                if self._cancelled:
                    return None
                for job in self._jobs:
                    if not (self._several and job.avoid == address):
                        self._jobs.remove(job)
                        return job
                if self._pending == 0:
                    return None
                self._cond.wait()

    def finish(self, retry: J | None = None) -> None:
        """One job is done; ``retry`` replaces it in the queue."""
        with self._cond:
            if retry is not None:
                self._jobs.appendleft(retry)
            else:
                self._pending -= 1
            self._cond.notify_all()


def _connect_default(lane: str, tls: ClientTLS | None, executor_keyring: Keyring | None) -> Connect:
    def connect(address: str) -> LaneClient:
        return ExecutorClient(address, tls=tls, lane=lane, executor_keyring=executor_keyring)

    return connect


@dataclass(frozen=True, kw_only=True)
class LaneTerms:
    """How one lane runs a suite.

    ``concurrency``: Executes in flight per address (None: :func:`default_concurrency`).
    ``connect``: makes the client of one address (default: an ``ExecutorClient``).
    ``isolation``: ``property`` — one Execute per property, each run its own sandbox; ``run`` —
    the suite cut into one chunk of whole command-prefix groups per slot
    (``client.gate.runs.spread``, by the estimated ``costs`` in ms per property id), each run of
    a group one sandbox.
    """

    runs: int = 2
    tls: ClientTLS | None = None
    concurrency: int | None = None
    connect: Connect | None = None
    isolation: Isolation = "property"
    costs: Mapping[str, float] = field(default_factory=dict)


@dataclass(kw_only=True)
class _LaneRun:
    """One lane in progress: the request, the result so far, the count of finished properties."""

    signed: SignedSuite
    lane: str
    terms: LaneTerms
    progress: Progress
    total: int
    result: LaneResult
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: int = 0

    def attempt(self, client: LaneClient, job: _Job) -> ExecutionResult | str:
        """One Execute of one property or chunk; a refusal comes back as its reason."""
        suffix = "" if job.attempt == 1 else f"-rerun{job.attempt - 1}"
        size = "" if len(job.props) == 1 else f"+{len(job.props) - 1}"
        request = self.signed.request(
            job.props,
            runs=self.terms.runs,
            request_id=f"{self.signed.request_prefix}-{self.lane}-{job.props[0].id}{size}{suffix}",
            isolation=self.terms.isolation,
        )
        try:
            return client.execute(request, lambda msg: self.progress(f"{job.label}: {msg}"))
        except RefusedError as exc:
            return f"executor {client.address} refused ({exc.code}): {exc.reason}"
        except TransportError as exc:  # the client returns these; a raise is handled the same way
            return _failed(client, self.lane, job.props, exc)

    def settle(self, address: str, job: _Job, got: ExecutionResult | str) -> _Job | None:
        """Record one attempt; return the re-run job if there is to be one."""
        with self.lock:
            return self._settle(address, job, got)

    def _say(self, text: str) -> None:
        self.progress(f"[{self.lane} {self.done}/{self.total}] {text}")

    def _settle(self, address: str, job: _Job, got: ExecutionResult | str) -> _Job | None:
        """Per property of the job: its outcomes, or — transport only, first attempt — a re-run."""
        if isinstance(got, str):
            for p in job.props:
                self.result.refusals.append(f"{p.id}: {got}")
                self.done += 1
                self._say(f"{p.id} on {address}: refused")
            return None
        again: list[PropertyPin] = []
        kept: list[str] = []
        for p in job.props:
            where = f"{p.id} on {address}"
            entry = _result_entry(got, p.id, job.attempt)
            self.result.results.append(entry)
            mine = [t for t in got.transport if t.property_id == p.id]
            has_outcome = any(o.property_id == p.id for o in got.outcomes)
            if not has_outcome and mine and job.attempt < MAX_ATTEMPTS:
                self.result.retried.extend(mine)
                self._say(f"{where}: transport {', '.join(entry['transport'])}; re-running once")
                again.append(p)
                continue
            kept.append(p.id)
            self.done += 1
            runs_tag = ", ".join(
                f"run {o.run_index} {o.outcome}{_why(o)}"
                for o in sorted(got.outcomes, key=lambda o: o.run_index)
                if o.property_id == p.id
            )
            tag = runs_tag or f"transport {', '.join(entry['transport']) or 'none'}"
            keyid = f" (key {got.executor_keyid[:12]})" if got.executor_keyid else ""
            self._say(f"{where}{keyid}: {tag}")
        if kept:
            _record(got, self.result, self.signed.digest, kept)
        return _Job(tuple(again), job.attempt + 1, avoid=address) if again else None


def signed_terms(envelope: Envelope | None) -> tuple[tuple[tuple[str, ...], ...], int]:
    """The signed allowed commands (to find each command's prefix) and clock bound; none and 0
    when there is no readable envelope."""
    if envelope is None:
        return (), 0
    try:
        m = parse_fixture_statement(envelope.payload)[0]
    except (EnvelopeError, ValueError, KeyError, TypeError):
        return (), 0
    return m.allowed_commands, m.clock_bound_ms


def run_lane(
    signed: SignedSuite,
    lane: str,
    addresses: Sequence[str],
    suite: Sequence[PropertyPin],
    terms: LaneTerms,
    *,
    progress: Progress = lambda _msg: None,
) -> LaneResult:
    """Run every property of ``suite`` ``terms.runs`` times on the executors of one lane, at
    ``addresses`` (see :class:`LaneTerms` and the module docstring)."""
    addresses = list(dict.fromkeys(addresses))  # one entry per address
    run = _LaneRun(
        signed=signed,
        lane=lane,
        terms=terms,
        progress=progress,
        total=len(suite),
        result=LaneResult(lane=lane),
    )
    if not addresses or not suite:
        return run.result
    connect = terms.connect or _connect_default(lane, terms.tls, signed.executor_keyring)
    clients = {a: connect(a) for a in addresses}
    slots = [a for a in addresses for _ in range(terms.concurrency or default_concurrency(a))]
    if terms.isolation == "property":
        jobs = [_Job((p,)) for p in suite]
    else:
        chunks = plan_chunks(suite, signed_terms(signed.envelope)[0], len(slots), terms.costs)
        jobs = [_Job(tuple(c)) for c in chunks]

    def step(address: str, job: _Job) -> _Job | None:
        return run.settle(address, job, run.attempt(clients[address], job))

    drive(Scheduler(jobs, addresses), slots, clients, step)
    return run.result


def drive(
    sched: Scheduler[J],
    slots: Sequence[str],
    clients: Mapping[str, Executes],
    step: Callable[[str, J], J | None],
) -> None:
    """Run ``sched``'s jobs, one worker thread per slot (an address, once per job in flight
    there): each takes a job its address may run and ``step`` returns the job's re-run or None.
    Every client is closed at the end. Interrupted (see the module docstring): no queued job
    starts any more, every client is closed at once (which cancels the streams in flight), the
    workers return and the exception goes on up."""

    def worker(address: str) -> None:
        while (job := sched.take(address)) is not None:
            retry = None
            try:
                retry = step(address, job)
            finally:
                sched.finish(retry)  # even on an unexpected error: no worker waits forever

    try:
        with ThreadPoolExecutor(max_workers=len(slots)) as pool:
            futures: list[Future[None]] = []
            try:  # the submits too: an interrupt while a worker starts must cancel, not wait
                futures.extend(pool.submit(worker, a) for a in slots)
                pending = set(futures)
                while pending:  # a timed wait: a signal's handler runs within half a second
                    _, pending = wait(pending, timeout=0.5)
                for f in futures:
                    f.result()
            except BaseException:  # interrupted: cancel, let the workers return, re-raise
                sched.cancel()
                for c in clients.values():
                    c.close()  # cancels every stream in flight on this channel
                raise
    finally:
        for c in clients.values():
            c.close()
