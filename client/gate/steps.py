"""The steps of ``patchgate check`` that touch files or daemons, one function each (see gate.py).

Each returns what it found; each writes its own file only when the step completed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client.analysis.classify.assertions import (
    AssertionReport,
    classify_properties,
    file_citations,
    flake_ids_in,
)
from client.analysis.mutation.imports import Closure, ImportGraph
from client.analysis.mutation.introspection import introspection_added
from client.analysis.patch.covers import base_names, resolve_covers
from client.analysis.patch.roles import layout_of
from client.analysis.patch.touched import Touched, judge, read_inputs
from client.gate.runs import durations
from client.gate.runs.execution import LaneResult, LaneTerms, run_lane
from client.gate.runs.judging import JudgeMode, production_names
from client.gate.runs.kept import signed_runs_dir
from client.gate.runs.suite import SignedSuite
from client.gate.runs.targets import targeted_connect
from client.gate.settings import CheckSettings
from client.gate.workspace import Workspace
from client.verdict.admission import covering
from client.verdict.citations import Citation, check_citations
from client.verdict.codes import unreachable_words
from client.verdict.flakes import FlakeObservation
from client.verdict.stability import Stability, freeze_proposal
from patchgate.atomicfile import atomic_write_json
from patchgate.batching import group_properties
from patchgate.digest import Manifest, hash_files, scan_fixture_tree
from patchgate.envelope import Envelope
from patchgate.errors import (
    EnvelopeError,
    FixtureScanError,
    PatchgateError,
    PinError,
    PinErrors,
    RefusedError,
    TransportError,
    UsageError,
)
from patchgate.keys import Keyring
from patchgate.ledgers import (
    FILE_NAMES,
    FixtureLedger,
    FlakeLedger,
    PropertyLedger,
    now_utc,
)
from patchgate.pins import DirSource, PinSet, ProjectConfig, PropertyPin, load_config
from patchgate.receipt_parts import TransportEntry
from patchgate.signer_client import SignerClient
from patchgate.vocabulary import JudgeName

__all__ = [
    "FixtureResult",
    "OracleResult",
    "SignatureResult",
    "changed",
    "classify",
    "execute",
    "fixture_step",
    "oracle_and_pins",
    "read_patch",
    "resolve_pins",
    "signature_step",
    "signed_suite",
    "write_flake_ledger",
    "write_freeze_proposals",
    "write_json",
    "write_property_ledger",
]

MAX_PATCH_BYTES = 16 << 20
Say = Callable[[str], None]


def read_patch(path: Path) -> bytes:
    """The exact patch bytes (a usage error if unreadable or over 16 MiB)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_PATCH_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"--patch {path}: cannot read: {exc.strerror}") from None
    if len(data) > MAX_PATCH_BYTES:
        raise UsageError(f"--patch {path}: larger than {MAX_PATCH_BYTES} bytes")
    return data


def write_json(path: Path, obj: Mapping[str, Any]) -> None:
    """Write one ledger-like object atomically, stamping its own ``recorded_at``."""
    atomic_write_json(path, {**obj, "recorded_at": now_utc()})


def changed(ws: Workspace, pins: PinSet) -> Touched:
    """What the patch touched, read from the two trees and judged under the base's layout:
    changed production symbols, oracle moves, pin mutations, compiled code, excluded paths."""
    layout = layout_of(ws.base_dir, pins)
    return judge(ws.changes(), layout, ws.read_base, ws.read_patched)


def resolve_pins(ws: Workspace, pins: PinSet) -> PinSet:
    """``pins`` with every ``covers`` entry resolved in the base tree, by kind
    (:mod:`client.analysis.patch.covers`); an entry that names nothing there, or two things, is a
    pin error (``PinErrors``: every such entry, with the nearest name; ``check`` exits 78)."""
    names = base_names(layout_of(ws.base_dir, pins), ws.base_dir)
    properties, problems = resolve_covers(pins.properties, names)
    if problems:
        where = pins.config.pin_paths[1]
        raise PinErrors([PinError(where, "covers", p) for p in problems])
    return dataclasses.replace(pins, properties=properties)


