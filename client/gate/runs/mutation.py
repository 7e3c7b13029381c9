"""The mutation stage: can a property that passed fail, by its own predicate, on what the patch
wrote?

For each symbol that would earn credit, its mutants (the lines the patch wrote) and hidden
controls go in batches of variants (:func:`plan_batches`, a pure function of its inputs and a
random source) through the lanes' :class:`~client.gate.runs.execution.Scheduler`; each covering
property's outcome on a variant is a kill, a survivor, a hang or a crash (:func:`classify`). The
rules, the bound and the receipt's entry: docs/mutation.md.
"""

from __future__ import annotations

import dataclasses
import random
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client.analysis.mutation.mutants import Mutant, changed_lines, make_mutants
from client.gate.runs.execution import (
    Executes,
    Scheduler,
    default_concurrency,
    drive,
    signed_terms,
)
from client.gate.runs.kept import signed_runs_dir
from client.gate.runs.suite import SignedSuite
from client.gate.runs.targets import SymbolSite, TargetedClient, executed_by
from client.gate.settings import CheckSettings
from client.verdict.admission import covering
from client.verdict.credit import MutationResult, required_controls
from client.verdict.scoring import Findings, Mutate, MutationTerms
from client.verdict.stability import Stability
from patchgate.batching import group_properties
from patchgate.errors import RefusedError, TransportError
from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.pins import PropertyPin
from patchgate.receipt_parts import MutationRecord
from patchgate.request import Variant
from patchgate.results import RunOutcome

MAX_ATTEMPTS = 2
MIN_BOUND_MS = 1000
BOUND_FACTOR = 5


#: The stage's client: the one client Protocol of the gate.
MutantClient = Executes


@dataclass(frozen=True)
class _Variant:
    mutant: Mutant | None  # None: a control
    source: bytes
    symbol: str
    path: str
    covering: tuple[str, ...]  # the property ids that run in it and whose outcomes count


@dataclass(frozen=True)
class _Batch:
    n: int
    variants: tuple[_Variant, ...]
    props: tuple[PropertyPin, ...]  # what runs: every member of the covering ones' groups
    bound_ms: int
    attempt: int = 1
    avoid: str | None = None

    @property
    def symbols(self) -> list[str]:
        return sorted({v.symbol for v in self.variants})

    @property
    def label(self) -> str:
        return ", ".join(self.symbols)

    @property
    def covering(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(pid for v in self.variants for pid in v.covering))


@dataclass(frozen=True)
class _Part:
    """One symbol's share of a batch: some of its mutants and its full number of controls."""

    variants: tuple[_Variant, ...]
    props: tuple[PropertyPin, ...]  # what runs (the covering properties' whole groups)
    bound_ms: int

    @property
    def key(self) -> tuple[tuple[str, ...], int]:
        """Parts with equal keys run alike: the same properties, the same bound."""
        return tuple(p.id for p in self.props), self.bound_ms


@dataclass(kw_only=True)
class _Found:
    not_run: int = 0
    killed: dict[str, list[str]] = field(default_factory=dict)
    survived: dict[str, list[str]] = field(default_factory=dict)
    crashed: dict[str, list[str]] = field(default_factory=dict)
    hung: dict[str, list[str]] = field(default_factory=dict)
    controls: dict[str, int] = field(default_factory=dict)
    controls_failed: dict[str, list[str]] = field(default_factory=dict)


@dataclass(kw_only=True)
class MutationRun:
    """The stage's findings: per symbol, and the receipt's ``mutation`` entry."""

    results: dict[str, MutationResult] = field(default_factory=dict)
    record: MutationRecord = field(default_factory=MutationRecord)


#: Batches in flight per executor address (``--executor-concurrency`` sets it): the executor runs
#: them on its own sandbox slots (2 by default), so one batch's container and zygotes start while
#: another's variants run. Measured (bench/bench_mutation.py, 5 changed symbols): the stage added
#: 19 s with 1, 12 s with 2.
BATCHES_IN_FLIGHT = 2


