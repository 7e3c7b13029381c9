"""Run outcomes and transport records: two different types, all the way up (docs/architecture.md).

An outcome (``pass``, ``fail``, ``error``, ``exceeded_bound``) is what an assertion did. A transport
record (``unavailable``, ``empty_response``, ...) is infrastructure that failed; it never becomes an
outcome, and nothing is scored from it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from typing import Any, TypedDict, Unpack

from patchgate.errors import TRANSPORT_KINDS
from patchgate.receipt_parts import TransportEntry
from patchgate.v1 import common_pb2
from patchgate.vocabulary import FAILURE_KINDS as _FAILURE_KINDS
from patchgate.vocabulary import OUTCOMES as _OUTCOMES

__all__ = [
    "CASE_OUTCOMES",
    "FAILURE_KINDS",
    "OUTCOMES",
    "TRANSPORT_KINDS",
    "RunOutcome",
    "TransportRecord",
    "normalize_failure",
    "outcome_hash",
]

OUTCOMES = _OUTCOMES  # the vocabulary's
#: What made a run not pass (``RunOutcome.failure_kind``; "" for a pass).
FAILURE_KINDS = frozenset(_FAILURE_KINDS)
#: What the reporter says of one case of a parametrized property (``skip`` makes it ``error``).
CASE_OUTCOMES = frozenset({*OUTCOMES, "skip"})
_OUTCOME_TO_PB = {
    "pass": common_pb2.OUTCOME_PASS,
    "fail": common_pb2.OUTCOME_FAIL,
    "error": common_pb2.OUTCOME_ERROR,
    "exceeded_bound": common_pb2.OUTCOME_EXCEEDED_BOUND,
}
_PB_TO_OUTCOME = {v: k for k, v in _OUTCOME_TO_PB.items()}
_TRANSPORT_TO_PB: dict[str, int] = {
    k: i + 1 for i, k in enumerate(TRANSPORT_KINDS)
}  # enum order of common.proto
_PB_TO_TRANSPORT = {v: k for k, v in _TRANSPORT_TO_PB.items()}


class RunFindings(TypedDict, total=False):
    """What a run showed beside its outcome (the keywords of :meth:`RunOutcome.make`)."""

    executed: tuple[str, ...]  # the targets its tests executed
    tree_hash: str  # idempotent_io: the output tree's hash
    cases: tuple[tuple[str, str], ...]  # a parametrized property's (node id, outcome) pairs
    failure_kind: str  # what made it not pass ("" for a pass)
    variant: int  # mutation v2: the 1-based variant it ran in (0: none)


_ADDR = re.compile(r"0x[0-9a-fA-F]+")
_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b"
)
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|us|ns|seconds?)\b")
_TMP = re.compile(r"/tmp/[^\s'\":]+")  # noqa: S108 -- matches temp paths in text, creates none
_WS = re.compile(r"\s+")


def normalize_failure(text: str) -> str:
    """A failure signature stable across runs: addresses, times, durations, temp paths stripped."""
    text = _ADDR.sub("0x?", text)
    text = _TIME.sub("<time>", text)
    text = _DURATION.sub("<duration>", text)
    text = _TMP.sub("/tmp/<path>", text)  # noqa: S108 -- a placeholder string
    return _WS.sub(" ", text).strip()[:2000]


def outcome_hash(outcome: str, failure_signature: str) -> str:
    """sha256 hex of ``outcome + "\\n" + normalized failure signature``."""
    return hashlib.sha256(f"{outcome}\n{normalize_failure(failure_signature)}".encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class RunOutcome:
    """The assertion result of one run of one property."""

    property_id: str
    run_index: int
    outcome: str
    outcome_hash: str
    failure_signature: str = ""
    duration_ms: int = 0
    executed: tuple[str, ...] = ()  # target code the property's tests called (the reporter's view)
    #: sha256 of the run's output area (idempotent_io properties; "" when not measured)
    tree_hash: str = ""
    #: A parametrized property's cases: (pytest node id, the reporter's outcome of it), sorted by
    #: node id; empty for a plain test. ``outcome`` is the rule over all of them.
    cases: tuple[tuple[str, str], ...] = ()
    #: What failed: "assertion", "subject", "judge_error", or "" for a pass (common.proto).
    failure_kind: str = ""
    #: The 1-based index of the request's variant this run used (0: no variants).
    variant: int = 0

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}")
        for case in self.cases:
            if len(case) != 2 or case[1] not in CASE_OUTCOMES:
                raise ValueError(f"unknown case outcome {case!r}")
        if self.failure_kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {self.failure_kind!r}")

    @classmethod
    def make(
        cls,
        property_id: str,
        run_index: int,
        outcome: str,
        failure: str = "",
        duration_ms: int = 0,
        **found: Unpack[RunFindings],
    ) -> RunOutcome:
        """Build with the normalized signature and its outcome hash."""
        sig = normalize_failure(failure) if outcome != "pass" else ""
        return cls(
            property_id=property_id,
            run_index=run_index,
            outcome=outcome,
            outcome_hash=outcome_hash(outcome, sig),
            failure_signature=sig,
            duration_ms=duration_ms,
            executed=tuple(found.get("executed", ())),
            tree_hash=found.get("tree_hash", ""),
            cases=tuple(sorted(found.get("cases", ()))),
            failure_kind=found.get("failure_kind", "") if outcome != "pass" else "",
            variant=found.get("variant", 0),
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON object (``cases`` as ``{node id: outcome}``, only when there are cases;
        ``failure_kind`` and ``variant`` only when set)."""
        out = asdict(self)
        out.pop("cases")
        if self.cases:
            out["cases"] = dict(self.cases)
        for key, default in (("failure_kind", ""), ("variant", 0)):
            if out[key] == default:
                out.pop(key)
        return out

    def to_proto(self) -> common_pb2.RunOutcome:
        """Wire form."""
        return common_pb2.RunOutcome(
            property_id=self.property_id,
            run_index=self.run_index,
            outcome=_OUTCOME_TO_PB[self.outcome],
            outcome_hash=self.outcome_hash,
            failure_signature=self.failure_signature,
            duration_ms=self.duration_ms,
            executed=list(self.executed),
            tree_hash=self.tree_hash,
            cases=[common_pb2.CaseOutcome(nodeid=n, outcome=o) for n, o in self.cases],
            failure_kind=self.failure_kind,
            variant=self.variant,
        )

    @classmethod
    def from_proto(cls, msg: common_pb2.RunOutcome) -> RunOutcome:
        """From the wire form; an unspecified outcome is a ValueError."""
        if msg.outcome not in _PB_TO_OUTCOME:
            raise ValueError("outcome unspecified")
        return cls(
            property_id=msg.property_id,
            run_index=msg.run_index,
            outcome=_PB_TO_OUTCOME[msg.outcome],
            outcome_hash=msg.outcome_hash,
            failure_signature=msg.failure_signature,
            duration_ms=msg.duration_ms,
            executed=tuple(msg.executed),
            tree_hash=msg.tree_hash,
            cases=tuple((c.nodeid, c.outcome) for c in msg.cases),
            failure_kind=msg.failure_kind,
            variant=msg.variant,
        )


