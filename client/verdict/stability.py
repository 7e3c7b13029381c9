"""Two-run stability of one property (DESIGN §6 step 8) and freeze proposals.

* both runs recorded with the same outcome hash -> that outcome is the result;
* both runs failed (``fail``, ``error`` or ``exceeded_bound``, even with different messages) -> a
  defect: the status is the failing outcome, and nothing is ever frozen for it;
* one run passed and the other did not -> ``unstable``;
* a run missing (a transport record instead of an outcome) -> ``incomplete``: nothing is decided,
  and a missing run is never a disagreement.

A freeze is only *proposed* (a file for a person), only for an eligible class with a real
disagreement. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


@dataclass(frozen=True, kw_only=True)
class Stability:
    """The two-run verdict on one property."""

    property_id: str
    status: str
    runs: tuple[RunOutcome | None, ...]

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


def assess(property_id: str, outcomes: Iterable[RunOutcome], runs: int = 2) -> Stability:
    """Assess ``runs`` runs of one property from its recorded outcomes (1-based run indexes)."""
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
    return Stability(property_id=property_id, status=status, runs=slots)


def assess_all(
    property_ids: Sequence[str], outcomes: Sequence[RunOutcome], runs: int = 2
) -> dict[str, Stability]:
    """``assess`` for each property id."""
    return {pid: assess(pid, outcomes, runs) for pid in property_ids}


def freeze_proposal(
    stability: Stability, prop: PropertyPin, *, fixture_digest: str, assertion_class: str
) -> dict[str, Any] | None:
    """A freeze proposal for a person, or None when none may be proposed.

    Only an eligible class whose assertion is a real predicate, with a real disagreement (both runs
    recorded, one passed, hashes differ), may propose one. The proposal is never written to pins/.
    """
    if not stability.disagreement or not prop.eligible or assertion_class != "property":
        return None
    return {
        "kind": "freeze_proposal",
        "status": "proposed",
        "property_id": prop.id,
        "property_class": prop.property_class,
        "test_id": prop.command[-1],
        "fixture_digest": fixture_digest,
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