def variant_bound_ms(clock_bound_ms: int, suite_ms: Sequence[int]) -> int:
    """min(clock bound, max(1 s, 5 x the slowest suite-run time)); 0 clock bound = none."""
    own = max(MIN_BOUND_MS, BOUND_FACTOR * max(suite_ms, default=0))
    return min(clock_bound_ms, own) if clock_bound_ms > 0 else own


def _why(o: RunOutcome) -> str:
    text = o.failure_signature.strip()
    first = text.splitlines()[0][:160] if text else ""
    return f"{o.outcome}" + (f" ({first})" if first else "")


def classify(o: RunOutcome) -> str:
    """``killed``, ``survived``, ``hung`` or ``crashed``: only the predicate's own failure kills."""
    if o.outcome == "pass":
        return "survived"
    if o.outcome == "fail" and o.failure_kind == "assertion":
        return "killed"
    if o.outcome == "exceeded_bound":
        return "hung"
    return "crashed"


def _groups_with(
    suite: Sequence[PropertyPin], covering: Sequence[str], allowed: Sequence[Sequence[str]]
) -> tuple[PropertyPin, ...]:
    """Every suite property of a command-prefix group holding a covering property, suite order."""
    by_id = {p.id: p for p in suite}
    keep: set[str] = set()
    for g in group_properties([(p.id, p.command) for p in suite], allowed):
        if set(g.ids) & set(covering):
            keep.update(g.ids)
    keep.update(c for c in covering if c in by_id)
    return tuple(p for p in suite if p.id in keep)


def _plan(site: SymbolSite, patched: Path, base: Path, k: int) -> tuple[Any, bytes | None]:
    """The symbol's mutant set (or a problem string) and its patched source."""
    try:
        path = patched / site.path
        source = None if path.is_symlink() else path.read_bytes()
    except OSError:
        source = None
    if source is None:
        return "its source is not in the patched tree", None
    try:
        old_path = base / site.path
        old = None if old_path.is_symlink() or not old_path.is_file() else old_path.read_bytes()
    except OSError:
        old = None
    made = make_mutants(source, site.qualname, changed_lines=changed_lines(old, source), cap=k)
    return made, source


#: The most variants one batch (one ``Execute``) holds: the executor's own limit.
MAX_BATCH_VARIANTS = 256
#: A symbol's mutants are split over slots that would otherwise be idle only in parts of at
#: least this many, and of at least as many as its controls: each part runs in a sandbox of its
#: own with the symbol's full number of controls, so a part smaller than those costs more
#: sandboxed runs than the idle slot gives back (two sandboxes at once run ~1.6x one's here).
MIN_PART_MUTANTS = 3


