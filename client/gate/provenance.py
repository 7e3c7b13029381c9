"""Provenance of a patch (docs/architecture.md): who drafted it, when it was received, which bytes.

``draft_id`` and the drafter role come from the operator's flags, ``received_at`` from the
operator's UTC clock (or ``--clock``), and ``patch_sha256`` is computed here from the exact patch
bytes. ``model`` (the model that drafted the patch) and ``interface`` (the lane or tool that
returned it) are what the operator states with ``--model`` / ``--interface``: blank unless given,
and never read from the patch, whose text the drafter controls. ``received_at`` has millisecond
resolution like every stamp of the ledgers. An empty or unparsable patch, or a missing field, is
a :class:`ProvenanceError`, which the admission matrix turns into ``reject_provenance``. Nothing
here retries.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

from client.analysis.patch.diffparse import PatchParseError, parse_unified_diff
from patchgate.errors import PatchgateError

__all__ = [
    "DRAFTERS",
    "MAX_STATED",
    "Provenance",
    "ProvenanceError",
    "build_provenance",
    "format_clock",
    "stated",
]

DRAFTERS = ("human", "model_lane")


class ProvenanceError(PatchgateError):
    """Provenance is incomplete: empty or unparsable patch, missing or invalid field."""


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """The provenance record written to ``provenance.json``."""

    draft_id: str
    drafter: str
    received_at: str
    patch_sha256: str
    model: str = ""
    interface: str = ""

    def to_json(self) -> dict[str, str]:
        """The record as a JSON object."""
        return {
            "draft_id": self.draft_id,
            "drafter": self.drafter,
            "model": self.model,
            "interface": self.interface,
            "received_at": self.received_at,
            "patch_sha256": self.patch_sha256,
        }


def format_clock(clock: dt.datetime) -> str:
    """RFC 3339 UTC with a ``Z`` suffix and millisecond precision (as ``patchgate.ledgers``)."""
    if clock.tzinfo is None or clock.utcoffset() is None:
        raise ProvenanceError("the clock has no UTC offset; give --clock with Z or +00:00")
    utc = clock.astimezone(dt.UTC)
    return utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")


MAX_STATED = 200  # characters of --model / --interface


def stated(name: str, value: str | None) -> str:
    """An operator-stated provenance field: blank when not given; one line of printable text
    up to 200 characters, else a :class:`ProvenanceError` naming the field."""
    if value is None:
        return ""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ProvenanceError(f"{name} contains control characters")
    if len(value) > MAX_STATED:
        raise ProvenanceError(f"{name} is longer than {MAX_STATED} characters")
    return value.strip()


def build_provenance(
    patch_bytes: bytes,
    draft_id: str | None,
    drafter: str | None,
    clock: dt.datetime | None,
    *,
    model: str | None = None,
    interface: str | None = None,
) -> Provenance:
    """Build the provenance of ``patch_bytes`` or raise :class:`ProvenanceError` saying why.

    ``clock`` is the review clock; ``None`` reads the current UTC time. A naive clock is refused
    rather than guessed.
    """
    if not isinstance(patch_bytes, bytes) or not patch_bytes.strip():
        raise ProvenanceError("the patch is empty")
    try:
        parse_unified_diff(patch_bytes)
    except PatchParseError as exc:
        raise ProvenanceError(f"the patch is not a unified diff: {exc}") from exc
    if draft_id is None or not draft_id.strip():
        raise ProvenanceError(
            "draft_id is missing (check --draft-id ID: the draft's id, from the operator)"
        )
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in draft_id):
        raise ProvenanceError("draft_id contains control characters")
    if drafter is None or not drafter:
        raise ProvenanceError(f"drafter is missing (check --drafter {'|'.join(DRAFTERS)})")
    if drafter not in DRAFTERS:
        raise ProvenanceError(f"drafter {drafter!r} is not one of {', '.join(DRAFTERS)}")
    received = format_clock(clock if clock is not None else dt.datetime.now(dt.UTC))
    return Provenance(
        draft_id=draft_id,
        drafter=drafter,
        model=stated("model", model),
        interface=stated("interface", interface),
        received_at=received,
        patch_sha256=hashlib.sha256(patch_bytes).hexdigest(),
    )
