"""Two-run stability of one property (docs/architecture.md) and freeze proposals.

* both runs recorded with the same outcome hash -> that outcome is the result;
* both runs failed (``fail``, ``error`` or ``exceeded_bound``, even with different messages) -> a
  defect: the status is the failing outcome, and nothing is ever frozen for it;
* one run passed and the other did not -> ``unstable``;
* an ``idempotent_io`` property whose two runs both reported the hash of their output tree, and the
  hashes differ -> ``unstable`` with the reason "two applies left different trees" (two applies of
  an idempotent operation leave the same tree; a defect in both runs stays a defect);
* a run missing (a transport record instead of an outcome) -> ``incomplete``: nothing is decided,
  and a missing run is never a disagreement.

A freeze is only *proposed* (a file for a person), following the class table: never for
``pure_fn`` (a pure function that disagrees with itself is a defect, not a flake), for
``idempotent_io`` only when both runs left the same output tree, never for an ineligible class,
and only for a real predicate with a real disagreement. A proposal names the fixture digest and
both runs' outcome hashes. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from patchgate.pins import PropertyPin
from patchgate.results import RunOutcome

__all__ = [
    "STATUSES",
    "Stability",
    "assess",
    "assess_all",
    "freeze_proposal",
]

STATUSES = ("pass", "fail", "error", "exceeded_bound", "unstable", "incomplete")
FAILING = ("fail", "error", "exceeded_bound")
TREES_DIFFER = "two applies left different trees"


@dataclass(frozen=True, kw_only=True)
class Stability:
    """The two-run verdict on one property."""

    property_id: str
    status: str
    runs: tuple[RunOutcome | None, ...]
    reason: str = ""  # why it is unstable, when that is not a pass beside a failure

    @property
    def passed_both(self) -> bool:
        """Every run recorded and passed."""
        return self.status == "pass"

    @property
    def defect(self) -> bool:
        """Failed in every run: a property miss, never a flake."""
        return self.status in FAILING

    @property
    def disagreement(self) -> bool:
        """Every run recorded, and the outcome hashes differ with a pass among them."""
        return self.status == "unstable"

    def outcome(self, run_index: int) -> str:
        """The outcome of run ``run_index`` (1-based), or ``-`` if it was not recorded."""
        run = self.runs[run_index - 1] if run_index - 1 < len(self.runs) else None
        return run.outcome if run is not None else "-"


def _trees_differ(present: Sequence[RunOutcome]) -> bool:
    """Every run reported its output tree, and not all the same one."""
    trees = [o.tree_hash for o in present]
    return all(trees) and len(set(trees)) > 1


def assess(
    property_id: str, outcomes: Iterable[RunOutcome], runs: int = 2, *, same_tree: bool = False
) -> Stability:
    """Assess ``runs`` runs of one property from its recorded outcomes (1-based run indexes).

    ``same_tree``: the property is ``idempotent_io``, so its runs must also leave the same tree.
    """
    by_index: dict[int, RunOutcome] = {}
    for o in outcomes:
        if o.property_id == property_id and 1 <= o.run_index <= runs:
            by_index.setdefault(o.run_index, o)
    slots = tuple(by_index.get(i) for i in range(1, runs + 1))
    present = [o for o in slots if o is not None]
    if len(present) < runs:
        status = "incomplete"
    elif len({o.outcome_hash for o in present}) == 1 or all(o.outcome in FAILING for o in present):
        status = present[0].outcome
    else:
        status = "unstable"
    if same_tree and status == "pass" and _trees_differ(present):
        return Stability(
            property_id=property_id, status="unstable", runs=slots, reason=TREES_DIFFER
        )
    return Stability(property_id=property_id, status=status, runs=slots)


def assess_all(
    property_ids: Sequence[str],
    outcomes: Sequence[RunOutcome],
    runs: int = 2,
    *,
    same_tree: Collection[str] = (),
) -> dict[str, Stability]:
    """``assess`` for each property id; ``same_tree``: the ids of ``idempotent_io`` properties."""
    return {pid: assess(pid, outcomes, runs, same_tree=pid in same_tree) for pid in property_ids}


def freeze_proposal(
    stability: Stability, prop: PropertyPin, *, fixture_digest: str, assertion_class: str
) -> dict[str, Any] | None:
    """A freeze proposal for a person, or None when none may be proposed.

    Only an eligible class whose assertion is a real predicate, with a real disagreement (both runs
    recorded, one passed, hashes differ), may propose one -- and of the eligible classes, never
    ``pure_fn``, and ``idempotent_io`` only when both runs reported the same output tree. The
    proposal names the fixture digest and both runs' outcome hashes; it is never written to pins/.
    """
    if not stability.disagreement or not prop.eligible or assertion_class != "property":
        return None
    if stability.reason or prop.property_class != "idempotent_io":
        return None  # pure_fn: a defect; trees that differ: not idempotent
    runs = [o for o in stability.runs if o is not None]
    trees = {o.tree_hash for o in runs}
    if len(trees) != 1 or not next(iter(trees)):
        return None  # not both measured, or not the same tree
    return {
        "kind": "freeze_proposal",
        "status": "proposed",
        "property_id": prop.id,
        "property_class": prop.property_class,
        "test_id": prop.command[-1],
        "fixture_digest": fixture_digest,
        "outcome_hashes": [o.outcome_hash for o in runs],
        "tree_hash": next(iter(trees)),
        "observed": [
            {
                "run_index": o.run_index,
                "outcome": o.outcome,
                "failure_signature": o.failure_signature,
            }
            for o in stability.runs
            if o is not None
        ],
        "note": "a proposal for a person to review; patchgate never writes it into pins/",
    }
