"""The closed sets of words patchgate reads and writes, each one ``Literal`` type.

The run-time tuples the modules check a decoded value against (``OUTCOMES``, ``POSTURES``, ...)
are made from these types, so a word is added in one place. On disk and on the wire they stay
plain strings: the receipt and the protocol do not change.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "DECISIONS",
    "FAILURE_KINDS",
    "FIXTURE_STATUSES",
    "ISOLATIONS",
    "JUDGE_MODES",
    "OUTCOMES",
    "POSTURES",
    "TRANSPORT_KINDS",
    "Decision",
    "FailureKind",
    "FixtureStatus",
    "Isolation",
    "JudgeName",
    "Outcome",
    "Posture",
    "TransportKind",
]

#: What an assertion did in one run.
Outcome = Literal["pass", "fail", "error", "exceeded_bound"]
#: What made a run not pass ("" for a pass).
FailureKind = Literal["", "assertion", "subject", "judge_error"]
#: Infrastructure that failed: never an outcome, never scored.
TransportKind = Literal[
    "unavailable",
    "empty_response",
    "deadline",
    "sandbox_start_failed",
    "image_missing",
    "resource_exhausted",
    "internal",
    "killed_externally",
]
#: ``run``: a sandbox per command-prefix group and run; ``property``: per property and run.
Isolation = Literal["run", "property"]
#: ``on``: the judge apart from the subject; ``off``: one process.
JudgeName = Literal["on", "off"]
#: The admission matrix's answer.
Decision = Literal["reject_provenance", "reject_fixture_role", "reject_class", "admit"]
#: The merge table's answer.
Posture = Literal[
    "reject_unscored",
    "reject_admission",
    "reject_oracle_moved",
    "reject_pin_mutation",
    "reject_fixture_drift",
    "reject_property_miss",
    "reject_credit",
    "unavailable",
    "human_review",
    "review",
]
#: The live fixture digest against the base pin.
FixtureStatus = Literal["match", "mismatch", "not_applicable"]

OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
FAILURE_KINDS: tuple[FailureKind, ...] = get_args(FailureKind)
TRANSPORT_KINDS: tuple[TransportKind, ...] = get_args(TransportKind)
ISOLATIONS: tuple[Isolation, ...] = get_args(Isolation)
JUDGE_MODES: tuple[JudgeName, ...] = get_args(JudgeName)
DECISIONS: tuple[Decision, ...] = get_args(Decision)
POSTURES: tuple[Posture, ...] = get_args(Posture)
FIXTURE_STATUSES: tuple[FixtureStatus, ...] = get_args(FixtureStatus)
