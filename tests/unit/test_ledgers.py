"""Ledger records (DESIGN §7): JSON round trips, junk refused, atomic writes."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchgate.atomicfile import atomic_write_bytes
from patchgate.errors import LedgerError
from patchgate.ledgers import (
    Admission,
    DriftRecord,
    FixtureLedger,
    FlakeLedger,
    PropertyLedger,
    Receipt,
    Record,
    read_record,
)
from tests.strategies import json_values, junk_json_bytes

SAMPLES: list[Record] = [
    FixtureLedger(pin_id="p", digest="d", files={"fixtures/a": {"sha256": "x", "size": 1}}),
    PropertyLedger(
        pin_id="p",
        fixture_digest="d",
        status_by_id={"a": "pass"},
        runs=[{"property_id": "a", "run_index": 1, "outcome": "pass"}],
    ),
    FlakeLedger(test_id="t", flake_id="F", fixture_digest="d", observed="TimeoutError"),
    DriftRecord(left={"a": 1}, right={}, drift=True, differing=["a"]),
    Admission(decision="admit", row="admit"),
    Receipt(decision="admit", coverage=0.5, credits={"a": 1}),
]
CLASSES = [type(s) for s in SAMPLES]


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_write_read_round_trip(tmp_path: Path, record: Record) -> None:
    """write -> read_record gives the same record, with recorded_at stamped."""
    record.write(tmp_path / "r.json")
    back = read_record(type(record), tmp_path / "r.json")
    assert back == record
    assert back.recorded_at.endswith("Z")
    if record.kind:
        assert json.loads((tmp_path / "r.json").read_text())["kind"] == record.kind


def test_each_ledger_stamps_its_own_time(tmp_path: Path) -> None:
    """write(stamp=False) keeps recorded_at; the default stamps a fresh one."""
    rec = FlakeLedger(test_id="t", flake_id="F", fixture_digest="d", observed="o", recorded_at="x")
    rec.write(tmp_path / "a.json", stamp=False)
    assert read_record(FlakeLedger, tmp_path / "a.json").recorded_at == "x"
    rec.write(tmp_path / "b.json")
    assert read_record(FlakeLedger, tmp_path / "b.json").recorded_at != "x"


def test_wrong_kind_refused() -> None:
    """A record of another kind is a LedgerError."""
    obj = SAMPLES[2].to_json()
    with pytest.raises(LedgerError, match="kind"):
        PropertyLedger.from_json(obj)


def test_unknown_field_refused() -> None:
    """An unknown field is a LedgerError."""
    obj = {**SAMPLES[2].to_json(), "surprise": 1}
    with pytest.raises(LedgerError, match="unknown"):
        FlakeLedger.from_json(obj)


@pytest.mark.parametrize(
    ("field", "value"),
    [("pin_id", 5), ("oracle_moved", 1), ("status_by_id", {"a": 1}), ("runs", [1]), ("runs", {})],
)
def test_mistyped_field_refused(field: str, value: object) -> None:
    """A field of the wrong JSON type is a LedgerError (a bool is not an int, nor the reverse)."""
    obj = {**SAMPLES[1].to_json(), field: value}
    with pytest.raises(LedgerError, match=field):
        PropertyLedger.from_json(obj)


@given(st.sampled_from(CLASSES), json_values)
def test_junk_json_raises_ledger_error(cls: type[Record], obj: object) -> None:
    """from_json on any JSON value: a record or LedgerError."""
    with contextlib.suppress(LedgerError):
        cls.from_json(obj)


@given(st.sampled_from(list(zip(CLASSES, SAMPLES, strict=True))), st.data())
def test_one_junk_field_raises_ledger_error(
    pair: tuple[type[Record], Record], data: st.DataObject
) -> None:
    """A valid record with one field replaced by junk: parsed (and well-typed) or LedgerError."""
    cls, sample = pair
    obj = sample.to_json()
    key = data.draw(st.sampled_from(sorted(obj)))
    obj[key] = data.draw(json_values)
    try:
        rec = cls.from_json(obj)
    except LedgerError:
        return
    assert rec.to_json() == obj


@given(junk_json_bytes)
def test_junk_file_raises_ledger_error(
    tmp_path_factory: pytest.TempPathFactory, raw: bytes
) -> None:
    """read_record on a junk file: LedgerError naming the file."""
    p = tmp_path_factory.mktemp("l") / "ledger.json"
    p.write_bytes(raw)
    with contextlib.suppress(LedgerError):
        read_record(PropertyLedger, p)
        return
    with pytest.raises(LedgerError, match=re.escape(str(p))):
        read_record(PropertyLedger, p)


def test_missing_file_raises_ledger_error(tmp_path: Path) -> None:
    """A ledger that does not exist is a LedgerError."""
    with pytest.raises(LedgerError, match="cannot read"):
        read_record(FixtureLedger, tmp_path / "nope.json")


@pytest.mark.parametrize("target", ["os.replace", "os.fsync"])
def test_atomic_write_failure_keeps_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """A failure during the write leaves the old file intact and no temp file behind."""
    path = tmp_path / "ledger.json"
    path.write_bytes(b"old")

    def boom(*_args: object) -> None:
        raise OSError(5, "injected failure")

    monkeypatch.setattr(target, boom)
    with pytest.raises(LedgerError, match="injected failure"):
        atomic_write_bytes(path, b"new")
    monkeypatch.undo()
    assert path.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["ledger.json"]


def test_atomic_write_replaces_and_sets_mode(tmp_path: Path) -> None:
    """A successful write replaces the content with the requested mode."""
    path = tmp_path / "sub" / "f.json"
    atomic_write_bytes(path, b"one")
    atomic_write_bytes(path, b"two", mode=0o600)
    assert path.read_bytes() == b"two"
    assert (path.stat().st_mode & 0o777) == 0o600
    assert sorted(os.listdir(path.parent)) == ["f.json"]
