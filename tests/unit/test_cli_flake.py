"""``patchgate flake-observe``: written only when every precondition holds, else exit 3, no file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from client.cli import main
from patchgate.ledgers import FixtureLedger, PropertyLedger
from patchgate.results import RunOutcome

TEST = "tests/test_checkout.py::test_worker_drain"
SIG = "TimeoutError: checkout_worker"
CLOCK = "2026-09-10T12:00:00Z"
FLAKES = {
    "flakes": [
        {
            "id": "FLK-1044",
            "signature": SIG,
            "opened_on": "2026-09-02",
            "expires_on": "2026-10-16",
            "tests": [TEST],
        }
    ]
}


def _run_entry(outcome: str, failure: str, run: int, **extra: Any) -> dict[str, Any]:
    entry = RunOutcome.make("billing.checkout.drain", run, outcome, failure).to_json()
    entry["test_id"] = TEST
    entry.update(extra)
    return entry


def _setup(
    tmp: Path,
    *,
    runs: list[dict[str, Any]] | None = None,
    prop_digest: str = "d" * 64,
    oracle_moved: bool = False,
    flakes: dict[str, Any] | None = None,
    status: str = "match",
) -> list[str]:
    FixtureLedger(pin_id="p", digest="d" * 64, status=status).write(tmp / "fixture_ledger.json")
    PropertyLedger(
        pin_id="p",
        fixture_digest=prop_digest,
        oracle_moved=oracle_moved,
        runs=runs
        if runs is not None
        else [_run_entry("pass", "", 1), _run_entry("fail", f"{SIG} after 30.2s at 0x7f", 2)],
    ).write(tmp / "property_ledger.json")
    (tmp / "pins").mkdir(exist_ok=True)
    (tmp / "pins" / "flakes.json").write_text(json.dumps(flakes or FLAKES))
    return [
        "flake-observe",
        "--fixture-ledger",
        str(tmp / "fixture_ledger.json"),
        "--property-ledger",
        str(tmp / "property_ledger.json"),
        "--flake-pin",
        str(tmp / "pins" / "flakes.json"),
        "--test-id",
        TEST,
        "--out",
        str(tmp / "out" / "flake_ledger.json"),
    ]


def test_observation_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """All preconditions hold: exit 0 and a flake ledger naming the flake and the digest."""
    assert main([*_setup(tmp_path), "--clock", CLOCK]) == 0
    rec = json.loads((tmp_path / "out" / "flake_ledger.json").read_text())
    assert rec["kind"] == "flake"
    assert (rec["flake_id"], rec["test_id"], rec["fixture_digest"]) == ("FLK-1044", TEST, "d" * 64)
    assert SIG in rec["observed"]
    assert "FLK-1044" in capsys.readouterr().out


def _refused(tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str], why: str) -> None:
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("patchgate: refused:")
    assert why in err
    assert not (tmp_path / "out").exists()


def test_digest_mismatch_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Property ledger made on other bytes than the fixture ledger: exit 3, no file."""
    argv = _setup(tmp_path, prop_digest="e" * 64)
    _refused(tmp_path, [*argv, "--clock", CLOCK], capsys, "does not equal")


def test_fixture_status_mismatch_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fixture ledger whose status is not match: exit 3."""
    argv = _setup(tmp_path, status="mismatch")
    _refused(tmp_path, [*argv, "--clock", CLOCK], capsys, "status")


def test_oracle_moved_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """oracle_moved true: exit 3."""
    argv = _setup(tmp_path, oracle_moved=True)
    _refused(tmp_path, [*argv, "--clock", CLOCK], capsys, "oracle moved")


def test_test_not_prelisted_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A test id no flake lists: exit 3."""
    argv = _setup(tmp_path)
    argv[argv.index("--test-id") + 1] = "tests/test_other.py::test_x"
    _refused(tmp_path, [*argv, "--clock", CLOCK], capsys, "not listed")


@pytest.mark.parametrize(
    "clock", ["2026-10-16T00:00:00Z", "2027-01-01T00:00:00Z", "2026-09-01T23:00:00Z"]
)
def test_expired_or_not_yet_open_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], clock: str
) -> None:
    """A flake expiring on or before the clock's date, or opened after it: exit 3."""
    argv = _setup(tmp_path)
    _refused(tmp_path, [*argv, "--clock", clock], capsys, "no open flake")


def test_last_open_day_accepted(tmp_path: Path) -> None:
    """The day before expires_on (UTC) is still open; offsets are converted to UTC."""
    assert main([*_setup(tmp_path), "--clock", "2026-10-16T01:00:00+02:00"]) == 0


