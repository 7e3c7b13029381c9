"""The pipeline of ``patchgate check`` (docs/architecture.md): provenance -> changed symbols ->
oracle and pins -> fixture digest -> environment -> signature -> admission -> two runs -> ledgers
-> second pin -> credit and mutation -> receipt.

Each step writes its own file only when it completed; a refused step writes no file. A later step
never heals an earlier failure: the verdict is the first failing row of the merge table
(:mod:`client.verdict.posture`). ``receipt.json`` is written for every verdict, refusals included.
All configuration arrives in one frozen :class:`CheckSettings` built by the command.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from client.gate import steps
from client.gate.attributes import patch_git_metadata
from client.gate.environment import EXECUTOR_ENVIRONMENT, executor_builder, suite_environment
from client.gate.evidence import locate_properties, symbol_locations, write_run_logs
from client.gate.provenance import ProvenanceError, build_provenance, format_clock
from client.gate.runs.execution import LaneResult
from client.gate.runs.mutation import executed_map, mutation_stage
from client.gate.runs.suite import SignedSuite
from client.gate.runs.targets import SymbolSite, locate, targets_of
from client.gate.secondpin import second_pin_step
from client.gate.settings import CheckSettings
from client.gate.workspace import PatchApplyError, Workspace, base_pins, materialize
from client.verdict.admission import decide
from client.verdict.credit import CreditReport, CreditRow, rejection_codes, score
from client.verdict.flakes import observe_flakes, quarantined
from client.verdict.posture import Facts, Verdict, merge
from client.verdict.receipt import ReceiptFacts, build_receipt
from client.verdict.scoring import Findings, MutationTerms, score_with_evidence
from client.verdict.stability import Stability, assess_all
from patchgate.envelope import Envelope
from patchgate.evidence import Evidence
from patchgate.keys import Keyring
from patchgate.ledgers import FILE_NAMES, Receipt, now_utc
from patchgate.pins import PinSet, PropertyPin
from patchgate.receipt_parts import (
    EvidenceEntry,
    LaneSummary,
    MutationRecord,
    TransportEntry,
)

__all__ = ["CheckResult", "remote_not_run", "run_check"]

CHANGED_INPUT = (
    "a changed data input a run may read: bytes, not code; no property can earn credit for it (R1)"
)
# Fixture statuses whose suite may be signed and run: ``not_applicable`` (an empty pin and no
# fixture root) is signed and run (the manifest still pins seed, bound and commands) so that the
# receipt shows what the suite did, but it is never admitted (the merge table's no_fixtures row).
_SCORABLE = ("match", "not_applicable")
NO_FIXTURES = (
    "no fixtures (fixture_status not_applicable): nothing says which bytes the suite saw, so the "
    "patch is not admitted; commit one fixture that can falsify a claim and pin it "
    "(patchgate pin fixtures)"
)


@dataclass(kw_only=True)
class CheckResult:
    """The receipt, the exit code and what the summary shows."""

    receipt: Receipt
    verdict: Verdict
    rows: tuple[CreditRow, ...] = ()
    reasons: tuple[str, ...] = ()
    #: for people, never the verdict: run outcomes and logs, where symbols and tests live
    evidence: Evidence = field(default_factory=Evidence)


@dataclass(kw_only=True)
class _State:
    """What the steps found so far (mutable inside one check only)."""

    review_clock: str
    patch_sha256: str
    decision: str = ""
    symbols: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    #: changed data files no trustworthy record shows read (``data:<path>``): never credit
    changed_inputs: tuple[str, ...] = ()
    codes: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    fixture_status: str = ""
    fixture_digest: str = ""
    citations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    predicate_hashes: dict[str, str] = field(default_factory=dict)
    transport: list[TransportEntry] = field(default_factory=list)
    lanes: dict[str, LaneSummary | dict[str, Any]] = field(
        default_factory=lambda: {"local": {}, "remote": {}}
    )
    rows: tuple[CreditRow, ...] = ()
    credits: dict[str, int] = field(default_factory=dict)
    coverage: float = 0.0
    uncredited: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, dict[str, EvidenceEntry]] = field(default_factory=dict)
    flake_observations: list[dict[str, Any]] = field(default_factory=list)
    freeze_problems: tuple[str, ...] = ()
    # What the static findings need when the run stops before scoring: every pinned property and
    # its assertion class in the patched tree. ``scored``: credit came from real runs.
    properties: tuple[PropertyPin, ...] = ()
    classes: dict[str, str] = field(default_factory=dict)
    scored: bool = False
    dual_pin: str = "not_run"
    mutation: MutationRecord = field(default_factory=MutationRecord)  # the receipt's entry
    environment: str = ""  # the receipt's ``environment``: a digest, "executor", "" (not signed)
    seen: Evidence = field(default_factory=Evidence)  # what the report shows (CheckResult)

    def take(self, report: CreditReport) -> None:
        """Keep a credit report: credits, coverage, why-not, evidence, table rows."""
        self.rows, self.credits, self.coverage = report.rows, report.credits, report.coverage
        self.uncredited, self.evidence = report.uncredited, report.evidence


def _static_findings(st: _State, facts: Facts) -> Facts:
    """A run that stopped before scoring still lists every finding: R1 for every changed symbol
    (credit 0, "the run was stopped before execution: <posture>") and the static R3/R5 codes.

    Those codes only feed the merge table's credit row, which comes after every row that stops a
    run, so the posture is the one the stop already chose.
    """
    stopped = merge(facts).posture
    report = score(
        changed_symbols=st.symbols,
        suite=st.properties,
        assertion_classes=st.classes,
        local={},
        stopped=stopped,
    )
    st.take(report)
    st.codes = rejection_codes(symbol_codes=[*st.codes, *report.codes])
    return dataclasses.replace(facts, codes=st.codes)


def _finish(s: CheckSettings, st: _State, facts: Facts) -> CheckResult:
    if not st.scored:
        facts = _static_findings(st, facts)
    if st.changed_inputs:  # a changed data input never earns credit (docs/gate-analysis.md)
        st.uncredited.update((i, CHANGED_INPUT) for i in st.changed_inputs)
        st.codes = rejection_codes(symbol_codes=[*st.codes, "R1"])
        facts = dataclasses.replace(facts, codes=st.codes)
    if s.override_by is not None:
        st.reasons.append(
            f"override by {s.override_by}: {s.override_reason} (recorded in the receipt, never "
            "applied: the verdict is the gate's)"
        )
    verdict = merge(facts)
    receipt = build_receipt(
        ReceiptFacts(
            review_clock=st.review_clock,
            patch_sha256=st.patch_sha256,
            decision=st.decision,
            posture=verdict.posture,
            admit=verdict.admit,
            changed_symbols=st.symbols,
            excluded_paths=st.excluded,
            changed_inputs=st.changed_inputs,
            credits=st.credits,
            coverage=st.coverage,
            uncredited=st.uncredited,
            evidence=st.evidence,
            fixture_status=st.fixture_status,
            fixture_digest=st.fixture_digest,
            freeze_citations=[f for ids in st.citations.values() for f in ids],
            flake_observations=st.flake_observations,
            predicate_hashes=st.predicate_hashes,
            rejection_codes=st.codes,
            transport=st.transport,
            lanes=st.lanes,
            dual_pin=st.dual_pin,
            override=_override(s),
            mutation=st.mutation,
            environment=st.environment,
            judge=s.judge,
        )
    )
    receipt.write(s.out / FILE_NAMES["receipt"])
    write_run_logs(s.out, st.seen.logs)
    return CheckResult(
        receipt=receipt, verdict=verdict, rows=st.rows, reasons=tuple(st.reasons), evidence=st.seen
    )


def _override(s: CheckSettings) -> dict[str, str]:
    """A person's override as the receipt records it: by whom, why, when. It documents a
    decision beside the gate's and changes nothing the gate computed."""
    if s.override_by is None or s.override_reason is None:
        return {}
    return {"by": s.override_by, "reason": s.override_reason, "recorded_at": now_utc()}


