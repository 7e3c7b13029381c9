"""The receipt's typed parts name exactly the keys the receipt's JSON Schema gives them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchgate.receipt_parts import EvidenceEntry, LaneSummary, MutationRecord, TransportEntry

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "patchgate/schema/receipt.schema.json").read_text()
)["properties"]


def _keys(part: Any) -> set[str]:
    return set(part.__annotations__)


def test_a_transport_entry_has_the_schemas_keys_and_its_required_ones() -> None:
    item = SCHEMA["transport"]["items"]
    assert _keys(TransportEntry) == set(item["properties"])
    assert set(item["required"]) <= TransportEntry.__required_keys__


def test_an_evidence_entry_has_the_schemas_keys_and_its_required_ones() -> None:
    entry = SCHEMA["evidence"]["additionalProperties"]["additionalProperties"]
    assert _keys(EvidenceEntry) == set(entry["properties"])
    assert set(entry["required"]) <= EvidenceEntry.__required_keys__


def test_the_mutation_record_has_the_schemas_keys_and_the_stages_count_of_variants() -> None:
    """``variants_run`` (mutants and controls) is written beside the schema's keys, which leaves
    the object open."""
    assert _keys(MutationRecord) == {*SCHEMA["mutation"]["properties"], "variants_run"}


@pytest.mark.parametrize("lane", ["local", "remote"])
def test_the_lanes_are_objects_the_schema_leaves_open(lane: str) -> None:
    assert SCHEMA["lanes"]["properties"][lane] == {"type": "object"}
    assert LaneSummary.__required_keys__ == _keys(LaneSummary)
