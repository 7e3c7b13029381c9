"""Issue 17: what ``check`` records beside the verdict -- a second pin's own bytes, the model and
interface of provenance, a person's override -- and the flags' usage errors (64)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from client.cli import build_parser
from client.commands.check import settings_from_args
from client.gate.pipeline import run_check
from client.gate.provenance import ProvenanceError, build_provenance
from client.gate.settings import CheckSettings
from client.verdict.receipt import receipt_problems
from patchgate.errors import UsageError
from patchgate.ledgers import Receipt, now_utc

ROOT = Path(__file__).resolve().parents[2]
BILLING = ROOT / "examples" / "billing"
FLAGS = ("--signer", "unix:/s.sock", "--executor", "unix:/x.sock")


def _args(repo: Path, *extra: str) -> argparse.Namespace:
    base = ["check", "--repo", str(repo), "--base", "HEAD", "--patch", "p.diff", *FLAGS]
    return build_parser().parse_args([*base, *extra])


@pytest.mark.parametrize(
    "extra",
    [
        ("--override-by", "alice"),
        ("--override-reason", "release blocker"),
        ("--override-by", "", "--override-reason", "why"),
        ("--override-by", "alice", "--override-reason", "two\nlines"),
        ("--second-pin-tree", "fixtures-b"),
        ("--second-pin", "b.json", "--second-pin-tree", "t", "--second-pin-rev", "HEAD"),
    ],
    ids=[
        "by-alone",
        "reason-alone",
        "empty-by",
        "control-char",
        "tree-without-pin",
        "tree-and-rev",
    ],
)
def test_flags_that_do_not_go_together_are_usage_errors(repo: Path, extra: tuple[str, ...]) -> None:
    with pytest.raises(UsageError):
        settings_from_args(_args(repo, *extra), {})


def test_stated_fields_default_to_blank_and_are_carried(repo: Path) -> None:
    s = settings_from_args(_args(repo), {})
    assert (s.model, s.interface, s.override_by, s.override_reason) == ("", "", None, None)
    s = settings_from_args(
        _args(
            repo,
            *("--model", "m-7", "--interface", "lane-a"),
            *("--override-by", "alice", "--override-reason", "known issue, shipping"),
        ),
        {},
    )
    assert (s.model, s.interface) == ("m-7", "lane-a")
    assert (s.override_by, s.override_reason) == ("alice", "known issue, shipping")


def test_provenance_records_model_and_interface_only_as_stated() -> None:
    patch = b"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    clock = dt.datetime(2026, 9, 10, 12, tzinfo=dt.UTC)
    plain = build_provenance(patch, "d-1", "model_lane", clock).to_json()
    assert (plain["model"], plain["interface"]) == ("", "")
    # a patch that names a model in its text changes nothing: the field is the operator's
    said = build_provenance(b"# model: gpt-x\n" + patch, "d-1", "model_lane", clock)
    assert said.model == ""
    stated = build_provenance(patch, "d-1", "model_lane", clock, model="m", interface="i")
    assert (stated.model, stated.interface) == ("m", "i")
    assert plain["received_at"] == "2026-09-10T12:00:00.000Z"
    with pytest.raises(ProvenanceError, match="model"):
        build_provenance(patch, "d-1", "model_lane", clock, model="a\x1bb")


def test_no_two_stamps_of_one_process_are_equal() -> None:
    """Ledgers written by one check never share a recorded_at."""
    stamps = [now_utc() for _ in range(2000)]
    assert len(set(stamps)) == len(stamps)
    assert stamps == sorted(stamps)


# -- through the pipeline, without daemons (the signer address points nowhere) ------------------


@pytest.fixture
def billing(tmp_path: Path) -> Path:
    repo = tmp_path / "billing"
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    who = ["-c", "user.name=p", "-c", "user.email=p@e"]
    for args in (["init", "-q"], ["add", "-A"], [*who, "commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return repo


def _settings(repo: Path, tmp: Path, patch: str, **kw: object) -> CheckSettings:
    return CheckSettings(
        repo=repo,
        base="HEAD",
        patch=BILLING / "patches" / patch,
        draft_id="draft-1",
        drafter="model_lane",
        signer=f"unix:{tmp}/nobody.sock",
        executors=(f"unix:{tmp}/nobody-either.sock",),
        clock=dt.datetime(2026, 9, 10, 12, tzinfo=dt.UTC),
        out=tmp / "ledgers",
        **kw,  # type: ignore[arg-type]
    )


def test_an_override_is_recorded_and_changes_nothing_the_gate_computed(
    billing: Path, tmp_path: Path
) -> None:
    plain = run_check(_settings(billing, tmp_path / "a", "oracle_moved.patch"), lambda _m: None)
    over = run_check(
        _settings(
            billing,
            tmp_path / "b",
            "oracle_moved.patch",
            override_by="alice",
            override_reason="the test edit was reviewed",
        ),
        lambda _m: None,
    )
    assert plain.receipt.override == {}
    assert over.receipt.override["by"] == "alice"
    assert over.receipt.override["reason"] == "the test edit was reviewed"
    assert over.receipt.override["recorded_at"].endswith("Z")
    keep = ("recorded_at", "override")
    a, b = plain.receipt.to_json(), over.receipt.to_json()
    assert {k: v for k, v in a.items() if k not in keep} == {
        k: v for k, v in b.items() if k not in keep
    }
    assert plain.verdict == over.verdict
    assert over.verdict.exit_code == 1
    assert receipt_problems(over.receipt) == []
    written = json.loads((tmp_path / "b" / "ledgers" / "receipt.json").read_text())
    assert written["override"]["by"] == "alice"
    assert written["dual_pin"] == "not_run"
    assert Receipt.from_json(written).override == over.receipt.override


def test_provenance_json_holds_the_stated_model_and_interface(
    billing: Path, tmp_path: Path
) -> None:
    s = _settings(billing, tmp_path, "prorate_refactor.patch", model="m-7", interface="lane-a")
    result = run_check(s, lambda _m: None)
    assert result.verdict.posture == "unavailable"  # the signer points nowhere
    prov = json.loads((tmp_path / "ledgers" / "provenance.json").read_text())
    assert (prov["model"], prov["interface"]) == ("m-7", "lane-a")
    blank = dataclasses.replace(s, model="", interface="", out=tmp_path / "blank")
    run_check(blank, lambda _m: None)
    prov = json.loads((tmp_path / "blank" / "provenance.json").read_text())
    assert (prov["model"], prov["interface"]) == ("", "")


def test_a_receipt_whose_dual_pin_disagrees_with_r9_contradicts_itself() -> None:
    r = Receipt(posture="reject_credit", dual_pin="drift")
    assert any("R9" in p for p in receipt_problems(r))
    r = Receipt(posture="reject_fixture_drift", dual_pin="agree", rejection_codes=["R9"])
    assert any("R9" in p for p in receipt_problems(r))
    r = Receipt(posture="reject_credit", override={"by": "alice"})
    assert any("override" in p for p in receipt_problems(r))
    assert receipt_problems(Receipt(posture="reject_credit")) == []


def test_a_second_pin_is_a_copy_by_digest_or_by_pin_id() -> None:
    from client.gate.secondpin import copy_of_first  # noqa: PLC0415 - one rule of the step
    from patchgate.pins import FixturePin  # noqa: PLC0415

    def pin(pin_id: str) -> FixturePin:
        return FixturePin(
            pin_id=pin_id, algorithm="sha256", files={}, seed=7, clock_bound_ms=1,
            allowed_commands=(("python",),),
        )  # fmt: skip

    assert "copy of the first" in copy_of_first("a", "d" * 64, pin("b"), "d" * 64)
    assert "the first pin's id" in copy_of_first("a", "d" * 64, pin("a"), "e" * 64)
    assert copy_of_first("a", "d" * 64, pin("b"), "e" * 64) == ""