def run_check(s: CheckSettings, progress: Callable[[str], None] | None = None) -> CheckResult:
    """Run the whole pipeline for one patch; return the receipt and the verdict."""
    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    patch = steps.read_patch(s.patch)
    clock = s.clock or dt.datetime.now(dt.UTC)
    st = _State(review_clock=format_clock(clock), patch_sha256=hashlib.sha256(patch).hexdigest())
    s.out.mkdir(parents=True, exist_ok=True)
    try:
        prov = build_provenance(
            patch, s.draft_id, s.drafter, clock, model=s.model, interface=s.interface
        )
        problem = None
    except ProvenanceError as exc:
        prov, problem = None, str(exc)
    try:
        with materialize(s.repo, s.base, patch) as ws:
            check = _Check(s=s, st=st, ws=ws, clock=clock, say=say)
            if prov is None:  # refused, but what the patch touched is still listed
                return check.run(patch, provenance_problem=problem)
            steps.write_json(s.out / "provenance.json", {"kind": "provenance", **prov.to_json()})
            return check.run(patch)
    except PatchApplyError as exc:
        return _reject_provenance(s, st, problem or str(exc))


def remote_not_run(*, local_ran: bool, local_green: bool, confirmable: bool) -> str:
    """Why the remote lane does not run ("" when it may): it confirms a green local lane only,
    and only pure_fn properties. A check with no local executor (``--remote-only``) runs it
    alone, as a confirmation that is never admitted."""
    if not confirmable:
        return "no pure_fn property in the suite (only pure_fn results can be confirmed elsewhere)"
    if local_ran and not local_green:
        return "the local lane did not pass every run of every property"
    return ""


