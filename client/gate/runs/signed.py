"""A check's executor-signed run results read back (issue 43): verified, bound, scored.

:func:`signed_run` verifies one kept envelope (:mod:`client.gate.runs.kept`) by an executor key
of a keyring and checks what it binds against :class:`Bound`, what this check would send: the
fixture digest, the environment, the judge mode, the workspace tree (base and patch), each
property's pinned argv, the code targets, the judge's source roots and production names.
:func:`suite_outcomes`, :func:`stage_k` and :func:`mutation_results` turn the statements that hold
into the suite's outcomes and each changed symbol's mutation result, naming every statement or
variant that is extra and every run or mutant that is missing. :mod:`client.gate.recompute` uses
them to re-derive a verdict.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client.analysis.mutation.mutants import MutantSet, changed_lines, make_mutants
from client.gate.runs.mutation import classify
from client.gate.runs.targets import SymbolSite
from client.gate.workspace import Workspace
from client.verdict.credit import MutationResult
from patchgate.envelope import Envelope
from patchgate.errors import EnvelopeError
from patchgate.keys import Keyring
from patchgate.report import verify_result
from patchgate.results import RunOutcome

__all__ = ["Bound", "SignedRun", "mutation_results", "signed_run", "stage_k", "suite_outcomes"]


@dataclass(frozen=True)
class SignedRun:
    """One verified, bound run result: its file, its outcomes (symbol names restored), its
    variants as signed (path, source sha256, scope)."""

    name: str
    outcomes: tuple[RunOutcome, ...]
    variants: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    request_id: str = ""


@dataclass(frozen=True, kw_only=True)
class Bound:
    """What every kept statement must bind."""

    fixture_digest: str
    environment: str
    judge: str
    workspace: str
    names: Mapping[str, str]  # wire name -> symbol name (``executed``)
    commands: Mapping[str, tuple[str, ...]]  # property id -> its pinned argv
    targets: list[list[Any]]  # what a suite run's targets must be (a mutation batch: none)
    judge_roots: list[str]
    production: list[str]


_BATCH = re.compile(r"-mutation-(\d+)of(\d+)-k(\d+)(?:-rerun\d+)?$")


def stage_k(batches: Sequence[SignedRun], receipt_k: int, problems: list[str]) -> int:
    """The mutation cap the signed batches name (the receipt's when no batch ran); every batch
    ``i of N`` must be kept, and the receipt's ``k`` must be the signed one."""
    places = {}
    for run in batches:
        m = _BATCH.search(run.request_id)
        if m is None:
            problems.append(
                f"mis-bound: {run.name}: a mutation batch without its place in the stage"
            )
            continue
        places[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    if not places:
        return receipt_k
    shapes = set(places.values())
    if len(shapes) != 1:
        problems.append(f"mis-bound: the mutation batches name different stages: {sorted(shapes)}")
    total, k = min(shapes)
    problems.extend(
        f"missing: mutation batch {n} of {total} has no signed result"
        for n in range(1, total + 1)
        if n not in places
    )
    if k != receipt_k:
        problems.append(f"receipt mutation.k: says {receipt_k}, the signed batches ran {k}")
    return k


def signed_run(path: Path, keyring: Keyring, bound: Bound, problems: list[str]) -> SignedRun | None:
    """The statement of ``path`` when it verifies by an executor key and binds ``bound``."""
    name = path.name
    try:
        env = Envelope.from_json(json.loads(path.read_text(encoding="utf-8")))
        verified = verify_result(env, keyring)
    except (OSError, ValueError, EnvelopeError) as exc:
        problems.append(f"unsigned: {name}: {exc}")
        return None
    report, binding = verified.report, verified.binding
    wrong = []
    if verified.subject_digest != bound.fixture_digest:
        wrong.append(
            f"fixture digest {verified.subject_digest[:16]}, not {bound.fixture_digest[:16]}"
        )
    if report.environment != bound.environment:
        wrong.append(f"environment {report.environment[:16]!r}, not {bound.environment[:16]!r}")
    if (report.judge or "off") != bound.judge:
        wrong.append(f"judge {report.judge or 'off'}, not {bound.judge}")
    try:
        wrong += _request_problems(binding, bound)
    except (TypeError, IndexError, KeyError, ValueError) as exc:
        problems.append(f"unsigned: {name}: malformed binding: {exc!r}")
        return None
    tree = str(binding.get("workspace_digest", ""))
    if tree != bound.workspace:
        here = bound.workspace[:16]
        wrong.append(f"ran on tree {tree[:16] or '(unbound)'}, not this base and patch ({here})")
    if wrong:
        problems.append(f"mis-bound: {name}: {'; '.join(wrong)}")
        return None
    try:
        outcomes = tuple(
            dataclasses.replace(
                RunOutcome.from_proto(o),
                executed=tuple(sorted({bound.names[e] for e in o.executed if e in bound.names})),
            )
            for o in report.outcomes
        )
        variants = tuple(
            (str(v["path"]), str(v["sha256"]), tuple(str(s) for s in v.get("scope", ())))
            for v in binding.get("variants", ())
        )
    except (ValueError, KeyError, TypeError) as exc:
        problems.append(f"unsigned: {name}: malformed statement: {exc}")
        return None
    return SignedRun(name, outcomes, variants, report.request_id)


def _request_problems(binding: Mapping[str, Any], bound: Bound) -> list[str]:
    """How the signed request differs from the one this check makes: a property's argv, the code
    targets, the judge's source roots and production names ("unbound" from an older executor)."""
    if "properties" not in binding:
        return ["the request is unbound (an executor older than issue 43)"]
    wrong = []
    for item in binding.get("properties", []):
        pid, argv = str(item[0]), tuple(str(a) for a in item[1])
        if bound.commands.get(pid) != argv:
            wrong.append(f"property {pid} ran {list(argv)}, not its pinned command")
    wanted = [] if binding.get("variants") else bound.targets
    if binding.get("targets") != wanted:
        wrong.append("the code targets differ from this patch's changed symbols")
    if (binding.get("source_roots"), binding.get("production")) != (
        bound.judge_roots,
        bound.production,
    ):
        wrong.append("the judge's source roots or production names differ")
    return wrong


def suite_outcomes(
    runs: Sequence[SignedRun], suite: set[str], problems: list[str]
) -> list[RunOutcome]:
    """The suite's outcomes; a property outside the suite or a run reported twice is extra."""
    seen: dict[tuple[str, int], str] = {}
    kept: list[RunOutcome] = []
    for run in runs:
        for o in run.outcomes:
            key = (o.property_id, o.run_index)
            if o.property_id not in suite:
                problems.append(f"extra: {run.name}: {o.property_id} is not in the admitted suite")
            elif key in seen:
                problems.append(
                    f"extra: {run.name}: {o.property_id} run {o.run_index} also in {seen[key]}"
                )
            else:
                seen[key] = run.name
                kept.append(o)
    return kept


@dataclass
class _Tally:
    made: MutantSet
    path: str
    control: str  # sha256 of the patched file: what a control variant serves
    labels: dict[str, str]  # source sha256 -> label
    seen: set[str] = field(default_factory=set)
    buckets: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    controls: dict[str, int] = field(default_factory=dict)
    controls_failed: dict[str, list[str]] = field(default_factory=dict)

    def put(self, kind: str, pid: str, label: str) -> None:
        self.buckets.setdefault(kind, {}).setdefault(pid, []).append(label)


def _expected(site: SymbolSite, ws: Workspace, k: int, seed: int | None) -> _Tally | None:
    """The symbol's mutant sample as the check drew it (``seed``: the receipt's, when capped)."""
    try:
        source = (ws.patched_dir / site.path).read_bytes()
        old_path = ws.base_dir / site.path
        old = old_path.read_bytes() if old_path.is_file() else None
    except OSError:
        return None
    made = make_mutants(
        source, site.qualname, changed_lines=changed_lines(old, source), cap=k, seed=seed
    )
    labels = {hashlib.sha256(m.source).hexdigest(): m.label for m in made.mutants}
    return _Tally(made, site.path, hashlib.sha256(source).hexdigest(), labels)


def mutation_results(
    *,
    candidates: Mapping[str, Sequence[str]],
    sites: Mapping[str, SymbolSite],
    ws: Workspace,
    k: int,
    seeds: Mapping[str, Any],
    runs: Sequence[SignedRun],
    problems: list[str],
) -> dict[str, MutationResult]:
    """Each candidate symbol's mutation result from the signed variant runs."""
    tallies: dict[str, _Tally] = {}
    results: dict[str, MutationResult] = {}
    for symbol in sorted(candidates):
        site = sites.get(symbol)
        info = seeds.get(symbol, {}) if isinstance(seeds.get(symbol), dict) else {}
        seed = info.get("seed")
        tally = (
            None
            if site is None
            else _expected(site, ws, k, seed if isinstance(seed, int) else None)
        )
        if tally is None or not tally.made.mutants:
            why = tally.made.problem if tally else "its source is not in the patched tree"
            results[symbol] = MutationResult(problem=why or "no mutant compiled")
            continue
        tallies[symbol] = tally
    owner = {sha: sym for sym, t in tallies.items() for sha in t.labels}
    for run in runs:
        in_batch = {owner[sha] for _p, sha, _s in run.variants if sha in owner}
        for i, (path, sha, scope) in enumerate(run.variants, start=1):
            outs = {
                o.property_id: o for o in run.outcomes if o.variant == i and o.property_id in scope
            }
            if sha in owner:
                _mutant_outcomes(tallies[owner[sha]], sha, outs, candidates[owner[sha]])
                continue
            controlled = [
                s
                for s in sorted(in_batch)
                if (tallies[s].path, tallies[s].control, tuple(candidates[s])) == (path, sha, scope)
            ]
            if not controlled:
                problems.append(
                    f"extra: {run.name}: variant {i} ({path}) is neither a sampled mutant of a "
                    "changed symbol nor its control"
                )
            for symbol in controlled:
                t = tallies[symbol]
                for pid, o in outs.items():
                    t.controls[pid] = t.controls.get(pid, 0) + 1
                    if o.outcome != "pass":
                        t.controls_failed.setdefault(pid, []).append(o.outcome)
    for symbol, t in tallies.items():
        missing = [label for sha, label in t.labels.items() if sha not in t.seen]
        problems.extend(f"missing: no signed outcome of mutant '{m}' of {symbol}" for m in missing)
        frozen = {kind: {p: tuple(v) for p, v in by.items()} for kind, by in t.buckets.items()}
        results[symbol] = MutationResult(
            made=len(t.made.mutants), sites=t.made.sites, candidates=t.made.candidates,
            skipped=t.made.skipped, not_run=len(missing), seed=t.made.seed,
            killed=frozen.get("killed", {}), survived=frozen.get("survived", {}),
            crashed=frozen.get("crashed", {}), hung=frozen.get("hung", {}),
            controls=dict(t.controls),
            controls_failed={p: tuple(v) for p, v in t.controls_failed.items()},
        )  # fmt: skip
    return results


def _mutant_outcomes(
    t: _Tally, sha: str, outs: Mapping[str, RunOutcome], covering: Sequence[str]
) -> None:
    label = t.labels[sha]
    if sha in t.seen:
        return  # a batch re-run after a transport failure: its first outcomes count
    mine = {pid: outs[pid] for pid in covering if pid in outs}
    if not mine:
        return
    t.seen.add(sha)
    for pid, o in mine.items():
        kind = classify(o)
        t.put(kind, pid, label if kind in ("killed", "survived") else f"{label}: {o.outcome}")