def split_parts(
    sizes: Mapping[str, int], slots: int, controls: int = 0, cap: int = MAX_BATCH_VARIANTS
) -> dict[str, int]:
    """How many batches each symbol's ``sizes[symbol]`` mutants go in: as few as hold them
    beside the symbol's ``controls`` within ``cap`` variants a batch (one, unless ``--mutants``
    is set in the hundreds), then, while there are fewer batches than ``slots`` (the batches
    the lane runs at once), one more for the symbol with the most mutants per batch, as long as
    every part keeps max(``MIN_PART_MUTANTS``, ``controls``) mutants. Every mutant still runs
    once; each part carries the symbol's full number of ``controls``, so each sandbox is checked
    by controls of its own (docs/mutation.md: "per batch"). ``ValueError`` when the controls alone
    leave no room for a mutant (the stage says so per symbol instead: ``crowded``)."""
    room = cap - controls
    if room < 1 and sizes:
        raise ValueError(f"{controls} controls leave no room for a mutant in a batch of {cap}")
    least = max(MIN_PART_MUTANTS, controls)
    parts = {s: max(1, -(-n // room)) for s, n in sizes.items()}
    while parts and sum(parts.values()) < slots:
        best = max(parts, key=lambda s: (sizes[s] / parts[s], s))
        if sizes[best] // (parts[best] + 1) < least:
            break
        parts[best] += 1
    return parts


def _mutants_in(b: _Batch) -> int:
    return sum(1 for v in b.variants if v.mutant is not None)


def pack(parts: Sequence[_Part], slots: int, cap: int = MAX_BATCH_VARIANTS) -> list[list[_Part]]:
    """The symbols' parts in batches (one sandbox each): largest first, each into a batch of its
    own while there are fewer batches than ``slots``, then into the lightest batch whose runs
    are alike (the same properties run, the same bound) with room for it (at most ``cap``
    variants), else into a new one. Fewer sandboxes, fewer starts: each starts a container and
    the roles' zygotes, ~1 s a sandbox on this kind of machine."""
    bins: list[list[_Part]] = []
    for part in sorted(parts, key=lambda p: -len(p.variants)):
        size = len(part.variants)
        fits = [b for b in bins if b[0].key == part.key
                and sum(len(q.variants) for q in b) + size <= cap]  # fmt: skip
        if len(bins) < slots or not fits:
            bins.append([part])
            continue
        min(fits, key=lambda b: sum(len(q.variants) for q in b)).append(part)
    return bins


def _deal(mutants: Sequence[Mutant], parts: int, rng: random.Random) -> list[list[Mutant]]:
    """``mutants`` dealt into ``parts`` parts, in an order drawn from ``rng``."""
    shuffled = list(mutants)
    rng.shuffle(shuffled)
    return [shuffled[i::parts] for i in range(parts)]


def _shuffled(variants: Sequence[_Variant], rng: random.Random) -> tuple[_Variant, ...]:
    """``variants`` in an order drawn from ``rng``."""
    out = list(variants)
    rng.shuffle(out)
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class MutationPlan:
    """What the stage mutates: each candidate symbol (symbol -> the properties that would credit
    it), where its code is, the suite and each property's slowest suite run (ms), at most ``k``
    mutants a symbol, and the threshold ``min_score`` (it sets the controls a batch holds)."""

    candidates: Mapping[str, Sequence[PropertyPin]]
    sites: Mapping[str, SymbolSite]
    suite: Sequence[PropertyPin]
    suite_ms: Mapping[str, int]
    k: int
    min_score: float


@dataclass(frozen=True)
class _Planned:
    """One symbol the stage runs: its file, its patched source, its covering properties, bound."""

    symbol: str
    path: str
    source: bytes
    covering: tuple[str, ...]
    bound_ms: int
    mutants: tuple[Mutant, ...]


def plan_batches(
    planned: Sequence[_Planned],
    suite: Sequence[PropertyPin],
    allowed: Sequence[Sequence[str]],
    *,
    controls: int,
    slots: int,
    rng: random.Random,
) -> tuple[list[_Batch], dict[str, int]]:
    """The batches of the planned symbols (see :func:`split_parts` and :func:`pack`) and how
    many batches each symbol's mutants went in. Each part holds some of its symbol's mutants and
    ``controls`` controls; each batch's variants are in an order drawn from ``rng``. Pure but
    for ``rng`` (the stage passes the OS's randomness)."""
    sizes = {p.symbol: len(p.mutants) for p in planned}
    parts = split_parts(sizes, slots, controls, MAX_BATCH_VARIANTS)
    units: list[_Part] = []
    for p in planned:
        props = _groups_with(suite, p.covering, allowed)
        for chunk in _deal(p.mutants, parts[p.symbol], rng):
            mine = [_Variant(m, m.source, p.symbol, p.path, p.covering) for m in chunk]
            mine += [_Variant(None, p.source, p.symbol, p.path, p.covering)] * controls
            units.append(_Part(tuple(mine), props, p.bound_ms))
    batches: list[_Batch] = []
    for group in pack(units, slots, MAX_BATCH_VARIANTS):
        variants = _shuffled([v for q in group for v in q.variants], rng)
        batch = _Batch(len(batches) + 1, variants, group[0].props, group[0].bound_ms)
        batches.append(batch)
    return batches, parts


@dataclass(kw_only=True)
class _Stage:
    """The stage in progress: the findings per symbol and the count of mutants settled."""

    signed: SignedSuite
    found: dict[str, _Found]
    total_mutants: int
    say: Callable[[str], None]
    # the signed request id names the batch, the batches and the cap, so a merge policy finds a
    # batch missing from the kept statements (client.gate.recompute)
    stage_id: str = "mutation-{n}"
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: int = 0

    def attempt(self, client: MutantClient, b: _Batch) -> ExecutionResult | None:
        """One Execute of one batch; None when it was refused (its variants are not run)."""
        suffix = "" if b.attempt == 1 else f"-rerun{b.attempt - 1}"
        request = self.signed.request(
            b.props,
            runs=1,
            request_id=f"{self.signed.request_prefix}-{self.stage_id.format(n=b.n)}{suffix}",
            isolation="run",
            variants=[Variant(v.path, v.source, v.covering) for v in b.variants],
            variant_bound_ms=b.bound_ms,
            variant_scope=b.covering,
        )
        try:
            return client.execute(request)
        except RefusedError as exc:
            self.say(f"[mutation] {b.label}: {client.address} refused ({exc.code}): {exc.reason}")
            return None
        except TransportError as exc:
            self.say(f"[mutation] {b.label}: {client.address}: transport: {exc}")
            return _no_outcome(client.address)

    def settle(self, address: str, b: _Batch, got: ExecutionResult | None) -> _Batch | None:
        """Record one batch's outcomes; return its re-run if it had no outcome at all."""
        usable = got is not None and (
            not got.outcomes or got.observed_fixture_digest == self.signed.digest
        )
        outs: dict[tuple[int, str], RunOutcome] = {}
        if got is not None and usable:
            for o in got.outcomes:
                if 1 <= o.variant <= len(b.variants) and (
                    o.property_id in b.variants[o.variant - 1].covering
                ):
                    outs.setdefault((o.variant, o.property_id), o)
        with self.lock:
            if not outs and got is not None and b.attempt < MAX_ATTEMPTS:
                self.say(f"[mutation] {b.label}: no outcome from {address}; re-running once")
                return dataclasses.replace(b, attempt=b.attempt + 1, avoid=address)
            for i, v in enumerate(b.variants, start=1):
                self._variant(v, {pid: outs.get((i, pid)) for pid in v.covering})
            for symbol in b.symbols:
                bad = sorted(self.found[symbol].controls_failed)
                n_ctl = sum(1 for v in b.variants if v.mutant is None and v.symbol == symbol)
                failed = f", FAILED for {', '.join(bad)}" if bad else ", passed"
                self.say(f"[mutation] {symbol}: {n_ctl} control(s){failed}")
        return None

    def _variant(self, v: _Variant, mine: Mapping[str, RunOutcome | None]) -> None:
        f = self.found[v.symbol]
        if all(o is None for o in mine.values()):
            if v.mutant is not None:
                f.not_run += 1
            return
        for pid, run in mine.items():
            if run is None:
                continue
            if v.mutant is None:
                f.controls[pid] = f.controls.get(pid, 0) + 1
                if run.outcome != "pass":
                    f.controls_failed.setdefault(pid, []).append(_why(run))
                continue
            kind = classify(run)
            label = v.mutant.label
            if kind in ("crashed", "hung"):
                label = f"{label}: {_why(run)}"
            getattr(f, kind).setdefault(pid, []).append(label)
        if v.mutant is not None:
            self.done += 1
            killers = sorted(p for p, r in mine.items() if r and classify(r) == "killed")
            kinds = sorted({classify(r) for r in mine.values() if r is not None})
            tag = f"killed by {', '.join(killers)}" if killers else "/".join(kinds)
            where = f"[mutation {self.done}/{self.total_mutants}] {v.symbol}"
            self.say(f"{where}: {v.mutant.label}: {tag}")


_Sets = tuple[
    dict[str, MutationResult],
    dict[str, dict[str, Any]],
    dict[str, _Found],
    dict[str, Any],
    list[_Planned],
]


def _symbol_sets(
    signed: SignedSuite, plan: MutationPlan, clock_ms: int, controls_n: int, crowded: str
) -> _Sets:
    """Each candidate's mutant set: (results of the symbols that run none, the receipt's entry
    per symbol, the findings so far of those that run, their mutant sets, their plans)."""
    results: dict[str, MutationResult] = {}
    per_symbol: dict[str, dict[str, Any]] = {}
    found: dict[str, _Found] = {}
    made_sets: dict[str, Any] = {}
    planned: list[_Planned] = []
    base = signed.base if signed.base is not None else signed.workspace
    for symbol in sorted(plan.candidates):
        site = plan.sites.get(symbol)
        if site is None:
            results[symbol] = MutationResult(problem="its source is not in the patched tree")
            per_symbol[symbol] = {"made": 0, "problem": results[symbol].problem}
            continue
        made, source = _plan(site, signed.workspace, base, plan.k)
        if isinstance(made, str) or source is None:
            results[symbol] = MutationResult(problem=str(made))
            per_symbol[symbol] = {"made": 0, "problem": str(made)}
            continue
        made_sets[symbol] = made
        info: dict[str, Any] = {
            "sites": made.sites,
            "candidates": made.candidates,
            "made": len(made.mutants),
            "skipped": made.skipped,
        }
        if made.seed is not None:
            info["seed"] = made.seed
        problem = made.problem or ("no mutant compiled" if not made.mutants else crowded)
        if problem:
            info["problem"] = problem
            per_symbol[symbol] = info
            results[symbol] = MutationResult(
                sites=made.sites,
                candidates=made.candidates,
                skipped=made.skipped,
                problem=info["problem"],
            )
            continue
        covering = tuple(p.id for p in plan.candidates[symbol])
        bound = variant_bound_ms(clock_ms, [plan.suite_ms.get(pid, 0) for pid in covering])
        info.update({"controls": controls_n, "bound_ms": bound})
        per_symbol[symbol] = info
        found[symbol] = _Found()
        planned.append(_Planned(symbol, site.path, source, covering, bound, tuple(made.mutants)))
    return results, per_symbol, found, made_sets, planned


def run_mutants(
    signed: SignedSuite,
    plan: MutationPlan,
    connect: Callable[[str], MutantClient],
    say: Callable[[str], None] = lambda _msg: None,
    concurrency: int | None = None,
) -> MutationRun:
    """Make and run the mutation batches of every candidate symbol of ``plan`` on the signed
    suite's local executors; see the module docstring."""
    t0 = time.monotonic()
    allowed, clock_ms = signed_terms(signed.envelope)
    min_score = plan.min_score
    controls_n = required_controls(min_score)
    crowded = (  # a batch would hold the controls and no mutant: the executor refuses it
        f"min_mutation_score {min_score:g} needs {controls_n} hidden controls a batch, and a "
        f"batch holds at most {MAX_BATCH_VARIANTS} variants"
        if controls_n >= MAX_BATCH_VARIANTS
        else ""
    )
    sets = _symbol_sets(signed, plan, clock_ms, controls_n, crowded)
    results, per_symbol, found, made_sets, planned = sets
    addrs = list(dict.fromkeys(signed.executors))

    # the batch slots: batches in flight per address (its executor runs them on its own slots)
    in_flight = {a: concurrency or max(BATCHES_IN_FLIGHT, default_concurrency(a)) for a in addrs}
    slots = [a for a in addrs for _ in range(in_flight[a])]
    rng = secrets.SystemRandom()
    batches, parts = plan_batches(
        planned, plan.suite, allowed, controls=controls_n, slots=len(slots), rng=rng
    )
    for p in planned:
        per_symbol[p.symbol]["controls"] = controls_n * parts[p.symbol]
        if parts[p.symbol] > 1:
            per_symbol[p.symbol]["batches"] = parts[p.symbol]
    total_variants = sum(len(b.variants) for b in batches)
    total_mutants = sum(_mutants_in(b) for b in batches)
    stage = _Stage(
        signed=signed,
        found=found,
        total_mutants=total_mutants,
        say=say,
        stage_id=f"mutation-{{n}}of{len(batches)}-k{plan.k}",
    )
    if batches and addrs:
        clients = {a: connect(a) for a in addrs}

        def step(address: str, b: _Batch) -> _Batch | None:
            return stage.settle(address, b, stage.attempt(clients[address], b))

        drive(Scheduler(batches, addrs), slots, clients, step)
    elif batches:  # no executor: every mutant is not run
        for b in batches:
            for v in b.variants:
                if v.mutant is not None:
                    found[v.symbol].not_run += 1
    for symbol, f in found.items():
        made = made_sets[symbol]
        per_symbol[symbol]["not_run"] = f.not_run
        results[symbol] = MutationResult(
            made=len(made.mutants),
            sites=made.sites,
            candidates=made.candidates,
            skipped=made.skipped,
            not_run=f.not_run,
            seed=made.seed,
            killed=_frozen(f.killed),
            survived=_frozen(f.survived),
            crashed=_frozen(f.crashed),
            hung=_frozen(f.hung),
            controls=dict(f.controls),
            controls_failed=_frozen(f.controls_failed),
        )
    record = MutationRecord(
        enabled=True,
        k=plan.k,
        min_mutation_score=min_score,
        controls_required=controls_n,
        mutants_run=total_mutants,
        variants_run=total_variants,
        elapsed_ms=int((time.monotonic() - t0) * 1000),
        symbols=dict(sorted(per_symbol.items())),
    )
    return MutationRun(results=results, record=record)


def _frozen(d: Mapping[str, list[str]]) -> dict[str, tuple[str, ...]]:
    """Per property, its labels in source order (line, then text): the batch's order is random,
    the receipt's is not."""
    return {k: tuple(sorted(v, key=_source_order)) for k, v in sorted(d.items())}


def _source_order(label: str) -> tuple[int, str]:
    at = label.find(" at line ")
    digits = label[at + 9 :].split(":", 1)[0].split(" ", 1)[0] if at >= 0 else ""
    return (int(digits) if digits.isdigit() else 0, label)


def _no_outcome(address: str) -> ExecutionResult:
    return ExecutionResult(
        address=address, lane="mutation", executor_keyid="", observed_fixture_digest="",
        outcomes=(), transport=(), timings={}, sandbox={}, envelope=None, uploaded_bytes=0,
    )  # fmt: skip


def suite_times(local: Mapping[str, Stability]) -> dict[str, int]:
    """Property -> its slowest local suite run (ms): the base of a mutant run's bound."""
    return {
        pid: max((r.duration_ms for r in stab.runs if r is not None), default=0)
        for pid, stab in local.items()
    }


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


def mutation_stage(
    s: CheckSettings,
    signed: SignedSuite,
    sites: Mapping[str, SymbolSite],
    found: Findings,
    terms: MutationTerms,
    *,
    say: Callable[[str], None],
) -> Mutate:
    """The stage as :func:`client.verdict.scoring.score_with_evidence` runs it: the candidates'
    mutants on the signed suite's executors with its judge mode (``s.executor_tls``,
    ``s.executor_concurrency``), at most ``terms.mutants`` a symbol, against ``found``'s suite
    and its local run times."""

    def connect(address: str) -> MutantClient:
        inner = ExecutorClient(
            address, tls=s.executor_tls, lane="local", executor_keyring=signed.executor_keyring
        )
        return TargetedClient(inner, (), signed.judge, keep=signed_runs_dir(s.out))

    def mutate(
        candidates: Mapping[str, Sequence[PropertyPin]],
    ) -> tuple[Mapping[str, MutationResult], MutationRecord]:
        plan = MutationPlan(
            candidates=candidates,
            sites=sites,
            suite=found.suite,
            suite_ms=suite_times(found.local),
            k=terms.mutants,
            min_score=terms.min_mutation_score,
        )
        run = run_mutants(signed, plan, connect, say, s.executor_concurrency)
        return run.results, run.record

    return mutate
