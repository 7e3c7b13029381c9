"""``patchgate properties``: the property ledger alone, of one revision, on a digest the caller
expects (docs/reference/exit-codes.md; the source article's step 2 on this pipeline).

The pins come from ``--base``; the tree scored is ``--rev`` (default ``HEAD``), read through
:func:`client.gate.workspace.tree_at`. In order, the first failing step decides and nothing is
written unless every step holds:

1. the live fixture digest of ``--rev`` under the base's fixture pin equals ``--expect-digest``
   (a missing, extra, unsafe or changed file, no fixture root at all, or another digest: exit 2);
2. the operator signs that manifest and the envelope verifies (transport: 4; no valid operator
   signature: 1);
3. every pinned property but ``external_probe`` (and those a valid freeze citation quarantines, as
   in a check) runs twice through the executors — the gate's own run machinery, no mutation stage
   (an executor refusal: 2; a run without an outcome: 4);
4. ``property_ledger.json`` is written: ``status_by_id``, the runs, and ``oracle_moved``, true
   when the oracle (oracle paths, harness, a pinned predicate) differs between ``--base`` and
   ``--rev``.

It judges no patch: no admission, no credit, no receipt. ``check`` does all of this and more for
a patch; ``properties`` records what the suite did on a revision, for ``flake-observe`` and
``dual-pin``.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from client.gate import steps
from client.gate.settings import CheckSettings
from client.gate.workspace import Workspace, base_pins, resolve_rev, tree_at
from client.verdict.citations import Citation, citation_problems
from client.verdict.flakes import quarantined
from client.verdict.stability import Stability, assess_all
from patchgate.digest import Manifest
from patchgate.errors import FixtureScanError
from patchgate.pins import PinSet, PropertyPin

__all__ = ["EXIT_BROKEN", "PropertiesResult", "run_properties"]

EXIT_BROKEN = 1  # no valid operator signature
_EXIT_UNSCORED = 2
_EXIT_UNAVAILABLE = 4


@dataclass(kw_only=True)
class PropertiesResult:
    """The exit code, the ledger's path when one was written, and why."""

    exit_code: int
    ledger: Path | None = None
    digest: str = ""
    oracle_moved: bool = False
    status_by_id: dict[str, str] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()


def _suite(pins: PinSet, root: Path, clock: dt.datetime) -> tuple[list[PropertyPin], list[str]]:
    reports = steps.classify(root, pins.properties)
    # As in a check: only a citation that holds (client.verdict.citations) quarantines.
    holding = {
        pid: r.freeze_ids
        for pid, r in reports.items()
        if r.freeze_ids
        and not citation_problems(
            Citation(cited_by=pid, test_id=r.node_id, ids=r.freeze_ids, texts=r.citations),
            pins.flakes,
            clock,
        )
    }
    held = quarantined(
        properties=pins.properties,
        assertion_classes={pid: r.assertion_class for pid, r in reports.items()},
        citations=holding,
        flakes=pins.flakes,
        clock=clock,
    )
    runs = [p for p in pins.properties if p.property_class != "external_probe" and p.id not in held]
    return runs, [f"{pid}: {why}" for pid, why in held.items()]


def oracle_moved(ws: Workspace, pins: PinSet) -> bool:
    """The oracle differs between the two trees: an oracle or harness path, or a pinned
    predicate (its hash), wherever its file lives."""
    if steps.changed(ws, pins).oracle_moves:
        return True
    base = steps.classify(ws.base_dir, pins.properties)
    other = steps.classify(ws.patched_dir, pins.properties)
    return any(other[p].predicate_hash != r.predicate_hash for p, r in base.items())


def _digest(root: Path, pins: PinSet, expect: str) -> tuple[Manifest | None, str, list[str]]:
    """(manifest, live digest, why it is refused) of the tree's fixtures."""
    fixture_root = pins.config.fixture_root
    if not (root / fixture_root).exists() and not (root / fixture_root).is_symlink():
        return None, "", [f"no fixture root {fixture_root}/: a digest of nothing is no match"]
    try:
        manifest, mismatched = steps.measure(root, pins.fixtures, fixture_root)
    except FixtureScanError as exc:
        return None, "", [f"R2 {exc}"]
    live = manifest.digest()
    if mismatched:
        changed = ", ".join(mismatched)
        return manifest, live, [f"R2 fixture bytes differ from the base pin: {changed}"]
    if live != expect:
        return manifest, live, [f"the live digest {live} is not the expected {expect}"]
    return manifest, live, []


def run_properties(
    s: CheckSettings, *, rev: str, expect_digest: str, ledger: Path, say: Callable[[str], None]
) -> PropertiesResult:
    """Run the steps of the module docstring; ``ledger`` is written only on success."""
    clock = s.clock or dt.datetime.now(dt.UTC)
    pins = base_pins(s.repo, s.base)
    commit = resolve_rev(s.repo, rev)
    with (
        tree_at(s.repo, s.base) as base_dir,
        tree_at(s.repo, commit) as root,
        tempfile.TemporaryDirectory(prefix="patchgate-properties-") as scratch,
    ):
        ws = Workspace(repo=s.repo, base_rev=s.base, base_dir=base_dir, patched_dir=root)
        moved = oracle_moved(ws, pins)
        manifest, live, refused = _digest(root, pins, expect_digest)
        if refused or manifest is None:
            return PropertiesResult(exit_code=_EXIT_UNSCORED, digest=live, reasons=tuple(refused))
        sig = steps.signature_step(s, manifest, Path(scratch))
        if sig.transport is not None:
            return PropertiesResult(exit_code=_EXIT_UNAVAILABLE, digest=live, reasons=sig.reasons)
        if sig.envelope is None:
            why = sig.problem or "no operator signature"
            return PropertiesResult(exit_code=EXIT_BROKEN, digest=live, reasons=(why,))
        suite, held = _suite(pins, root, clock)
        for line in held:
            say(line)
        signed = steps.signed_suite(s, sig, live, root, pins.config.fixture_root)
        lane = steps.execute(s, signed, "local", suite, say)
    stab: dict[str, Stability] = assess_all([p.id for p in suite], lane.outcomes, s.runs)
    if lane.refusals:
        return PropertiesResult(exit_code=_EXIT_UNSCORED, digest=live, reasons=tuple(lane.refusals))
    if lane.transport or any(v.status == "incomplete" for v in stab.values()):
        lost = tuple(f"transport: {t.kind} {t.detail}" for t in lane.transport)
        lost = lost or ("a run came back without an outcome",)
        return PropertiesResult(exit_code=_EXIT_UNAVAILABLE, digest=live, reasons=lost)
    steps.write_property_ledger(
        ledger.parent, pins.fixtures.pin_id, live, stab, keyids=lane.keyid_of, oracle_moved=moved,
        name=ledger.name,
    )  # fmt: skip
    return PropertiesResult(
        exit_code=0,
        ledger=ledger,
        digest=live,
        oracle_moved=moved,
        status_by_id={k: v.status for k, v in stab.items()},
        reasons=tuple(held),
    )