@dataclass(frozen=True, kw_only=True)
class TransportRecord:
    """Infrastructure failure for one run (or the whole request when ``property_id`` is empty)."""

    kind: str
    detail: str
    property_id: str = ""
    run_index: int = 0
    lane: str = "local"
    address: str = ""

    def __post_init__(self) -> None:
        if self.kind not in TRANSPORT_KINDS:
            raise ValueError(f"unknown transport kind {self.kind!r}")

    def to_json(self) -> TransportEntry:
        """Plain JSON object (a receipt's ``transport`` item)."""
        return TransportEntry(
            kind=self.kind,
            detail=self.detail,
            property_id=self.property_id,
            run_index=self.run_index,
            lane=self.lane,
            address=self.address,
        )

    def retried(self) -> TransportEntry:
        """The JSON object of an attempt that was re-run (it left no run missing)."""
        entry = self.to_json()
        entry["retried"] = True
        return entry

    def to_proto(self) -> common_pb2.TransportRecord:
        """Wire form (lane and address are the client's, not sent)."""
        return common_pb2.TransportRecord(
            property_id=self.property_id,
            run_index=self.run_index,
            kind=_TRANSPORT_TO_PB[self.kind],  # type: ignore[arg-type]
            detail=self.detail,
        )

    @classmethod
    def from_proto(cls, msg: common_pb2.TransportRecord, **extra: str) -> TransportRecord:
        """From the wire form; an unspecified kind becomes ``internal``."""
        return cls(
            kind=_PB_TO_TRANSPORT.get(msg.kind, "internal"),
            detail=msg.detail,
            property_id=msg.property_id,
            run_index=msg.run_index,
            **extra,
        )