def introspection(
    ws: Workspace,
    pins: PinSet,
    symbols: Sequence[str],
    suite: Sequence[PropertyPin],
    *,
    shown: int = 5,
) -> dict[str, str]:
    """Changed symbol -> why its mutation evidence is not trusted (absent when it is): the markers
    (:mod:`client.analysis.mutation.introspection`) each changed ``.py`` file has beyond its base,
    counted against a symbol only when the file is in the static import closure
    (:mod:`client.analysis.mutation.imports`) of the batch of a property of ``suite`` that covers
    the symbol. At most ``shown`` markers are named per symbol."""
    marked = _added_markers(ws)
    if not marked:
        return {}
    graph = ImportGraph(layout_of(ws.base_dir, pins), ws.base_dir, ws.patched_dir)
    allowed = pins.fixtures.allowed_commands
    groups = group_properties([(p.id, p.command) for p in suite], allowed)
    batch_of = {pid: group.ids for group in groups for pid in group.ids}
    command = {p.id: p.command for p in suite}
    closures: dict[tuple[str, ...], Closure] = {}
    out: dict[str, str] = {}
    for symbol in symbols:
        found: dict[str, None] = {}
        via: list[str] = []
        for prop in (p for p in suite if covering(p, [symbol])):
            batch = batch_of[prop.id]
            if batch not in closures:
                closures[batch] = graph.closure([command[pid] for pid in batch], allowed)
            closure = closures[batch]
            hits = [
                line for path, lines in marked.items() if closure.reaches(path) for line in lines
            ]
            if hits:
                why = f" (may import any file: {closure.open})" if closure.open else ""
                via.append(prop.id + why)
                found.update(dict.fromkeys(hits))
        if found:
            out[symbol] = _untrusted_reason(via, list(found), shown)
    return out


def _added_markers(ws: Workspace) -> dict[str, list[str]]:
    """Changed ``.py`` path -> ``path:line marker`` of each marker it has beyond its base."""
    marked: dict[str, list[str]] = {}
    for change in ws.changes():
        patched = ws.read_patched(change.path) if change.path.endswith(".py") else None
        if patched is None:
            continue
        added = introspection_added(ws.read_base(change.path), patched)
        if added:
            marked[change.path] = [f"{change.path}:{m.line} {m.what}" for m in added]
    return marked


def _untrusted_reason(via: Sequence[str], lines: Sequence[str], shown: int) -> str:
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    return (
        "the patch adds code that can observe its own mutation, in files the runs of "
        + ", ".join(via)
        + " import ("
        + "; ".join(lines[:shown])
        + more
        + ")"
    )


def classify(root: Path, properties: Sequence[PropertyPin]) -> dict[str, AssertionReport]:
    """Assertion class of each pinned property's test function in the tree ``root``."""
    return classify_properties(root, [(p.id, p.command) for p in properties])


@dataclass(frozen=True, kw_only=True)
class OracleResult:
    """Step 3: R7, R8, the static R4 problems, and compiled code (``reject_provenance``)."""

    oracle_moved: bool
    pin_mutation: bool
    freeze_problems: tuple[str, ...]
    reasons: tuple[str, ...]
    #: One line per compiled or binary file in the patch; non-empty means ``reject_provenance``.
    unreviewable: tuple[str, ...] = ()
    #: Pinned properties that cite flakes, every citation of which holds (may be quarantined).
    valid_citers: frozenset[str] = frozenset()
    #: Changed data files no trustworthy record shows read: ``data:<path>`` (never credit).
    changed_inputs: tuple[str, ...] = ()


def citations_of(
    reports: Mapping[str, AssertionReport],
    touched: Touched,
    read_patched: Callable[[str], bytes | None] | None,
) -> list[Citation]:
    """Every freeze citation of the patched tree: each pinned property's, then each test function
    of a touched ``.py`` file that is not a pinned property's test (docs/reference/pins.md)."""
    out = [
        Citation(cited_by=pid, test_id=r.node_id, ids=r.freeze_ids, texts=r.citations)
        for pid, r in sorted(reports.items())
        if r.freeze_ids
    ]
    pinned = {r.node_id for r in reports.values()}
    for path in touched.touched_paths:
        raw = read_patched(path) if read_patched is not None and path.endswith(".py") else None
        for node, texts in file_citations(raw or b"", path).items():
            if node not in pinned:
                ids = flake_ids_in(texts)
                out.append(Citation(cited_by=node, test_id=node, ids=ids, texts=texts))
    return out