@pytest.mark.parametrize(
    ("runs", "why"),
    [
        ([_run_entry("pass", "", 1), _run_entry("pass", "", 2)], "all 2 runs of the test passed"),
        (
            [_run_entry("fail", "AssertionError: total < 0", 1), _run_entry("pass", "", 2)],
            "does not match",
        ),
        (
            [_run_entry("fail", SIG, 1), _run_entry("fail", "AssertionError: x", 2)],
            "does not match",
        ),
        ([], "no runs"),
        ([_run_entry("fail", SIG, 1, test_id="tests/other.py::t")], "no runs"),
        ([{"kind": "unavailable", "test_id": TEST, "detail": "down"}], "no runs"),
    ],
    ids=["passed", "other-failure", "one-mismatch", "empty", "other-test", "transport-only"],
)
def test_observed_failure_must_match(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    runs: list[dict[str, Any]],
    why: str,
) -> None:
    """No failure, a failure with another signature, or no runs of the test: exit 3."""
    argv = _setup(tmp_path, runs=runs)
    _refused(tmp_path, [*argv, "--clock", CLOCK], capsys, why)


def test_runs_found_by_property_id_without_test_id(tmp_path: Path) -> None:
    """A run without test_id is matched on property_id."""
    entry = RunOutcome.make(TEST, 1, "error", SIG).to_json()
    assert main([*_setup(tmp_path, runs=[entry]), "--clock", CLOCK]) == 0


def test_naive_clock_is_usage_error(tmp_path: Path) -> None:
    """A clock without an offset is ambiguous: exit 64."""
    assert main([*_setup(tmp_path), "--clock", "2026-09-10T12:00:00"]) == 64
    assert not (tmp_path / "out").exists()


def test_never_writes_into_pins(tmp_path: Path) -> None:
    """--out inside the flake pin's directory: exit 64, nothing written there."""
    argv = _setup(tmp_path)
    argv[argv.index("--out") + 1] = str(tmp_path / "pins" / "flake_ledger.json")
    assert main([*argv, "--clock", CLOCK]) == 64
    assert sorted(p.name for p in (tmp_path / "pins").iterdir()) == ["flakes.json"]


def test_malformed_run_is_error_1(tmp_path: Path) -> None:
    """A run entry with an unknown outcome is a ledger error (exit 1), not a refusal."""
    argv = _setup(tmp_path, runs=[_run_entry("pass", "", 1) | {"outcome": "maybe"}])
    assert main([*argv, "--clock", CLOCK]) == 1


@pytest.mark.parametrize("which", ["--fixture-ledger", "--property-ledger"])
@pytest.mark.parametrize("form", ["missing", "not json", "a directory", "another record"])
def test_a_missing_or_unreadable_input_ledger_is_refused_with_3_and_no_file(
    tmp_path: Path, which: str, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23: a missing property ledger exited 1 (an error); it is the refusal, 3."""
    argv = _setup(tmp_path)
    path = Path(argv[argv.index(which) + 1])
    path.unlink()
    if form == "not json":
        path.write_text("{")
    elif form == "a directory":
        path.mkdir()
    elif form == "another record":
        path.write_text(json.dumps({"kind": "drift"}))
    assert main([*argv, "--clock", CLOCK]) == 3
    assert which in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_two_runs_past_the_bound_are_never_a_flake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed 004: two exceeded_bound runs were recorded as an observation (exit 0, a ledger).
    A hang is never a flake (``check`` holds it): exit 3, no ledger."""
    runs = [_run_entry("exceeded_bound", SIG, 1), _run_entry("exceeded_bound", SIG, 2)]
    _refused(tmp_path, [*_setup(tmp_path, runs=runs), "--clock", CLOCK], capsys, "never a flake")


def test_one_hang_beside_a_matching_failure_is_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [_run_entry("fail", SIG, 1), _run_entry("exceeded_bound", "", 2)]
    _refused(tmp_path, [*_setup(tmp_path, runs=runs), "--clock", CLOCK], capsys, "run 2 exceeded")


def test_two_matching_failures_are_still_observed(tmp_path: Path) -> None:
    """The honest shape: two runs that failed with the flake's signature are an observation."""
    runs = [_run_entry("fail", f"{SIG} at 0x1", 1), _run_entry("error", f"{SIG} at 0x2", 2)]
    assert main([*_setup(tmp_path, runs=runs), "--clock", CLOCK]) == 0
    assert (tmp_path / "out" / "flake_ledger.json").is_file()
