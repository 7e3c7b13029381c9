"""The mutation stage: can a property that passed fail on the changed code?

For every changed symbol that would otherwise earn credit, up to ``k`` mutants of the PATCHED
symbol's source (:mod:`client.analysis.mutation.mutants`, chosen from the patch sha and the symbol).
Each mutant runs once with only the properties that would credit the symbol, in one ``Execute`` on
the same signed fixture envelope:

* its workspace is the patched tree with that one file replaced — a hard-linked copy of the
  patched tree in which the mutated file is a new file (never written through a link), so the
  client uploads one new blob and the executor reuses every other blob it already holds;
* ``runs=1``, ``isolation=run``: properties sharing a command prefix run in one fresh sandbox;
* a property **kills** the mutant when its run is ``fail``, ``error`` or ``exceeded_bound`` *and*
  executed the mutated symbol (the Execute sends the symbol's range in the mutant file as its one
  target; ``module:`` code is not traced, as in the suite): a run that failed before it reached
  the symbol — an import-time guard of the patch that notices its own mutation, say — is no kill.
  A ``pass`` lets the mutant survive; a run with no outcome (transport) is no kill: the mutant
  is re-run once (on another address when there is one), else it is "not run" and counted. A
  refusal, or outcomes signed for another fixture digest, is "not run" too.

Mutants run concurrently across the executors like the suite (the same slots per address). One
progress line per mutant goes to ``say``. The findings per symbol are a
:class:`client.verdict.credit.MutationResult`; the receipt's ``mutation`` entry says whether the
stage ran, with ``k``, and per symbol how many mutants were made, skipped and not run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from client.analysis.mutation.mutants import Mutant, make_mutants
from client.gate.runs.execution import default_concurrency
from client.gate.runs.judging import JudgeMode
from client.gate.runs.targets import SymbolSite, TargetedClient, executed_by
from client.gate.settings import CheckSettings
from client.verdict.admission import covering
from client.verdict.credit import CreditReport, MutationResult, score
from client.verdict.stability import Stability
from patchgate.envelope import Envelope
from patchgate.errors import RefusedError, TransportError
from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.keys import Keyring
from patchgate.pins import PropertyPin

__all__ = [
    "KILLS", "MutantClient", "MutationRun", "executed_map", "mutant_tree", "run_mutants",
    "score_with_evidence",
]  # fmt: skip

KILLS = ("fail", "error", "exceeded_bound")
MAX_ATTEMPTS = 2


class MutantClient(Protocol):
    """What the stage needs from an executor client (``ExecutorClient`` satisfies it)."""

    address: str

    def execute(
        self,
        *,
        fixture_envelope: Envelope,
        workspace: Path,
        fixture_root: str,
        properties: Sequence[PropertyPin],
        runs: int = 2,
        on_progress: Callable[[str], None] | None = None,
        request_id: str | None = None,
        targets: Sequence[tuple[str, int, int, str]] = (),
        isolation: str = "run",
    ) -> ExecutionResult:
        """Run ``properties``; refusals raise RefusedError."""
        ...

    def close(self) -> None:
        """Release the channel."""
        ...


@dataclass(frozen=True)
class _Job:
    n: int
    symbol: str
    mutant: Mutant
    props: tuple[PropertyPin, ...]
    target: tuple[str, int, int, str] | None  # the symbol in the mutant file (None: module code)
    attempt: int = 1
    avoid: str | None = None


@dataclass(kw_only=True)
class MutationRun:
    """The stage's findings: per symbol, and the receipt's ``mutation`` entry."""

    results: dict[str, MutationResult] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)


@contextmanager
def mutant_tree(patched: Path, rel: str, source: bytes) -> Iterator[Path]:
    """A copy of ``patched`` (hard links where the file system allows) with ``rel`` replaced by
    ``source`` as a new file; removed on exit. The patched tree is never written."""
    top = Path(tempfile.mkdtemp(prefix="patchgate-mutant-", dir=patched.parent))
    root = top / "tree"
    try:

        def link(src: str, dst: str) -> None:
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)

        shutil.copytree(patched, root, symlinks=True, copy_function=link)
        target = root / rel
        target.unlink()  # a new inode: writing must not follow the link into the patched tree
        target.write_bytes(source)
        yield root
    finally:
        shutil.rmtree(top, ignore_errors=True)


@dataclass(kw_only=True)
class _Tally:
    made: dict[str, int] = field(default_factory=dict)
    not_run: dict[str, int] = field(default_factory=dict)
    ran: dict[str, dict[str, int]] = field(default_factory=dict)
    killed: dict[str, dict[str, int]] = field(default_factory=dict)
    survivors: dict[str, dict[str, list[str]]] = field(default_factory=dict)


def run_mutants(  # noqa: PLR0915 - the stage's inputs; one function keeps its story
    *,
    candidates: Mapping[str, Sequence[PropertyPin]],
    sites: Mapping[str, SymbolSite],
    patched: Path,
    k: int,
    patch_sha256: str,
    addresses: Sequence[str],
    connect: Callable[[str], MutantClient],
    envelope: Envelope,
    expected_digest: str,
    fixture_root: str,
    say: Callable[[str], None] = lambda _msg: None,
    concurrency: int | None = None,
) -> MutationRun:
    """Make and run the mutants of every candidate symbol (symbol -> properties that would
    credit it); see the module docstring."""
    t0 = time.monotonic()
    results: dict[str, MutationResult] = {}
    per_symbol: dict[str, dict[str, Any]] = {}
    jobs: deque[_Job] = deque()
    for symbol in sorted(candidates):
        site = sites.get(symbol)
        source = None
        if site is not None:
            try:
                path = patched / site.path
                source = None if path.is_symlink() else path.read_bytes()
            except OSError:
                source = None
        if site is None or source is None:
            results[symbol] = MutationResult(problem="its source is not in the patched tree")
            per_symbol[symbol] = {"made": 0, "skipped": 0, "problem": results[symbol].problem}
            continue
        made = make_mutants(source, site.qualname, k=k, seed=f"{patch_sha256}:{symbol}")
        per_symbol[symbol] = {"made": len(made.mutants), "skipped": made.skipped}
        if made.problem:
            per_symbol[symbol]["problem"] = made.problem
            results[symbol] = MutationResult(skipped=made.skipped, problem=made.problem)
            continue
        props = tuple(candidates[symbol])
        for m in made.mutants:
            last = site.last + m.source.count(b"\n") - source.count(b"\n")
            target = None if site.is_module else (site.path, site.first, last, symbol)
            jobs.append(_Job(len(jobs) + 1, symbol, m, props, target))
    tally = _Tally()
    total = len(jobs)
    lock = threading.Lock()
    cond = threading.Condition(lock)
    pending = [total]
    done = [0]
    cancelled = [False]
    addrs = list(dict.fromkeys(addresses))
    several = len(addrs) > 1

    def take(address: str) -> _Job | None:
        with cond:
            while True:
                if cancelled[0]:
                    return None
                for job in jobs:
                    if not (several and job.avoid == address):
                        jobs.remove(job)
                        return job
                if pending[0] == 0:
                    return None
                cond.wait()

    def finish(retry: _Job | None) -> None:
        with cond:
            if retry is not None:
                jobs.appendleft(retry)
            else:
                pending[0] -= 1
            cond.notify_all()

    def attempt(client: MutantClient, job: _Job) -> ExecutionResult | None:
        """One Execute of one mutant; None for a refusal (nothing ran, not re-run)."""
        suffix = "" if job.attempt == 1 else f"-rerun{job.attempt - 1}"
        site = sites[job.symbol]
        try:
            with mutant_tree(patched, site.path, job.mutant.source) as tree:
                return client.execute(
                    fixture_envelope=envelope,
                    workspace=tree,
                    fixture_root=fixture_root,
                    properties=list(job.props),
                    runs=1,
                    request_id=f"{expected_digest[:12]}-mutant-{job.n}{suffix}",
                    targets=(job.target,) if job.target else (),
                    isolation="run",
                )
        except RefusedError as exc:
            say(f"[mutation] mutant {job.n}: {client.address} refused ({exc.code}): {exc.reason}")
            return None
        except TransportError:
            return _no_outcome(client.address)

    def settle(address: str, job: _Job, got: ExecutionResult | None) -> _Job | None:
        outcomes: dict[str, str] = {}
        if got is not None and (not got.outcomes or got.observed_fixture_digest == expected_digest):
            outcomes = {
                o.property_id: (
                    o.outcome
                    if o.outcome not in KILLS or job.target is None or job.symbol in o.executed
                    else "failed without executing it"
                )
                for o in got.outcomes
                if o.run_index == 1
            }
        missing = tuple(p for p in job.props if p.id not in outcomes)
        with lock:
            for pid, outcome in outcomes.items():
                if pid not in {p.id for p in job.props}:
                    continue
                tally.ran.setdefault(job.symbol, {}).setdefault(pid, 0)
                tally.ran[job.symbol][pid] += 1
                if outcome in KILLS:
                    tally.killed.setdefault(job.symbol, {}).setdefault(pid, 0)
                    tally.killed[job.symbol][pid] += 1
                else:
                    tally.survivors.setdefault(job.symbol, {}).setdefault(pid, [])
                    tally.survivors[job.symbol][pid].append(job.mutant.label)
            if missing and got is not None and job.attempt < MAX_ATTEMPTS:
                say(f"[mutation] mutant {job.n} {job.mutant.label}: no outcome; re-running once")
                return _Job(
                    job.n, job.symbol, job.mutant, missing, job.target, job.attempt + 1, address
                )
            if not outcomes:
                tally.not_run[job.symbol] = tally.not_run.get(job.symbol, 0) + 1
            done[0] += 1
            killers = sorted(p for p, o in outcomes.items() if o in KILLS)
            tag = (
                f"killed by {', '.join(killers)}"
                if killers
                else ("survived" if outcomes else "not run")
            )
            say(f"[mutation {done[0]}/{total}] {job.symbol}: {job.mutant.label}: {tag}")
        return None

    if jobs and addrs:
        clients = {a: connect(a) for a in addrs}

        def worker(address: str) -> None:
            while (job := take(address)) is not None:
                retry = None
                try:
                    retry = settle(address, job, attempt(clients[address], job))
                finally:
                    finish(retry)

        slots = [a for a in addrs for _ in range(concurrency or default_concurrency(a))]
        try:
            with ThreadPoolExecutor(max_workers=len(slots)) as pool:
                futures = [pool.submit(worker, a) for a in slots]
                try:
                    left = set(futures)
                    while left:
                        _, left = wait(left, timeout=0.5)
                    for f in futures:
                        f.result()
                except BaseException:
                    with cond:
                        cancelled[0] = True
                        jobs.clear()
                        cond.notify_all()
                    for c in clients.values():
                        c.close()
                    raise
        finally:
            for c in clients.values():
                c.close()
    elif jobs:  # no executor: every mutant is not run
        for job in jobs:
            tally.not_run[job.symbol] = tally.not_run.get(job.symbol, 0) + 1
    for symbol, info in per_symbol.items():
        if symbol in results:
            continue
        info["not_run"] = tally.not_run.get(symbol, 0)
        results[symbol] = MutationResult(
            made=info["made"],
            skipped=info["skipped"],
            not_run=info["not_run"],
            ran=dict(tally.ran.get(symbol, {})),
            killed=dict(tally.killed.get(symbol, {})),
            survivors={p: tuple(v) for p, v in tally.survivors.get(symbol, {}).items()},
        )
    record = {
        "enabled": True,
        "k": k,
        "mutants_run": total,
        "elapsed_ms": int((time.monotonic() - t0) * 1000),
        "symbols": dict(sorted(per_symbol.items())),
    }
    return MutationRun(results=results, record=record)


def _no_outcome(address: str) -> ExecutionResult:
    return ExecutionResult(
        address=address, lane="mutation", executor_keyid="", observed_fixture_digest="",
        outcomes=(), transport=(), timings={}, sandbox={}, envelope=None, uploaded_bytes=0,
    )  # fmt: skip


def executed_map(
    sites: Mapping[str, SymbolSite],
    symbols: Sequence[str],
    suite: Sequence[PropertyPin],
    local: Mapping[str, Stability],
) -> dict[str, dict[str, bool]]:
    """Symbol -> covering property -> whether every local run executed the symbol."""
    out: dict[str, dict[str, bool]] = {}
    for symbol in symbols:
        for prop in suite:
            if covering(prop, [symbol]):
                stab = local.get(prop.id)
                runs = stab.runs if stab is not None else ()
                out.setdefault(symbol, {})[prop.id] = executed_by(sites, symbol, runs)
    return out


def score_with_evidence(
    s: CheckSettings,
    *,
    symbols: Sequence[str],
    suite: Sequence[PropertyPin],
    classes: Mapping[str, str],
    local: Mapping[str, Stability],
    remote: Mapping[str, Stability],
    sites: Mapping[str, SymbolSite],
    patched: Path,
    allow_unmutated: bool,
    envelope: Envelope,
    digest: str,
    fixture_root: str,
    executor_keyring: Keyring | None,
    patch_sha256: str,
    say: Callable[[str], None],
    untrusted: Mapping[str, str] | None = None,
    judge: JudgeMode | None = None,
) -> tuple[CreditReport, dict[str, Any]]:
    """Score with the executed rule, then (``s.mutants`` > 0) run the mutants of every symbol
    that would earn credit and score again with what they showed. A symbol in ``untrusted``
    (symbol -> why the patch's code could notice its mutation in that symbol's runs,
    :func:`client.gate.steps.introspection`) runs no mutant and gets no mutation credit, the reason
    says why; the others run as usual, and the record keeps the ``untrusted`` map.

    Returns the report and the receipt's ``mutation`` entry.
    """
    executed = executed_map(sites, symbols, suite, local)

    def scored(mutation: Mapping[str, MutationResult] | None) -> CreditReport:
        return score(
            changed_symbols=symbols, suite=suite, assertion_classes=classes, local=local,
            remote=remote, executed=executed, mutation=mutation,
        )  # fmt: skip

    first = scored(None)
    if s.mutants <= 0:
        return first, {"enabled": False, "allow_unmutated": allow_unmutated}
    by_id = {p.id: p for p in suite}
    candidates: dict[str, list[PropertyPin]] = {}
    for row in first.rows:
        if row.credit == 1 and row.property_id in by_id:
            candidates.setdefault(row.symbol, []).append(by_id[row.property_id])
    distrusted = {sym: why for sym, why in (untrusted or {}).items() if sym in symbols and why}
    for symbol in sorted(set(candidates) & set(distrusted)):
        say(f"mutation: {symbol} not run, its evidence would not be trusted: {distrusted[symbol]}")
    stopped = {
        sym: MutationResult(untrusted=distrusted[sym]) for sym in candidates if sym in distrusted
    }
    candidates = {sym: props for sym, props in candidates.items() if sym not in distrusted}
    if stopped and not candidates:
        found: dict[str, MutationResult] = {}
        record: dict[str, Any] = {"enabled": True, "k": s.mutants, "mutants_run": 0,
                                  "elapsed_ms": 0, "symbols": {}}  # fmt: skip
    else:
        say(f"mutation: up to {s.mutants} mutants for each of {len(candidates)} symbol(s)")

        mode = judge or JudgeMode(judge=s.judge)

        def connect(address: str) -> MutantClient:
            inner = ExecutorClient(
                address, tls=s.executor_tls, lane="local", executor_keyring=executor_keyring
            )
            return TargetedClient(inner, (), mode)

        run = run_mutants(
            candidates=candidates, sites=sites, patched=patched, k=s.mutants,
            patch_sha256=patch_sha256, addresses=s.executors, connect=connect, envelope=envelope,
            expected_digest=digest, fixture_root=fixture_root, say=say,
            concurrency=s.executor_concurrency,
        )  # fmt: skip
        found, record = dict(run.results), dict(run.record)
    found.update(stopped)
    if distrusted:
        record["untrusted"] = dict(sorted(distrusted.items()))
    # A symbol no property would credit keeps its first reason: the stage did not reach it.
    results = {symbol: found.get(symbol, MutationResult()) for symbol in symbols}
    return scored(results), record
