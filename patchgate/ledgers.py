"""Ledger and receipt records (docs/reference/receipt.md), with JSON (de)serialization and atomic
writes.

Each ledger stamps its own ``recorded_at`` when it is written; none copies another's. A refused
step writes no file: callers build a record only once the step has succeeded.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

from patchgate.atomicfile import atomic_write_json
from patchgate.errors import LedgerError
from patchgate.vocabulary import FIXTURE_STATUSES as _FIXTURE_STATUSES
from patchgate.vocabulary import POSTURES as _POSTURES

__all__ = [
    "DUAL_PIN",
    "FILE_NAMES",
    "FIXTURE_STATUSES",
    "POSTURES",
    "RECEIPT_SCHEMAS",
    "RECEIPT_V1",
    "RECEIPT_V2",
    "REJECTION_CODES",
    "Admission",
    "DriftRecord",
    "FixtureLedger",
    "FlakeLedger",
    "PropertyLedger",
    "Receipt",
    "Record",
    "now_utc",
    "read_record",
]

REJECTION_CODES = ("R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R9")
POSTURES = _POSTURES  # the vocabulary's
FILE_NAMES = {
    "fixture": "fixture_ledger.json",
    "property": "property_ledger.json",
    "flake": "flake_ledger.json",
    "drift": "drift.json",
    "admission": "admission.json",
    "receipt": "receipt.json",
}


_STAMP_LOCK = threading.Lock()
_last_stamp: list[dt.datetime] = []


def now_utc() -> str:
    """The current UTC time as RFC 3339 with a ``Z`` suffix, millisecond precision.

    Strictly increasing within one process: a stamp that would equal (or, after a clock step,
    precede) the last one is the last one plus a millisecond. So the records one check writes
    never share a ``recorded_at`` -- two ledgers with the same stamp are copies, and ``dual-pin``
    refuses them as such.
    """
    now = dt.datetime.now(dt.UTC)
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)
    with _STAMP_LOCK:
        if _last_stamp and now <= _last_stamp[0]:
            now = _last_stamp[0] + dt.timedelta(milliseconds=1)
        _last_stamp[:] = [now]
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(kw_only=True)
class Record:
    """Base of ledger records: JSON in and out, atomic write stamping ``recorded_at``."""

    kind: ClassVar[str] = ""
    recorded_at: str = ""

    def to_json(self) -> dict[str, Any]:
        """The JSON object, with ``kind`` first where the record has one.

        Field values are already JSON types (no nested dataclasses), so this is a shallow view:
        ``dataclasses.asdict`` would deep-copy ledgers of many thousand files for nothing.
        """
        body = {f.name: getattr(self, f.name) for f in fields(self)}
        return {"kind": self.kind, **body} if self.kind else body

    @classmethod
    def from_json(cls, obj: object) -> Self:
        """Parse; unknown, missing or mistyped fields are a LedgerError."""
        if not isinstance(obj, dict):
            raise LedgerError(f"{cls.__name__}: expected a JSON object")
        body = dict(obj)
        if cls.kind and body.pop("kind", None) != cls.kind:
            raise LedgerError(f"{cls.__name__}: kind must be {cls.kind!r}")
        names = {f.name for f in fields(cls)}
        unknown = set(body) - names
        if unknown:
            raise LedgerError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
        hints = typing.get_type_hints(cls)
        for name, value in body.items():
            if not _conforms(value, hints[name]):
                raise LedgerError(f"{cls.__name__}: {name}: expected {hints[name]}")
        try:
            return cls(**body)
        except TypeError as exc:
            raise LedgerError(f"{cls.__name__}: {exc}") from None

    def write(self, path: Path, *, stamp: bool = True) -> None:
        """Stamp ``recorded_at`` (unless told not to) and write atomically."""
        if stamp:
            self.recorded_at = now_utc()
        atomic_write_json(Path(path), self.to_json())


def _conforms(value: object, tp: Any) -> bool:
    """Whether a JSON value fits a field type (str, int, float, bool, Any, list[T], dict[K, V])."""
    if tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin is list:
        (item,) = typing.get_args(tp)
        return isinstance(value, list) and all(_conforms(v, item) for v in value)
    if origin is dict:
        key, val = typing.get_args(tp)
        return isinstance(value, dict) and all(
            _conforms(k, key) and _conforms(v, val) for k, v in value.items()
        )
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, tp)


R = TypeVar("R", bound=Record)


def read_record(cls: type[R], path: Path) -> R:
    """Read one record file; every problem is a LedgerError naming the file."""
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path}: not JSON: {exc}") from None
    try:
        return cls.from_json(obj)
    except LedgerError as exc:
        raise LedgerError(f"{path}: {exc}") from None


@dataclass(kw_only=True)
class FixtureLedger(Record):
    """``fixture_ledger.json``: the live digest of the fixture files and how it compares."""

    kind: ClassVar[str] = "fixture"
    pin_id: str
    digest: str
    algorithm: str = "sha256"
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: str = "match"  # "match", "mismatch" or "not_applicable"
    mismatched: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class PropertyLedger(Record):
    """``property_ledger.json``: per-property status over two runs, on one fixture digest."""

    kind: ClassVar[str] = "property"
    pin_id: str
    fixture_digest: str
    status_by_id: dict[str, str] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)
    oracle_moved: bool = False


@dataclass(kw_only=True)
class FlakeLedger(Record):
    """``flake_ledger.json``: one observation of a pre-listed, unexpired flake."""

    kind: ClassVar[str] = "flake"
    test_id: str
    flake_id: str
    fixture_digest: str
    observed: str


@dataclass(kw_only=True)
class DriftRecord(Record):
    """``drift.json``: two property ledgers (two pins) compared (docs/reference/receipt.md: ``kind``
    ``dual_pin``, ``drift``, ``left_digest``, ``right_digest``, ``recorded_at``; ``left`` and
    ``right`` hold each side, ``differing`` the property ids whose status differs)."""

    kind: ClassVar[str] = "dual_pin"
    left: dict[str, Any] = field(default_factory=dict)
    right: dict[str, Any] = field(default_factory=dict)
    drift: bool = False
    differing: list[str] = field(default_factory=list)
    #: the fixture digest of each side's pin
    left_digest: str = ""
    right_digest: str = ""


@dataclass(kw_only=True)
class Admission(Record):
    """``admission.json``: the decision of the admission matrix and the row that fired."""

    kind: ClassVar[str] = "admission"
    decision: str
    row: str
    reasons: list[str] = field(default_factory=list)
    suite: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    #: ``property id: entry`` of each ``covers`` entry that names no symbol of the base tree.
    unknown_covers: list[str] = field(default_factory=list)


RECEIPT_V1 = "patchgate/receipt/v1"
RECEIPT_V2 = "patchgate/receipt/v2"
RECEIPT_SCHEMAS = (RECEIPT_V1, RECEIPT_V2)
FIXTURE_STATUSES = _FIXTURE_STATUSES  # the vocabulary's
DUAL_PIN = ("not_run", "agree", "drift", "refused")


@dataclass(kw_only=True)
class Receipt(Record):
    """``receipt.json`` (``recorded_at`` is kept apart from ``review_clock``).

    Schema v2 adds ``uncredited`` (symbol -> why it earned nothing), ``evidence`` (symbol ->
    property -> what is known of its runs), ``flake_observations``, ``dual_pin`` and
    ``override``; a v1 receipt reads with those empty (``dual_pin`` ``not_run``). An unknown
    schema is a LedgerError.
    """

    schema: str = RECEIPT_V2
    review_clock: str = ""
    patch_sha256: str = ""
    decision: str = ""
    posture: str = ""
    changed_symbols: list[str] = field(default_factory=list)
    excluded_paths: list[str] = field(default_factory=list)
    #: changed data files a run may read that no trustworthy record shows read: ``data:<path>``
    #: (each also in ``uncredited``; never credit)
    changed_inputs: list[str] = field(default_factory=list)
    credits: dict[str, int] = field(default_factory=dict)
    coverage: float = 0.0
    uncredited: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)
    fixture_status: str = ""
    fixture_digest: str = ""
    freeze_citations: list[str] = field(default_factory=list)
    flake_observations: list[dict[str, Any]] = field(default_factory=list)
    predicate_hashes: dict[str, str] = field(default_factory=dict)
    rejection_codes: list[str] = field(default_factory=list)
    transport: list[dict[str, Any]] = field(default_factory=list)
    lanes: dict[str, Any] = field(default_factory=lambda: {"local": {}, "remote": {}})
    #: ``not_run`` (one pin), ``agree``, ``drift`` or ``refused`` (the second pin was a copy).
    dual_pin: str = "not_run"
    #: ``{by, reason, recorded_at}`` of a person's override: documents, never changes, the verdict.
    override: dict[str, str] = field(default_factory=dict)
    #: The mutation stage: ``{"enabled": false, ...}`` when ``--mutants 0`` turned it off, else
    #: ``enabled``, ``k`` and per symbol the mutants made, skipped and not run.
    mutation: dict[str, Any] = field(default_factory=dict)
    #: The suite's environment: its environment digest (signed, recomputed by the executor), or
    #: ``executor`` (the base configures none: the executor's own Python and pytest); "" when
    #: nothing was signed.
    environment: str = ""
    #: How the runs were made: ``on`` (the judge apart, docs/executor.md, "The judge apart") or
    #: ``off`` (one process: admitted only with the base's ``allow_judge_off``); ``""`` in
    #: receipts from before it.
    judge: str = ""
    admit: bool = False

    @classmethod
    def from_json(cls, obj: object) -> Self:
        """Parse a v1 or v2 receipt; v2 fields in a v1 receipt are a LedgerError."""
        receipt = super().from_json(obj)
        if receipt.schema not in RECEIPT_SCHEMAS:
            raise LedgerError(f"Receipt: schema {receipt.schema!r} is not one of {RECEIPT_SCHEMAS}")
        v2_only = (
            "uncredited", "evidence", "flake_observations", "dual_pin", "override", "mutation",
            "environment",
            "changed_inputs",
            "judge",
        )  # fmt: skip
        if receipt.schema == RECEIPT_V1 and isinstance(obj, dict) and set(v2_only) & set(obj):
            raise LedgerError(f"Receipt: a {RECEIPT_V1} receipt has no {', '.join(v2_only)}")
        return receipt
