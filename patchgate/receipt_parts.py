"""The receipt's parts as typed records: what ``transport``, ``lanes``, ``evidence`` and
``mutation`` hold (docs/reference/receipt.md).

``TypedDict`` types, so the JSON written is the same plain object it always was;
``tests/unit/test_receipt_parts.py`` holds each record's keys to the receipt's JSON Schema.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

__all__ = ["EvidenceEntry", "LaneSummary", "MutationRecord", "TransportEntry"]


class TransportEntry(TypedDict):
    """One run left without an outcome by infrastructure (a ``transport`` item)."""

    kind: str  # a TransportKind
    detail: str
    property_id: str
    run_index: int
    lane: str
    address: str
    retried: NotRequired[bool]  # an attempt that was re-run: it left no run missing


class LaneSummary(TypedDict):
    """What one lane ran (``lanes.local``, ``lanes.remote``)."""

    executors: dict[str, dict[str, Any]]
    status_by_id: dict[str, str]
    refusals: list[str]
    transport: int
    retried: int
    results: list[dict[str, Any]]


class EvidenceEntry(TypedDict):
    """What one property showed for one changed symbol (``evidence.<symbol>.<property>``)."""

    runs: list[str | None]
    assertion_class: str
    executed: NotRequired[bool]
    mutants: int
    killed: int
    survivors: list[str]
    sites: int
    scored: int
    score: float | None
    crashed: list[str]
    hung: list[str]
    controls: int
    controls_failed: list[str]
    seed: NotRequired[int]


class MutationRecord(TypedDict, total=False):
    """The mutation stage as the receipt records it (``mutation``)."""

    enabled: bool
    allow_unmutated: bool
    k: int
    min_mutation_score: float
    controls_required: int
    mutants_run: int
    variants_run: int
    elapsed_ms: int
    symbols: dict[str, dict[str, Any]]
    untrusted: dict[str, str]