def oracle_and_pins(
    touched: Touched,
    pins: PinSet,
    reports: Mapping[str, AssertionReport],
    base_reports: Mapping[str, AssertionReport],
    clock: dt.datetime,
    *,
    read_patched: Callable[[str], bytes | None] | None = None,
    opened_paths: frozenset[str] | None = None,
) -> OracleResult:
    """Harness or oracle touched, a pinned predicate moved, or a changed file that is neither
    production source nor a pinned fixture that a run may read (R7); pins or the gate's
    configuration edited, or freeze ids added (R8); bad citations (R4); compiled code.

    ``opened_paths``: the repository paths the judge's audit hook saw any property's run open or
    list (issue 20); None — every run today — is no trustworthy record: every such changed file
    is then R7 (:func:`client.analysis.patch.touched.read_inputs`)."""
    inputs = read_inputs(touched.unscored_inputs(pins.config.fixture_root), opened_paths)
    moved = touched.oracle_moves
    env = pins.config.environment
    step = env.build if env is not None else None
    # the signed environment was built from the base's inputs, its outputs are laid onto the
    # workspace: a patch that edits either would be scored against a build it did not get. Under
    # the fixture root the fixture digest judges first (R2: a catalog that is a pinned fixture
    # and the build's input stays a fixture edit; an extra file there fails the digest too).
    root = pins.config.fixture_root.strip("/") + "/"
    built = [
        p
        for p in touched.touched_paths
        if step is not None and (step.reads(p) or step.makes(p)) and not p.startswith(root)
    ]
    predicates = sorted(
        pid
        for pid, base in base_reports.items()
        if pid in reports and reports[pid].predicate_hash != base.predicate_hash
    )
    pin_files = touched.pin_mutations
    added = sorted(
        {
            f"{pid}: {fid}"
            for pid, r in reports.items()
            for fid in r.freeze_ids
            if fid not in (base_reports[pid].freeze_ids if pid in base_reports else ())
        }
    )
    citations = citations_of(reports, touched, read_patched)
    problems = check_citations(citations, pins.flakes, clock)
    valid = frozenset(
        c.cited_by
        for c in citations
        if c.cited_by in reports and not check_citations([c], pins.flakes, clock)
    )
    reasons = [f"R7 oracle moved: {', '.join(moved)}"] if moved else []
    if built:
        reasons.append(
            "R7 the suite's environment moved: the patch edits what its build step reads or makes "
            f"([tool.patchgate.environment.build]): {', '.join(built)}"
        )
    if inputs.oracle:
        reasons.append(
            f"R7 a changed file that is neither production source nor a pinned fixture is an "
            f"oracle input ({inputs.why}): {', '.join(inputs.oracle)}"
        )
    if predicates:
        reasons.append(f"R7 pinned predicate changed: {', '.join(predicates)}")
    if pin_files:
        reasons.append(f"R8 pins or gate configuration edited: {', '.join(pin_files)}")
    if added:
        reasons.append(f"R8 freeze ids added by the patch: {', '.join(added)}")
    reasons.extend(f"R4 {p}" for p in problems)
    return OracleResult(
        oracle_moved=bool(moved or predicates or inputs.oracle or built),
        pin_mutation=bool(pin_files or added),
        freeze_problems=problems,
        reasons=tuple(reasons),
        unreviewable=tuple(f"compiled or binary code in the patch: {p}" for p in touched.compiled),
        valid_citers=valid,
        changed_inputs=tuple(f"data:{p}" for p in inputs.data),
    )


@dataclass(frozen=True, kw_only=True)
class FixtureResult:
    """Step 4: live digest of the patched tree's fixtures against the base pin."""

    status: str
    digest: str = ""
    manifest: Manifest | None = None
    reasons: tuple[str, ...] = ()


def measure(root: Path, pin: Any, fixture_root: str) -> tuple[Manifest, list[str]]:
    """The live manifest of ``root``'s fixtures under ``pin`` and the files whose bytes differ."""
    found = scan_fixture_tree(root, fixture_root, pin.files)
    live = hash_files(found)
    return pin.manifest(live), sorted(p for p, e in live.items() if e.sha256 != pin.files[p])


