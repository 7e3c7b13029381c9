"""The verdict of a check re-derived from its signed evidence alone (docs/reference/receipt.md).

``patchgate verify-receipt --recompute`` hands this module the base revision, the patch bytes, the
check's ``--out`` directory and one keyring (operator keys and, by role ``executor``, the executor
keys). It rebuilds the two trees from the repository's blobs and the patch, recomputes changed
symbols, the oracle and pin findings, the fixture digest and admission as the check does, verifies
every run result kept in ``signed_runs/`` (:mod:`client.gate.runs.kept`) by an executor key, checks
that each binds this tree (base and patch), this fixture digest, this environment and this judge
mode, and scores credit from the outcomes those statements sign — suite runs, and the mutants the
receipt's recorded sample re-derives, matched to the signed variants by their source digests. No
daemon is reached; nothing from the receipt is trusted but the sample's seed and ``k`` (which only
choose what must be found signed).

Everything that does not fit is a *problem* naming the file: unsigned (no executor key of the
keyring verifies it), mis-bound, extra (a statement or variant this check did not need, a run
reported twice) or missing (a suite run or a sampled mutant with no signed outcome).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client.gate import steps
from client.gate.attributes import patch_git_metadata
from client.gate.runs.kept import signed_runs_dir
from client.gate.runs.mutation import executed_map
from client.gate.runs.signed import (
    Bound,
    SignedRun,
    mutation_results,
    signed_run,
    stage_k,
    suite_outcomes,
)
from client.gate.runs.targets import locate, targets_of
from client.gate.workspace import Workspace, base_pins, materialize
from client.verdict.admission import decide
from client.verdict.credit import (
    CreditReport,
    MutationFindings,
    MutationResult,
    rejection_codes,
    score,
)
from client.verdict.flakes import quarantined
from client.verdict.posture import Facts, merge
from client.verdict.scoring import JUDGE_OFF
from client.verdict.stability import assess_all
from patchgate.digest import hash_files
from patchgate.envelope import Envelope, verify_fixture_envelope
from patchgate.errors import EnvelopeError, FixtureScanError, UsageError
from patchgate.executor_client import workspace_files
from patchgate.keys import Keyring
from patchgate.ledgers import Receipt, read_record
from patchgate.pins import PinSet, PropertyPin
from patchgate.report import workspace_digest
from patchgate.symbols import MAX_TARGETS, wire_name
from patchgate.vocabulary import JudgeName

__all__ = ["Recomputed", "recompute"]

RUNS = 2  # the suite runs twice (docs/gate.md)


@dataclass(kw_only=True)
class Recomputed:
    """What the signed evidence alone gives: the receipt's fields, and every problem found."""

    fields: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    statements: int = 0


def recompute(repo: Path, base: str, patch: bytes, ledgers: Path, keyring: Keyring) -> Recomputed:
    """Re-derive ``ledgers``'s verdict for ``patch`` on ``base`` from the signed statements."""
    receipt = read_record(Receipt, ledgers / "receipt.json")
    out = Recomputed()
    out.fields["patch_sha256"] = hashlib.sha256(patch).hexdigest()
    with materialize(repo, base, patch) as ws:
        _Recompute(ws=ws, receipt=receipt, ledgers=ledgers, keyring=keyring, out=out).run(patch)
    return out


