"""The mutation stage v2 (DESIGN §6 step 9): can a property that passed fail, by its own
predicate, on what the patch wrote?

For every changed symbol that would otherwise earn credit, its mutants
(:mod:`client.analysis.mutation.mutants`): sites only on the lines the patch added or changed in
the symbol's own statements, every applicable (operator, site) pair up to ``k`` (a capped sample
is drawn from the OS's randomness per check and recorded; no cap, no randomness: the same trees
always get the same mutants). They run in **batches**, one ``Execute`` (one sandbox per
command-prefix group) each: the symbols whose runs are alike share one (:func:`pack`), and with
slots to spare a symbol's mutants are dealt over several (:func:`split_parts`), every part with
its symbol's full number of controls. Per symbol:

* the variants are the mutants plus at least ``required_controls(min_mutation_score)`` controls
  (the unmutated source, served the same way), in an order drawn from the OS's randomness: the
  executor runs the batch in one sandbox per command-prefix group, a judge/subject pair per
  variant (forked by the roles' zygotes), the subject loading the variant's module from memory
  (the file on disk stays the patched one), so neither reading a file nor the order tells a
  control from a mutant;
* the properties are the suite's command-prefix groups that hold a covering property, every
  member of them, so each variant run collects the same test modules as the suite's first run;
  only the covering properties' node ids run (each variant's ``scope``), in the suite's order,
  and only their outcomes come back;
* each variant run's clock bound is min(clock bound, max(1 s, 5 x the slowest covering
  property's suite-run time)).

Per covering property and mutant: ``fail`` with failure kind ``assertion`` (its predicate failed
in the judge's own frames) is a **kill**; ``pass`` a survivor; ``exceeded_bound`` hung; anything
else (an exception marked as the subject's, any other judge exception, an exit, a crash, an
``error``) crashed — counted and listed, never a kill, never scored. A control that does not
pass voids that property's mutation evidence. A batch with no outcome at all (transport) is
re-run once, on another address when there is one; variants still without an outcome are "not
run" and counted.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from client.analysis.mutation.mutants import Mutant, changed_lines, make_mutants
from client.gate.runs.execution import default_concurrency, signed_terms
from client.gate.runs.judging import JudgeMode
from client.gate.runs.kept import signed_runs_dir
from client.gate.runs.targets import SymbolSite, TargetedClient, executed_by
from client.gate.settings import CheckSettings
from client.verdict.admission import covering
from client.verdict.credit import CreditReport, MutationResult, required_controls, score
from client.verdict.stability import Stability
from patchgate.batching import group_properties
from patchgate.envelope import Envelope
from patchgate.errors import RefusedError, TransportError
from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.keys import Keyring
from patchgate.pins import PropertyPin
from patchgate.results import RunOutcome

MAX_ATTEMPTS = 2
JUDGE_OFF = (
    "with --judge off no mutant runs (mutation v2 serves each mutant and control to the judge's "
    "subject from memory; the single-process run has no subject)"
)
MIN_BOUND_MS = 1000
BOUND_FACTOR = 5


class MutantClient(Protocol):
    """What the stage needs from an executor client (``TargetedClient`` satisfies it)."""

    address: str

    def execute(
        self,
        *,
        fixture_envelope: Envelope,
        workspace: Path,
        fixture_root: str,
        properties: Sequence[PropertyPin],
        runs: int = 2,
        request_id: str | None = None,
        targets: Sequence[tuple[str, int, int, str]] = (),
        isolation: str = "run",
        variants: Sequence[tuple[str, bytes, Sequence[str]]] = (),
        variant_bound_ms: int = 0,
        variant_scope: Sequence[str] = (),
    ) -> ExecutionResult:
        """Run a batch (each variant: path, source, the properties that run in it); refusals
        raise RefusedError, transport failures TransportError."""
        ...

    def close(self) -> None:
        """Release the channel."""
        ...


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
    record: dict[str, Any] = field(default_factory=dict)


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
    by controls of its own (DESIGN §6.9: "per batch"). ``ValueError`` when the controls alone
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


def _deal(mutants: Sequence[Mutant], parts: int) -> list[list[Mutant]]:
    """``mutants`` dealt into ``parts`` parts, in an order from the OS's randomness."""
    shuffled = list(mutants)
    secrets.SystemRandom().shuffle(shuffled)
    return [shuffled[i::parts] for i in range(parts)]


def _shuffled(variants: Sequence[_Variant]) -> tuple[_Variant, ...]:
    """``variants`` in an order from the OS's randomness."""
    out = list(variants)
    secrets.SystemRandom().shuffle(out)
    return tuple(out)