def _record_remote(
    st: _State, remote: LaneResult | None, rstab: dict[str, Stability], not_run: str
) -> None:
    """``lanes.remote``: what the remote lane confirmed, or why it did not run. An unreachable
    remote lane is an availability miss: recorded in ``transport``, never a verdict."""
    if remote is None:
        st.lanes["remote"] = {"status": "not_run", "reason": not_run}
        st.reasons.append(f"remote lane not run: {not_run}")
        return
    st.transport.extend({**t.to_json(), "lane": "remote", "retried": True} for t in remote.retried)
    st.transport.extend({**t.to_json(), "lane": "remote"} for t in remote.transport)
    summary = remote.summary({k: v.status for k, v in rstab.items()})
    st.lanes["remote"] = {"status": "ran", **summary}
    st.reasons.extend(f"remote lane: {r}" for r in remote.refusals)


def _reject_provenance(s: CheckSettings, st: _State, why: str) -> CheckResult:
    st.decision = "reject_provenance"
    st.reasons.append(why)
    admission = decide(
        provenance_problems=[why],
        signature_problem=None,
        properties=(),
        assertion_classes={},
        changed_symbols=(),
    )
    admission.to_record().write(s.out / FILE_NAMES["admission"])
    return _finish(s, st, Facts(decision=st.decision))