def fixture_step(root: Path, pins: PinSet, out: Path) -> FixtureResult:
    """Scan and hash; a measured digest is written to fixture_ledger.json (match or mismatch)."""
    try:
        manifest, mismatched = measure(root, pins.fixtures, pins.config.fixture_root)
    except FixtureScanError as exc:
        return FixtureResult(status="mismatch", reasons=(f"R2 {exc}",))
    digest = manifest.digest()
    status = "mismatch" if mismatched else "match"
    if not pins.fixtures.files and not os.path.lexists(root / pins.config.fixture_root):
        # An empty pin and no fixture root: nothing to match. The digest is still the canonical
        # digest of the manifest the signer signs (no file lines: seed, bound and commands only).
        status = "not_applicable"
    FixtureLedger(
        pin_id=manifest.pin_id,
        digest=digest,
        algorithm=manifest.algorithm,
        files={p: {"sha256": e.sha256, "size": e.size} for p, e in sorted(manifest.files.items())},
        status=status,
        mismatched=mismatched,
    ).write(out / FILE_NAMES["fixture"])
    reasons = (
        (f"R2 fixture bytes differ from the base pin: {', '.join(mismatched)}",)
        if mismatched
        else ()
    )
    return FixtureResult(status=status, digest=digest, manifest=manifest, reasons=reasons)


@dataclass(frozen=True, kw_only=True)
class SignatureResult:
    """Step 5: the verified operator envelope, or why there is none."""

    envelope: Envelope | None = None
    problem: str | None = None
    transport: TransportEntry | None = None
    notes: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    executor_keyring: Keyring | None = None


def signature_step(
    s: CheckSettings, manifest: Manifest, out: Path, name: str = "fixture_envelope.json"
) -> SignatureResult:
    """Ask the signer and verify against the operator keyring; write the envelope on success."""
    exec_ring = Keyring.load(s.executor_keyring) if s.executor_keyring else None
    notes: list[str] = []
    try:
        with SignerClient(s.signer, tls=s.signer_tls) as signer:
            if s.operator_keyring is not None:
                ring = Keyring.load(s.operator_keyring)
                notes.append(f"operator keyring from {s.operator_keyring}")
            else:
                ring = signer.get_keyring()
                notes.append(
                    "operator keyring fetched from the signer's GetKeyring (trust on "
                    "first use; pass --operator-keyring to pin it)"
                )
            envelope, statement = signer.sign_and_verify(manifest, ring)
    except TransportError as exc:
        detail = TransportEntry(
            kind=exc.kind,
            detail=exc.detail,
            property_id="",
            run_index=0,
            lane="signer",
            address=s.signer,
        )
        why = unreachable_words(
            who="signer", address=s.signer, kind=exc.kind, detail=exc.detail, lane=s.lane
        )
        return SignatureResult(transport=detail, reasons=(why,), notes=tuple(notes))
    except (RefusedError, EnvelopeError) as exc:
        return SignatureResult(
            problem=f"no valid operator signature: {exc}",
            notes=tuple(notes),
            executor_keyring=exec_ring,
        )
    atomic_write_json(out / name, envelope.to_json())
    notes.append(f"fixture digest signed by operator key {statement.keyid[:16]}")
    return SignatureResult(envelope=envelope, notes=tuple(notes), executor_keyring=exec_ring)


def signed_suite(  # noqa: PLR0917 - the signature step's result and where the suite runs
    s: CheckSettings,
    sig: SignatureResult,
    digest: str,
    workspace: Path,
    fixture_root: str,
    config: ProjectConfig | None = None,
) -> SignedSuite:
    """The signed suite of a signature step that signed (``sig.envelope`` set): its local lane
    on the check's executors, the judge mode of ``workspace`` under ``config`` (the tree's own
    when None: see :func:`judge_mode`), no targets."""
    if sig.envelope is None:
        raise ValueError("the signature step signed nothing")
    return SignedSuite(
        envelope=sig.envelope,
        digest=digest,
        workspace=workspace,
        fixture_root=fixture_root,
        executor_keyring=sig.executor_keyring,
        executors=s.executors,
        remote_executor=s.remote_executor,
        judge=judge_mode(s.judge, workspace, config),
    )


