"""``patchgate dual-pin``: drift between two property ledgers (exit 3), agreement (exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client.cli import main
from patchgate.ledgers import PropertyLedger


def _ledger(path: Path, status: dict[str, str], *, pin: str = "p", recorded_at: str = "") -> Path:
    PropertyLedger(
        pin_id=pin, fixture_digest=f"digest-of-{pin}", status_by_id=status, recorded_at=recorded_at
    ).write(path, stamp=False)
    return path


def _run(tmp_path: Path, left: Path, right: Path, *extra: str) -> int:
    return main(
        [
            "dual-pin",
            "--left",
            str(left),
            "--right",
            str(right),
            "--out",
            str(tmp_path / "drift.json"),
            *extra,
        ]
    )


def test_agreement_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Same statuses on two pins (different digests and pin ids): exit 0, drift false."""
    a = _ledger(tmp_path / "a.json", {"x": "pass", "y": "fail"}, pin="a")
    b = _ledger(tmp_path / "b.json", {"y": "fail", "x": "pass"}, pin="b")
    assert _run(tmp_path, a, b) == 0
    rec = json.loads((tmp_path / "drift.json").read_text())
    # issue 23: the fields of the contract (kind was "drift", no digests at the top)
    assert rec["kind"] == "dual_pin"
    assert (rec["left_digest"], rec["right_digest"]) == (
        json.loads(a.read_text())["fixture_digest"],
        json.loads(b.read_text())["fixture_digest"],
    )
    assert rec["left_digest"] != rec["right_digest"]
    assert rec["recorded_at"].endswith("Z")
    assert rec["drift"] is False
    assert rec["differing"] == []
    assert rec["left"]["pin_id"] == "a"
    assert "agree" in capsys.readouterr().out


def test_only_recorded_at_differs_is_not_drift(tmp_path: Path) -> None:
    """Identical maps that differ only in recorded_at: exit 0; inputs' times are not copied."""
    a = _ledger(tmp_path / "a.json", {"x": "pass"}, pin="a", recorded_at="2026-09-01T00:00:00.000Z")
    b = _ledger(tmp_path / "b.json", {"x": "pass"}, pin="b", recorded_at="2026-09-02T00:00:00.000Z")
    assert _run(tmp_path, a, b) == 0
    text = (tmp_path / "drift.json").read_text()
    assert "2026-09-01" not in text
    assert "2026-09-02" not in text


@pytest.mark.parametrize(
    ("left", "right", "differing"),
    [
        ({"x": "pass"}, {"x": "fail"}, ["x"]),
        ({"x": "pass", "y": "pass"}, {"x": "pass"}, ["y"]),
        ({"x": "pass"}, {"x": "pass", "z": "unstable"}, ["z"]),
    ],
    ids=["status", "missing-right", "missing-left"],
)
def test_drift_exit_3(
    tmp_path: Path, left: dict[str, str], right: dict[str, str], differing: list[str]
) -> None:
    """A differing status, or a property on one side only: exit 3, drift true, ids listed."""
    a = _ledger(tmp_path / "a.json", left, pin="a")
    b = _ledger(tmp_path / "b.json", right, pin="b")
    assert _run(tmp_path, a, b, "--json") == 3
    rec = json.loads((tmp_path / "drift.json").read_text())
    assert rec["drift"] is True
    assert rec["differing"] == differing


def test_malformed_ledger_is_error_1_and_no_file(tmp_path: Path) -> None:
    """A ledger of the wrong kind or shape: exit 1, nothing written."""
    a = _ledger(tmp_path / "a.json", {"x": "pass"})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "fixture", "pin_id": "p", "digest": "d"}))
    assert _run(tmp_path, a, bad) == 1
    assert not (tmp_path / "drift.json").exists()


def test_out_may_not_overwrite_an_input(tmp_path: Path) -> None:
    """--out equal to an input ledger is a usage error."""
    a = _ledger(tmp_path / "a.json", {"x": "pass"})
    b = _ledger(tmp_path / "b.json", {"x": "pass"})
    before = a.read_bytes()
    assert main(["dual-pin", "--left", str(a), "--right", str(b), "--out", str(a)]) == 64
    assert a.read_bytes() == before


@pytest.mark.parametrize(
    ("right_pin", "right_digest", "right_at", "why"),
    [
        ("b", "digest-of-a", "2026-09-02T00:00:00.000Z", "the same fixture digest"),
        ("a", "digest-of-b", "2026-09-02T00:00:00.000Z", "the same pin id a"),
        ("b", "digest-of-b", "2026-09-01T00:00:00.000Z", "the same recorded_at"),
    ],
    ids=["digest", "pin-id", "recorded-at"],
)
def test_a_copy_of_the_left_ledger_is_refused_and_writes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    right_pin: str,
    right_digest: str,
    right_at: str,
    why: str,
) -> None:
    """Issue 17: two ledgers of one pin compare nothing: refused with the reason, exit 1."""
    a = _ledger(tmp_path / "a.json", {"x": "pass"}, pin="a", recorded_at="2026-09-01T00:00:00.000Z")
    b = tmp_path / "b.json"
    PropertyLedger(
        pin_id=right_pin,
        fixture_digest=right_digest,
        status_by_id={"x": "fail"},
        recorded_at=right_at,
    ).write(b, stamp=False)
    assert _run(tmp_path, a, b) == 1
    err = capsys.readouterr().err
    assert "copy of --left" in err
    assert why in err
    assert not (tmp_path / "drift.json").exists()