@dataclass(kw_only=True)
class _Recompute:
    ws: Workspace
    receipt: Receipt
    ledgers: Path
    keyring: Keyring
    out: Recomputed

    def stop(self, why: str) -> None:
        """The recomputed verdict is no admit: say why."""
        self.out.fields.setdefault("admit", False)
        self.out.problems.append(f"not admitted: {why}")

    def run(self, patch: bytes) -> None:
        ws, f = self.ws, self.out.fields
        pins = steps.resolve_pins(ws, base_pins(ws.repo, ws.base_rev))
        changed = steps.changed(ws, pins)
        f["changed_symbols"], f["excluded_paths"] = (
            list(changed.symbols),
            list(changed.excluded_paths),
        )
        reports = steps.classify(ws.patched_dir, pins.properties)
        base_reports = steps.classify(ws.base_dir, pins.properties)
        f["predicate_hashes"] = {
            p: r.predicate_hash for p, r in reports.items() if r.predicate_hash
        }
        classes = {pid: r.assertion_class for pid, r in reports.items()}
        citations = {p: r.freeze_ids for p, r in reports.items() if r.freeze_ids}
        clock = _clock(self.receipt.review_clock)
        oracle = steps.oracle_and_pins(
            changed, pins, reports, base_reports, clock, read_patched=ws.read_patched,
            opened_paths=None,
        )  # fmt: skip
        stops = [*oracle.unreviewable, *patch_git_metadata(ws.changes(), patch, ws.base_dir,
                                                           ws.patched_dir)]  # fmt: skip
        if stops or oracle.oracle_moved or oracle.pin_mutation or oracle.changed_inputs:
            what = [*stops, *(["oracle moved (R7)"] if oracle.oracle_moved else []),
                    *(["pin mutation (R8)"] if oracle.pin_mutation else []),
                    *oracle.changed_inputs]  # fmt: skip
            self.stop("; ".join(what))
            return
        fixture_root = pins.config.fixture_root
        try:
            manifest, mismatched = steps.measure(ws.patched_dir, pins.fixtures, fixture_root)
        except FixtureScanError as exc:
            self.stop(f"fixture digest (R2): {exc}")
            return
        f["fixture_digest"] = manifest.digest()
        f["fixture_status"] = "mismatch" if mismatched else "match"
        if mismatched or not pins.fixtures.files:
            self.stop(f"fixture status {f['fixture_status']} (no fixture: never admitted)")
            return
        signed = self.fixture_envelope(f["fixture_digest"])
        if signed is None:
            return
        f["environment"] = signed
        held = quarantined(
            properties=pins.properties, assertion_classes=classes,
            citations={p: ids for p, ids in citations.items() if p in oracle.valid_citers},
            flakes=pins.flakes, clock=clock,
        )  # fmt: skip
        admission = decide(
            provenance_problems=(), signature_problem=None, properties=pins.properties,
            assertion_classes=classes, changed_symbols=changed.symbols, quarantined=held,
        )  # fmt: skip
        f["decision"] = admission.decision
        if not admission.admitted:
            self.stop(f"admission {admission.decision}")
            return
        by_id = {p.id: p for p in pins.properties}
        suite = [by_id[pid] for pid in admission.suite]
        runs = self.statements(pins, f["fixture_digest"], signed, changed.symbols)
        got = self.score(pins, suite, [p for p in pins.properties if p.id in held], classes, runs)
        f["credits"], f["coverage"] = dict(got.report.credits), got.report.coverage
        f["rejection_codes"] = rejection_codes(
            symbol_codes=got.report.codes, freeze_problems=oracle.freeze_problems
        )
        self.verdict(got, unjudged=self.judge == "off" and not pins.config.allow_judge_off)

    def fixture_envelope(self, digest: str) -> str | None:
        """The environment the operator signed with ``digest`` (``executor`` when none), or None
        with the problem recorded."""
        path = self.ledgers / "fixture_envelope.json"
        try:
            env = Envelope.from_json(json.loads(path.read_text(encoding="utf-8")))
            statement = verify_fixture_envelope(env, self.keyring)
        except (OSError, ValueError, EnvelopeError) as exc:
            self.stop(f"fixture_envelope.json: {exc}")
            return None
        if statement.digest != digest:
            self.stop(f"fixture_envelope.json signs {statement.digest[:16]}, not {digest[:16]}")
            return None
        return statement.manifest.environment_digest or "executor"

    def statements(
        self, pins: PinSet, digest: str, environment: str, symbols: Sequence[str]
    ) -> list[SignedRun]:
        """Every kept statement that verifies by an executor key and binds this check."""
        ws = self.ws
        files = workspace_files(ws.patched_dir, pins.config.fixture_root)
        tree = workspace_digest((p, e.sha256, e.size) for p, e in hash_files(files).items())
        sites = locate(ws, pins, symbols)
        judge = self.judge
        mode = steps.judge_mode(judge, ws.patched_dir, pins.config)
        sent = list(targets_of(sites))[:MAX_TARGETS]
        bound = Bound(
            fixture_digest=digest, environment=environment, judge=judge, workspace=tree,
            names={wire_name(c.name): c.name for c in sent},
            commands={p.id: tuple(p.command) for p in pins.properties},
            targets=[[c.path, c.first_line, c.last_line, wire_name(c.name)] for c in sent],
            judge_roots=list(mode.source_roots) or ["."], production=list(mode.production),
        )  # fmt: skip
        directory = signed_runs_dir(self.ledgers)
        paths = sorted(directory.glob("*.json")) if directory.is_dir() else []
        if not paths:
            self.out.problems.append(f"missing: no signed run result in {directory}")
        kept: list[SignedRun] = []
        for path in paths:
            run = signed_run(path, self.keyring, bound, self.out.problems)
            if run is not None:
                kept.append(run)
        self.out.statements = len(kept)
        return kept

    @property
    def judge(self) -> JudgeName:
        """How the runs were made, as the receipt says (``on`` for a receipt from before it);
        every statement must bind the same. Another word is a problem, read as ``on``."""
        value = self.receipt.judge or "on"
        if value not in ("on", "off"):
            why = f"receipt: judge {value!r} is neither 'on' nor 'off'"
            if why not in self.out.problems:
                self.out.problems.append(why)
            return "on"
        return "off" if value == "off" else "on"

    def score(
        self,
        pins: PinSet,
        suite: list[PropertyPin],
        held: list[PropertyPin],
        classes: Mapping[str, str],
        runs: list[SignedRun],
    ) -> _Scored:
        """Stability, executed, mutation and credit from the signed outcomes."""
        ws, problems = self.ws, self.out.problems
        ids = [p.id for p in suite]
        outcomes = suite_outcomes([r for r in runs if not r.variants], set(ids), problems)
        io = {p.id for p in suite if p.property_class == "idempotent_io"}
        stab = assess_all(ids, outcomes, RUNS, same_tree=io)
        for pid, st in stab.items():
            if st.status == "incomplete":
                problems.append(f"missing: {pid} has no signed outcome for every run")
        symbols = self.out.fields["changed_symbols"]
        sites = locate(ws, pins, symbols)
        everyone = [*suite, *held]
        executed = executed_map(sites, symbols, everyone, stab)
        threshold = pins.config.min_mutation_score

        def scored(mutation: Mapping[str, MutationResult] | None) -> CreditReport:
            return score(
                changed_symbols=symbols, suite=everyone, assertion_classes=classes, local=stab,
                remote={}, executed=executed,
                mutation=None if mutation is None else MutationFindings(mutation, threshold),
            )  # fmt: skip

        report = scored(None)
        record = self.receipt.mutation
        batches = [r for r in runs if r.variants]
        k = stage_k(batches, int(record.get("k", 0)) if record.get("enabled") else 0, problems)
        if k > 0:
            by_id = {p.id: p for p in everyone}
            candidates: dict[str, list[str]] = {}
            for row in report.rows:
                if row.credit == 1 and row.property_id in by_id:
                    candidates.setdefault(row.symbol, []).append(row.property_id)
            untrusted = steps.introspection(ws, pins, symbols, everyone)
            if self.judge == "off":
                untrusted = {sym: JUDGE_OFF for sym in candidates} | untrusted
            found = mutation_results(
                candidates={s: p for s, p in candidates.items() if not untrusted.get(s)},
                sites=sites, ws=ws, k=k, seeds=record.get("symbols", {}), runs=batches,
                problems=problems,
            )  # fmt: skip
            found |= {s: MutationResult(untrusted=why) for s, why in untrusted.items()
                      if s in candidates and why}  # fmt: skip
            report = scored({s: found.get(s, MutationResult()) for s in symbols})
        return _Scored(
            report=report,
            suite_passed=all(stab[p].passed_both for p in ids),
            unmutated=k <= 0 and not pins.config.allow_unmutated,
        )

    def verdict(self, got: _Scored, *, unjudged: bool) -> None:
        f = self.out.fields
        verdict = merge(
            Facts(
                decision=f["decision"], codes=f["rejection_codes"], coverage=f["coverage"],
                changed_symbols=len(f["changed_symbols"]), suite_passed=got.suite_passed,
                property_misses=list(got.report.misses), unmutated=got.unmutated,
                unjudged=unjudged,
            )
        )  # fmt: skip
        f["posture"], f["admit"] = verdict.posture, verdict.admit
        if self.receipt.dual_pin != "not_run":
            self.out.problems.append(
                f"not recomputed: the second pin ({self.receipt.dual_pin}); its runs are not kept"
            )


@dataclass(frozen=True)
class _Scored:
    report: CreditReport
    suite_passed: bool
    unmutated: bool  # the stage was off and the base does not allow that


def _clock(text: str) -> dt.datetime:
    """The receipt's review clock (freeze citations are judged at it)."""
    try:
        clock = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"receipt review_clock {text!r} is not an ISO 8601 time") from None
    if clock.tzinfo is None:
        raise UsageError(f"receipt review_clock {text!r} has no UTC offset")
    return clock