@dataclass(kw_only=True)
class _Check:
    """Steps 2-10 inside one materialized workspace."""

    s: CheckSettings
    st: _State
    ws: Workspace
    clock: dt.datetime
    say: Callable[[str], None]
    #: Properties quarantined by a valid freeze citation: not run, still judged (a citation).
    held: list[PropertyPin] = field(default_factory=list)
    #: Where each changed symbol is defined in the patched tree (the executor's targets).
    sites: dict[str, SymbolSite] = field(default_factory=dict)

    def done(self, **facts: Any) -> CheckResult:
        no_fixtures = self.st.fixture_status == "not_applicable"
        return _finish(
            self.s,
            self.st,
            Facts(decision=self.st.decision, codes=self.st.codes, no_fixtures=no_fixtures, **facts),
        )

    def run(self, patch: bytes, provenance_problem: str | None = None) -> CheckResult:
        s, st, ws = self.s, self.st, self.ws
        pins = steps.resolve_pins(ws, base_pins(s.repo, ws.base_rev))  # unknown covers: 78
        changed = steps.changed(ws, pins)
        st.symbols, st.excluded = changed.symbols, changed.excluded_paths
        self.sites = locate(ws, pins, st.symbols)
        st.seen = Evidence(
            symbols=symbol_locations(self.sites),
            properties=locate_properties(ws.patched_dir, pins.properties),
        )
        reports = steps.classify(ws.patched_dir, pins.properties)
        base_reports = steps.classify(ws.base_dir, pins.properties)
        st.predicate_hashes = {p: r.predicate_hash for p, r in reports.items() if r.predicate_hash}
        st.citations = {p: r.freeze_ids for p, r in reports.items() if r.freeze_ids}
        classes = {pid: r.assertion_class for pid, r in reports.items()}
        st.properties, st.classes = pins.properties, classes
        # opened_paths: what the judge's audit hook saw the runs open or list (issue 20); None:
        # no trustworthy record, so every changed non-source, non-fixture file is R7
        oracle = steps.oracle_and_pins(
            changed,
            pins,
            reports,
            base_reports,
            self.clock,
            read_patched=ws.read_patched,
            opened_paths=None,
        )
        st.reasons.extend(oracle.reasons)
        st.changed_inputs = oracle.changed_inputs
        st.freeze_problems = oracle.freeze_problems
        # Incomplete provenance, or compiled or binary code (unreviewable, whatever else it did):
        # reject_provenance, with every static finding listed.
        # .gitattributes, .gitmodules or a gitlink: the tree scored would not be the tree merged
        git_meta = patch_git_metadata(ws.changes(), patch, ws.base_dir, ws.patched_dir)
        stops = [
            *([provenance_problem] if provenance_problem else []),
            *oracle.unreviewable,
            *git_meta,
        ]
        if stops:
            st.codes = rejection_codes(
                freeze_problems=oracle.freeze_problems,
                oracle_moved=oracle.oracle_moved,
                pin_mutation=oracle.pin_mutation,
            )
            return _reject_provenance(s, st, "; ".join(stops))
        fixture = steps.fixture_step(ws.patched_dir, pins, s.out)
        st.fixture_status, st.fixture_digest = fixture.status, fixture.digest
        st.reasons.extend(fixture.reasons)
        if fixture.status == "not_applicable":
            st.reasons.append(NO_FIXTURES)
        refused = fixture.status not in _SCORABLE or fixture.manifest is None
        st.codes = rejection_codes(
            fixture_mismatch=refused,
            freeze_problems=oracle.freeze_problems,
            oracle_moved=oracle.oracle_moved,
            pin_mutation=oracle.pin_mutation,
        )
        if oracle.oracle_moved or oracle.pin_mutation or refused or fixture.manifest is None:
            return self.done(fixture_refused=refused)
        builder = executor_builder(s.executors, s.executor_tls)
        env = suite_environment(
            s.repo, ws.base_rev, pins.config, ws.base_dir, self.say, builder=builder
        )
        st.environment = env or EXECUTOR_ENVIRONMENT
        manifest = dataclasses.replace(fixture.manifest, environment_digest=env)
        sig = steps.signature_step(s, manifest, s.out)
        st.reasons.extend(sig.reasons)
        if sig.transport is not None:
            st.transport.append(sig.transport)
            return self.done(signer_transport=True)
        # A property quarantined by a valid freeze citation is a citation: it does not run. A
        # citation that does not hold (R4) quarantines nothing.
        held = quarantined(
            properties=pins.properties,
            assertion_classes=classes,
            citations={p: ids for p, ids in st.citations.items() if p in oracle.valid_citers},
            flakes=pins.flakes,
            clock=self.clock,
        )
        admission = decide(
            provenance_problems=(),
            signature_problem=sig.problem,
            properties=pins.properties,
            assertion_classes=classes,
            changed_symbols=st.symbols,
            notes=sig.notes,
            quarantined=held,
        )
        admission.to_record().write(s.out / FILE_NAMES["admission"])
        st.decision = admission.decision
        st.reasons.extend(admission.reasons)
        if not admission.admitted or sig.envelope is None:
            return self.done()
        by_id = {p.id: p for p in pins.properties}
        suite = [by_id[pid] for pid in admission.suite]
        self.held = [p for p in pins.properties if p.id in held]
        return self.run_and_score(pins, suite, classes, sig.envelope, sig.executor_keyring)

    def run_and_score(
        self,
        pins: PinSet,
        suite: list[PropertyPin],
        classes: dict[str, str],
        envelope: Envelope,
        executor_keyring: Keyring | None,
    ) -> CheckResult:
        s, st = self.s, self.st
        signed = SignedSuite(
            envelope=envelope,
            digest=st.fixture_digest,
            workspace=self.ws.patched_dir,
            fixture_root=pins.config.fixture_root,
            base=self.ws.base_dir,
            executor_keyring=executor_keyring,
            executors=s.executors,
            remote_executor=s.remote_executor,
            judge=steps.judge_mode(s.judge, self.ws.patched_dir, pins.config),
            targets=targets_of(self.sites),
        )

        def lane(name: str, props: list[PropertyPin]) -> LaneResult:
            return steps.execute(s, signed, name, props, self.say)

        # No local executor (``check --remote-only``): the remote lane is the only evidence.
        local = lane("local", suite) if s.executors else LaneResult(lane="local")
        ids = [p.id for p in suite]
        # idempotent_io: two applies must also leave the same output tree
        io = {p.id for p in suite if p.property_class == "idempotent_io"}
        st.seen = dataclasses.replace(
            st.seen, outcomes=tuple(local.outcomes), logs=tuple(local.logs)
        )
        stab = assess_all(ids, local.outcomes, s.runs, same_tree=io)
        # The remote lane confirms a green local lane: it starts only after every local run
        # passed, and only for pure_fn properties (the class whose result cannot depend on where
        # it ran). Otherwise lanes.remote says why it did not run.
        confirm = [p for p in suite if p.property_class == "pure_fn"]
        not_run = remote_not_run(
            local_ran=bool(s.executors),
            local_green=not local.refusals and all(v.passed_both for v in stab.values()),
            confirmable=bool(confirm),
        )
        remote = None
        if s.remote_executor and not not_run:
            remote = lane("remote", confirm)
        rids = [p.id for p in confirm]
        rstab = assess_all(rids, remote.outcomes, s.runs) if remote is not None else {}
        # Transport of attempts that were re-run is kept (``retried``); it left no run missing.
        st.transport.extend(t.retried() for t in local.retried)
        st.transport.extend(t.to_json() for t in local.transport)
        st.lanes = {"local": local.summary({k: v.status for k, v in stab.items()}), "remote": {}}
        st.reasons.extend(local.refusals)
        if s.remote_executor:
            _record_remote(st, remote, rstab, not_run)
        if not s.executors:
            return self.remote_only(suite, classes, rstab)
        incomplete = bool(local.transport) or any(v.status == "incomplete" for v in stab.values())
        if local.refusals or incomplete:
            return self.done(executor_refused=bool(local.refusals), local_transport=incomplete)
        steps.write_property_ledger(
            s.out, pins.fixtures.pin_id, st.fixture_digest, stab, keyids=local.keyid_of
        )
        flakes = observe_flakes(
            suite=suite,
            local=stab,
            citations=st.citations,
            flakes=pins.flakes,
            clock=self.clock,
            changed_symbols=st.symbols,
            # property id -> production modules its runs imported, from the judge's records
            # (issue 20); None: no trustworthy record, so no excuse for changed production code
            imported=None,
        )
        observations, mismatches = flakes.observations, flakes.problems
        st.reasons.extend([*mismatches, *flakes.refused])
        st.flake_observations = [o.to_json() for o in observations]
        steps.write_flake_ledger(s.out, observations, st.fixture_digest, st.reasons)
        steps.write_freeze_proposals(s.out, suite, stab, classes, st.fixture_digest)
        second = second_pin_step(s, self.ws, pins, suite, stab, st.fixture_digest, self.say)
        st.transport.extend(second.transport)
        st.reasons.extend(second.reasons)
        st.dual_pin = second.status
        if second.drift is None:
            return self.done(local_transport=True)
        # Credit is evidence: the runs executed the symbol, and (the mutation stage) the property
        # killed a mutant of it (client.gate.runs.mutation).
        report, st.mutation = self.score(pins, signed, [*suite, *self.held], classes, stab, rstab)
        unmutated = s.mutants <= 0 and not pins.config.allow_unmutated
        if unmutated:
            st.reasons.append(
                "mutation stage off (--mutants 0): not admitted unless the reviewed "
                "configuration says allow_unmutated = true"
            )
        unjudged = s.judge == "off" and not pins.config.allow_judge_off
        if unjudged:
            st.reasons.append(
                "judge off (--judge off): the patched code shared one process with the "
                "properties and the reporter; scored, not admitted unless the reviewed "
                "configuration says allow_judge_off = true"
            )
        st.take(report)
        st.scored = True
        st.reasons.extend(report.notes)
        st.reasons.extend(f"property miss: {p} failed both local runs" for p in report.misses)
        st.reasons.extend(
            f"unstable: {p} {stab[p].reason or 'disagreed between its two runs'}"
            for p in report.unstable
        )
        st.codes = rejection_codes(
            symbol_codes=report.codes,
            freeze_problems=[*st.freeze_problems, *mismatches],
            drift=second.drift,
        )
        flaked = {o.property_id for o in observations}
        return self.done(
            coverage=report.coverage,
            changed_symbols=len(st.symbols),
            suite_passed=all(stab[p].passed_both or p in flaked for p in ids),
            property_misses=[p for p in report.misses if p not in flaked],
            flake_observed=bool(observations),
            second_pin_agrees=second.agrees,
            unmutated=unmutated,
            unjudged=unjudged,
        )

    def score(  # noqa: PLR0917 - the check's own state, passed on once
        self,
        pins: PinSet,
        signed: SignedSuite,
        everyone: list[PropertyPin],
        classes: dict[str, str],
        stab: dict[str, Stability],
        rstab: dict[str, Stability],
    ) -> tuple[CreditReport, MutationRecord]:
        """Credit with its evidence (client.verdict.scoring): the executed rule, then the
        mutation stage of the symbols that would earn credit."""
        s, st = self.s, self.st
        wanted = s.mutants > 0
        untrusted = steps.introspection(self.ws, pins, st.symbols, everyone) if wanted else {}
        found = Findings(
            symbols=st.symbols,
            suite=everyone,
            classes=classes,
            local=stab,
            remote=rstab,
            executed=executed_map(self.sites, st.symbols, everyone, stab),
            untrusted=untrusted,
        )
        terms = MutationTerms(
            mutants=s.mutants,
            judge=signed.judge.judge,
            allow_unmutated=pins.config.allow_unmutated,
            min_mutation_score=pins.config.min_mutation_score,
        )
        stage = mutation_stage(s, signed, self.sites, found, terms, say=self.say)
        return score_with_evidence(found, terms, stage, self.say)

    def remote_only(
        self, suite: list[PropertyPin], classes: dict[str, str], rstab: dict[str, Stability]
    ) -> CheckResult:
        """Score a run whose only evidence is the remote lane: R6 for what only it passed.

        No property ledger, flake ledger, freeze proposal or second pin: those record local
        evidence. Remote runs confirm and never credit, so such a check is never admitted.
        """
        st = self.st
        report = score(
            changed_symbols=st.symbols,
            suite=[*suite, *self.held],
            assertion_classes=classes,
            local={},
            remote=rstab,
        )
        st.take(report)
        st.scored = True
        st.reasons.append("remote only: no local executor; remote runs confirm, never credit")
        st.reasons.extend(report.notes)
        st.codes = rejection_codes(symbol_codes=report.codes, freeze_problems=st.freeze_problems)
        return self.done(
            coverage=report.coverage, changed_symbols=len(st.symbols), suite_passed=False
        )
