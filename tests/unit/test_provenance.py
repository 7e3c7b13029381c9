"""client.gate.provenance: the provenance record and every refusal (reject_provenance)."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest

from client.gate.provenance import Provenance, ProvenanceError, build_provenance
from patchgate.errors import PatchgateError

PATCH = b"--- a/billing/__init__.py\n+++ b/billing/__init__.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
CLOCK = dt.datetime(2026, 10, 1, 12, 30, 5, 123456, tzinfo=dt.UTC)


def test_provenance_fields() -> None:
    prov = build_provenance(PATCH, "draft-7", "model_lane", CLOCK)
    assert prov == Provenance(
        draft_id="draft-7",
        drafter="model_lane",
        received_at="2026-10-01T12:30:05.123Z",
        patch_sha256=hashlib.sha256(PATCH).hexdigest(),
    )


def test_to_json_has_the_six_fields() -> None:
    prov = build_provenance(PATCH, "d", "human", CLOCK)
    assert prov.to_json() == {
        "draft_id": "d",
        "drafter": "human",
        "model": "",
        "interface": "",
        "received_at": "2026-10-01T12:30:05.123Z",
        "patch_sha256": hashlib.sha256(PATCH).hexdigest(),
    }


def test_clock_with_offset_is_converted_to_utc() -> None:
    clock = dt.datetime(2026, 10, 1, 14, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert build_provenance(PATCH, "d", "human", clock).received_at == "2026-10-01T12:00:00.000Z"


def test_no_clock_reads_the_current_utc_time() -> None:
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    received = build_provenance(PATCH, "d", "human", None).received_at
    parsed = dt.datetime.fromisoformat(received.replace("Z", "+00:00"))
    assert received.endswith("Z")
    assert before <= parsed <= dt.datetime.now(dt.UTC)


def test_hash_is_of_the_exact_bytes() -> None:
    crlf = PATCH.replace(b"\n", b"\r\n")
    first = build_provenance(PATCH, "d", "human", CLOCK).patch_sha256
    assert build_provenance(crlf, "d", "human", CLOCK).patch_sha256 != first


@pytest.mark.parametrize(
    ("patch", "draft_id", "drafter", "clock", "why"),
    [
        (b"", "d", "human", CLOCK, "empty"),
        (b"  \n\n", "d", "human", CLOCK, "empty"),
        (b"not a diff\n", "d", "human", CLOCK, "not a unified diff"),
        (PATCH, None, "human", CLOCK, "draft_id is missing"),
        (PATCH, "  ", "human", CLOCK, "draft_id is missing"),
        (PATCH, "d\n", "human", CLOCK, "control characters"),
        (PATCH, "d", None, CLOCK, "drafter is missing"),
        (PATCH, "d", "", CLOCK, "drafter is missing"),
        (PATCH, "d", "agent", CLOCK, "not one of"),
        (PATCH, "d", "human", dt.datetime(2026, 10, 1), "UTC offset"),
    ],
)
def test_refusals(
    patch: bytes, draft_id: str | None, drafter: str | None, clock: dt.datetime, why: str
) -> None:
    with pytest.raises(ProvenanceError, match=why):
        build_provenance(patch, draft_id, drafter, clock)


def test_provenance_error_is_a_patchgate_error() -> None:
    assert issubclass(ProvenanceError, PatchgateError)


def test_unparsable_patch_error_chains_the_parse_error() -> None:
    with pytest.raises(ProvenanceError) as info:
        build_provenance(b"--- a/f\n+++ b/f\n@@ -1 +1 @@\n", "d", "human", CLOCK)
    assert info.value.__cause__ is not None