def execute(
    s: CheckSettings,
    signed: SignedSuite,
    lane: str,
    suite: Sequence[PropertyPin],
    say: Say,
    *,
    keep: bool = True,
) -> LaneResult:
    """Run the suite on one lane (see client.gate.runs.execution): ``local`` on the check's
    executors, ``remote`` on its remote executor; every Execute sends the signed suite's targets,
    the changed symbols' code (client.gate.runs.targets), and its judge mode. ``keep``: the local
    lane's signed results go to ``signed_runs/`` of ``s.out`` (client.gate.runs.kept)."""
    addresses = signed.lane_addresses(lane)
    tls = s.remote_tls if lane == "remote" else s.executor_tls
    say(f"{lane} lane: {len(suite)} properties x {s.runs} runs on {len(addresses)} executor(s)")
    memory = durations.default_path()
    terms = LaneTerms(
        runs=s.runs,
        tls=tls,
        concurrency=s.executor_concurrency,
        isolation=s.isolation,
        costs=durations.load(memory, suite) if s.isolation == "run" else {},
        connect=targeted_connect(
            lane,
            tls,
            signed.executor_keyring,
            signed.targets,
            signed.judge,
            # the local lane's signed results are kept beside the receipt (signed_runs/)
            keep=signed_runs_dir(s.out) if keep and lane == "local" else None,
        ),
    )
    result = run_lane(signed, lane, addresses, suite, terms, progress=say)
    durations.save(memory, suite, result.outcomes)  # spreads the next check; decides nothing
    return result


def write_property_ledger(
    out: Path,
    pin_id: str,
    digest: str,
    stab: Mapping[str, Stability],
    *,
    keyids: Callable[[str], str] | None = None,
    oracle_moved: bool = False,
    name: str = FILE_NAMES["property"],
) -> None:
    """property_ledger.json (callers ensure: digest matched, every run recorded; a check writes
    it only when the oracle did not move, ``patchgate properties`` records whether it did).

    ``keyids`` names the executor key id that signed a property's runs (``executor_keyid`` of
    each run entry). ``name``: the file's name in ``out``.
    """
    runs = [
        {**o.to_json(), **({"executor_keyid": keyids(o.property_id)} if keyids else {})}
        for v in stab.values()
        for o in v.runs
        if o is not None
    ]
    PropertyLedger(
        pin_id=pin_id,
        fixture_digest=digest,
        status_by_id={k: v.status for k, v in stab.items()},
        runs=runs,
        oracle_moved=oracle_moved,
    ).write(out / name)


def write_flake_ledger(
    out: Path, observations: Sequence[FlakeObservation], digest: str, reasons: list[str]
) -> None:
    """flake_ledger.json for the first observation (its preconditions already hold:
    docs/reference/receipt.md)."""
    if not observations:
        return
    first = observations[0]
    FlakeLedger(
        test_id=first.test_id,
        flake_id=first.flake_id,
        fixture_digest=digest,
        observed=first.observed,
    ).write(out / FILE_NAMES["flake"])
    reasons.extend(
        f"flake {o.flake_id} observed on {o.test_id} (never credit)" for o in observations
    )


def write_freeze_proposals(
    out: Path,
    suite: Sequence[PropertyPin],
    stab: Mapping[str, Stability],
    classes: Mapping[str, str],
    digest: str,
) -> None:
    """freeze_proposal.json when an eligible real predicate disagreed with itself."""
    proposals = [
        p
        for p in (
            freeze_proposal(
                stab[prop.id],
                prop,
                fixture_digest=digest,
                assertion_class=classes.get(prop.id, "opaque"),
            )
            for prop in suite
            if prop.id in stab
        )
        if p is not None
    ]
    if proposals:
        write_json(
            out / "freeze_proposal.json", {"kind": "freeze_proposal", "proposals": proposals}
        )


def judge_mode(name: JudgeName, workspace: Path, config: ProjectConfig | None) -> JudgeMode:
    """The judge mode of a check's Executes: the source roots and production names of the tree
    to run, under the base's configuration (the tree's own when none is given: the base tree)."""
    if config is None:
        try:
            config = load_config(DirSource(workspace))
        except PatchgateError:
            config = ProjectConfig()
    src = workspace / "src"
    roots = config.roots(has_src=src.is_dir() and not src.is_symlink())
    sent, names = production_names(workspace, roots, config.oracle_paths)
    return JudgeMode(judge=name, source_roots=sent, production=names)
