"""The text summary prints the review clock beside the freeze citations (seed 000: "pin the clock
to the CI timestamp and print it beside freeze_citations"): a reader sees which clock judged every
flake's expiry, and which freeze ids the suite cited (never evidence)."""

from __future__ import annotations

from client.report.model import Report
from client.report.text import render_text
from client.verdict.receipt import ReceiptFacts, build_receipt

CLOCK = "2026-09-10T12:00:00.000Z"


def _report(citations: list[str]) -> Report:
    receipt = build_receipt(
        ReceiptFacts(
            review_clock=CLOCK, patch_sha256="a" * 64, decision="admit", posture="reject_credit",
            admit=False, changed_symbols=["m.f"], credits={"m.f": 0}, coverage=0.0,
            rejection_codes=["R1"], freeze_citations=citations, fixture_status="match",
            fixture_digest="c" * 64,
        )
    )  # fmt: skip
    return Report(receipt=receipt, rows=[], reasons=[])


def test_the_summary_prints_the_review_clock_beside_the_freeze_citations() -> None:
    lines = render_text(_report(["FLK-7", "FLK-1044"])).splitlines()
    clock = lines.index(f"clock      {CLOCK}")
    assert lines[clock + 1] == "freezes    FLK-1044, FLK-7 (cited: never evidence)"
    assert lines[clock - 1].startswith("fixtures   match")


def test_without_citations_the_summary_prints_the_clock_alone() -> None:
    report = _report([])
    lines = render_text(report).splitlines()
    assert f"clock      {CLOCK}" in lines
    assert not [ln for ln in lines if ln.startswith("freezes")]