def run_mutants(  # noqa: PLR0915 - the stage's inputs; one function keeps its story
    *,
    candidates: Mapping[str, Sequence[PropertyPin]],
    sites: Mapping[str, SymbolSite],
    suite: Sequence[PropertyPin],
    suite_ms: Mapping[str, int],
    patched: Path,
    base: Path,
    k: int,
    min_score: float,
    addresses: Sequence[str],
    connect: Callable[[str], MutantClient],
    envelope: Envelope,
    expected_digest: str,
    fixture_root: str,
    say: Callable[[str], None] = lambda _msg: None,
    concurrency: int | None = None,
) -> MutationRun:
    """Make and run the mutation batches of every candidate symbol (symbol -> the properties
    that would credit it); see the module docstring."""
    t0 = time.monotonic()
    allowed, clock_ms = signed_terms(envelope)
    controls_n = required_controls(min_score)
    crowded = (  # a batch would hold the controls and no mutant: the executor refuses it
        f"min_mutation_score {min_score:g} needs {controls_n} hidden controls a batch, and a "
        f"batch holds at most {MAX_BATCH_VARIANTS} variants"
        if controls_n >= MAX_BATCH_VARIANTS
        else ""
    )
    results: dict[str, MutationResult] = {}
    per_symbol: dict[str, dict[str, Any]] = {}
    found: dict[str, _Found] = {}
    made_sets: dict[str, Any] = {}
    planned: list[tuple[str, str, bytes, tuple[str, ...], int]] = []
    batches: deque[_Batch] = deque()
    for symbol in sorted(candidates):
        site = sites.get(symbol)
        if site is None:
            results[symbol] = MutationResult(problem="its source is not in the patched tree")
            per_symbol[symbol] = {"made": 0, "problem": results[symbol].problem}
            continue
        made, source = _plan(site, patched, base, k)
        if isinstance(made, str) or source is None:
            results[symbol] = MutationResult(problem=str(made))
            per_symbol[symbol] = {"made": 0, "problem": str(made)}
            continue
        made_sets[symbol] = made
        info: dict[str, Any] = {
            "sites": made.sites, "candidates": made.candidates, "made": len(made.mutants),
            "skipped": made.skipped,
        }  # fmt: skip
        if made.seed is not None:
            info["seed"] = made.seed
        problem = made.problem or ("no mutant compiled" if not made.mutants else crowded)
        if problem:
            info["problem"] = problem
            per_symbol[symbol] = info
            results[symbol] = MutationResult(
                sites=made.sites, candidates=made.candidates, skipped=made.skipped,
                problem=info["problem"],
            )  # fmt: skip
            continue
        covering = tuple(p.id for p in candidates[symbol])
        bound = variant_bound_ms(clock_ms, [suite_ms.get(pid, 0) for pid in covering])
        info.update({"controls": controls_n, "bound_ms": bound})
        per_symbol[symbol] = info
        found[symbol] = _Found()
        planned.append((symbol, site.path, source, covering, bound))
    addrs = list(dict.fromkeys(addresses))

    # the batch slots: batches in flight per address (its executor runs them on its own slots)
    in_flight = {a: concurrency or max(BATCHES_IN_FLIGHT, default_concurrency(a)) for a in addrs}
    slots = [a for a in addrs for _ in range(in_flight[a])]
    sizes = {s: len(made_sets[s].mutants) for s, *_ in planned}
    parts = split_parts(sizes, len(slots), controls_n, MAX_BATCH_VARIANTS)
    units: list[_Part] = []
    for symbol, path, source, covering, bound in planned:
        props = _groups_with(suite, covering, allowed)
        for chunk in _deal(made_sets[symbol].mutants, parts[symbol]):
            mine = [_Variant(m, m.source, symbol, path, covering) for m in chunk]
            mine += [_Variant(None, source, symbol, path, covering) for _ in range(controls_n)]
            units.append(_Part(tuple(mine), props, bound))
        per_symbol[symbol]["controls"] = controls_n * parts[symbol]
        if parts[symbol] > 1:
            per_symbol[symbol]["batches"] = parts[symbol]
    for group in pack(units, len(slots), MAX_BATCH_VARIANTS):
        batches.append(_Batch(
            n=len(batches) + 1, variants=_shuffled([v for q in group for v in q.variants]),
            props=group[0].props, bound_ms=group[0].bound_ms,
        ))  # fmt: skip
    total_variants = sum(len(b.variants) for b in batches)
    total_mutants = sum(_mutants_in(b) for b in batches)
    # the signed request id names the batch, the batches and the cap, so a merge policy finds a
    # batch missing from the kept statements (client.gate.recompute)
    stage_id = f"{expected_digest[:12]}-mutation-{{n}}of{len(batches)}-k{k}"
    lock = threading.Condition()
    pending = [len(batches)]
    cancelled = [False]
    done = [0]
    several = len(addrs) > 1

    def take(address: str) -> _Batch | None:
        with lock:
            while True:
                if cancelled[0]:
                    return None
                for b in batches:
                    if not (several and b.avoid == address):
                        batches.remove(b)
                        return b
                if pending[0] == 0:
                    return None
                lock.wait()

    def finish(retry: _Batch | None) -> None:
        with lock:
            if retry is not None:
                batches.appendleft(retry)
            else:
                pending[0] -= 1
            lock.notify_all()

    def attempt(client: MutantClient, b: _Batch) -> ExecutionResult | None:
        suffix = "" if b.attempt == 1 else f"-rerun{b.attempt - 1}"
        try:
            return client.execute(
                fixture_envelope=envelope, workspace=patched, fixture_root=fixture_root,
                properties=list(b.props), runs=1,
                request_id=stage_id.format(n=b.n) + suffix,
                targets=(), isolation="run",
                variants=[(v.path, v.source, v.covering) for v in b.variants],
                variant_bound_ms=b.bound_ms, variant_scope=b.covering,
            )  # fmt: skip
        except RefusedError as exc:
            say(f"[mutation] {b.label}: {client.address} refused ({exc.code}): {exc.reason}")
            return None
        except TransportError as exc:
            say(f"[mutation] {b.label}: {client.address}: transport: {exc}")
            return _no_outcome(client.address)

    def settle(address: str, b: _Batch, got: ExecutionResult | None) -> _Batch | None:
        usable = got is not None and (
            not got.outcomes or got.observed_fixture_digest == expected_digest
        )
        outs: dict[tuple[int, str], RunOutcome] = {}
        if got is not None and usable:
            for o in got.outcomes:
                if 1 <= o.variant <= len(b.variants) and (
                    o.property_id in b.variants[o.variant - 1].covering
                ):
                    outs.setdefault((o.variant, o.property_id), o)
        with lock:
            if not outs and got is not None and b.attempt < MAX_ATTEMPTS:
                say(f"[mutation] {b.label}: no outcome from {address}; re-running once")
                return dataclasses.replace(b, attempt=b.attempt + 1, avoid=address)
            for i, v in enumerate(b.variants, start=1):
                f = found[v.symbol]
                mine = {pid: outs.get((i, pid)) for pid in v.covering}
                if all(o is None for o in mine.values()):
                    if v.mutant is not None:
                        f.not_run += 1
                    continue
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
                    done[0] += 1
                    killers = sorted(p for p, r in mine.items() if r and classify(r) == "killed")
                    kinds = sorted({classify(r) for r in mine.values() if r is not None})
                    tag = f"killed by {', '.join(killers)}" if killers else "/".join(kinds)
                    say(f"[mutation {done[0]}/{total_mutants}] {v.symbol}: "
                        f"{v.mutant.label}: {tag}")  # fmt: skip
            for symbol in b.symbols:
                bad = sorted(found[symbol].controls_failed)
                n_ctl = sum(1 for v in b.variants if v.mutant is None and v.symbol == symbol)
                say(f"[mutation] {symbol}: {n_ctl} control(s)" + (
                    f", FAILED for {', '.join(bad)}" if bad else ", passed"))  # fmt: skip
        return None

    if batches and addrs:
        clients = {a: connect(a) for a in addrs}

        def worker(address: str) -> None:
            while (b := take(address)) is not None:
                retry = None
                try:
                    retry = settle(address, b, attempt(clients[address], b))
                finally:
                    finish(retry)

        try:
            with ThreadPoolExecutor(max_workers=len(slots)) as pool:
                futures = [pool.submit(worker, a) for a in slots]
                try:
                    left = set(futures)
                    while left:
                        _, left = wait(left, timeout=0.5)
                    for fut in futures:
                        fut.result()
                except BaseException:
                    with lock:
                        cancelled[0] = True
                        batches.clear()
                        lock.notify_all()
                    raise
        finally:
            for c in clients.values():
                c.close()
    elif batches:  # no executor: every mutant is not run
        for b in batches:
            for v in b.variants:
                if v.mutant is not None:
                    found[v.symbol].not_run += 1
    for symbol, f in found.items():
        made = made_sets[symbol]
        per_symbol[symbol]["not_run"] = f.not_run
        results[symbol] = MutationResult(
            made=len(made.mutants), sites=made.sites, candidates=made.candidates,
            skipped=made.skipped, not_run=f.not_run, seed=made.seed,
            killed=_frozen(f.killed), survived=_frozen(f.survived), crashed=_frozen(f.crashed),
            hung=_frozen(f.hung), controls=dict(f.controls),
            controls_failed=_frozen(f.controls_failed),
        )  # fmt: skip
    record = {
        "enabled": True,
        "k": k,
        "min_mutation_score": min_score,
        "controls_required": controls_n,
        "mutants_run": total_mutants,
        "variants_run": total_variants,
        "elapsed_ms": int((time.monotonic() - t0) * 1000),
        "symbols": dict(sorted(per_symbol.items())),
    }
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
    base: Path,
    allow_unmutated: bool,
    envelope: Envelope,
    digest: str,
    fixture_root: str,
    executor_keyring: Keyring | None,
    say: Callable[[str], None],
    untrusted: Mapping[str, str] | None = None,
    judge: JudgeMode | None = None,
    min_mutation_score: float = 0.5,
) -> tuple[CreditReport, dict[str, Any]]:
    """Score with the executed rule, then (``s.mutants`` > 0) run the mutants of every symbol
    that would earn credit and score again with what they showed. A symbol in ``untrusted``
    (symbol -> why the patch's code could notice its mutation in that symbol's runs,
    :func:`client.gate.steps.introspection`) runs no mutant and gets no mutation credit, the reason
    says why; the others run as usual, and the record keeps the ``untrusted`` map.

    ``min_mutation_score``: the base configuration's threshold (credit and the controls each
    property runs). Returns the report and the receipt's ``mutation`` entry, which records the
    threshold and the controls it requires whether or not the stage ran.
    """
    threshold = {
        "min_mutation_score": min_mutation_score,
        "controls_required": required_controls(min_mutation_score),
    }
    executed = executed_map(sites, symbols, suite, local)

    def scored(mutation: Mapping[str, MutationResult] | None) -> CreditReport:
        return score(
            changed_symbols=symbols, suite=suite, assertion_classes=classes, local=local,
            remote=remote, executed=executed, mutation=mutation,
            min_mutation_score=min_mutation_score,
        )  # fmt: skip

    first = scored(None)
    if s.mutants <= 0:
        return first, {"enabled": False, "allow_unmutated": allow_unmutated, **threshold}
    by_id = {p.id: p for p in suite}
    candidates: dict[str, list[PropertyPin]] = {}
    for row in first.rows:
        if row.credit == 1 and row.property_id in by_id:
            candidates.setdefault(row.symbol, []).append(by_id[row.property_id])
    mode = judge or JudgeMode(judge=s.judge)
    distrusted = {sym: why for sym, why in (untrusted or {}).items() if sym in symbols and why}
    if mode.judge == "off":
        distrusted = {sym: JUDGE_OFF for sym in candidates} | distrusted
    for symbol in sorted(set(candidates) & set(distrusted)):
        say(f"mutation: {symbol} not run, its evidence would not be trusted: {distrusted[symbol]}")
    stopped = {
        sym: MutationResult(untrusted=distrusted[sym]) for sym in candidates if sym in distrusted
    }
    candidates = {sym: props for sym, props in candidates.items() if sym not in distrusted}
    if stopped and not candidates:
        found: dict[str, MutationResult] = {}
        record: dict[str, Any] = {"enabled": True, "k": s.mutants, **threshold, "mutants_run": 0,
                                  "elapsed_ms": 0, "symbols": {}}  # fmt: skip
    else:
        say(
            f"mutation: every mutant on the lines the patch wrote, up to {s.mutants} per symbol, "
            f"for {len(candidates)} symbol(s), with {threshold['controls_required']} hidden "
            "controls each"
        )

        def connect(address: str) -> MutantClient:
            inner = ExecutorClient(
                address, tls=s.executor_tls, lane="local", executor_keyring=executor_keyring
            )
            return TargetedClient(inner, (), mode, keep=signed_runs_dir(s.out))

        run = run_mutants(
            candidates=candidates, sites=sites, suite=suite, suite_ms=suite_times(local),
            patched=patched, base=base, k=s.mutants, min_score=min_mutation_score,
            addresses=s.executors, connect=connect, envelope=envelope, expected_digest=digest,
            fixture_root=fixture_root, say=say, concurrency=s.executor_concurrency,
        )  # fmt: skip
        found, record = dict(run.results), dict(run.record)
    found.update(stopped)
    if distrusted:
        record["untrusted"] = dict(sorted(distrusted.items()))
    # A symbol no property would credit keeps its first reason: the stage did not reach it.
    results = {symbol: found.get(symbol, MutationResult()) for symbol in symbols}
    return scored(results), record
