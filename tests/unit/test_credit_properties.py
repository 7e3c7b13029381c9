"""Hypothesis: whatever the properties, classes and runs, the credit report and the receipt built
from it say every finding and agree with themselves (issue 13, item 5)."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from client.verdict.credit import score
from client.verdict.receipt import ReceiptFacts, build_receipt, receipt_problems
from tests.strategies import credit_cases


@given(credit_cases())
def test_every_uncredited_symbol_has_r1_and_a_reason(case: dict[str, Any]) -> None:
    report = score(**case)
    zero = {s for s, c in report.credits.items() if c == 0}
    assert set(report.credits) == set(case["changed_symbols"])
    assert set(report.uncredited) == zero
    assert all(report.uncredited.values())
    assert ("R1" in report.codes) == bool(zero)
    if case["stopped"]:
        assert not any(report.credits.values())
        assert (report.misses, report.unstable) == ((), ())


@given(credit_cases())
def test_the_receipt_built_from_any_report_is_consistent(case: dict[str, Any]) -> None:
    report = score(**case)
    receipt = build_receipt(
        ReceiptFacts(
            review_clock="2026-09-10T12:00:00.000Z",
            patch_sha256="a" * 64,
            decision="admit",
            posture="reject_credit",
            admit=False,
            changed_symbols=case["changed_symbols"],
            credits=report.credits,
            coverage=report.coverage,
            uncredited=report.uncredited,
            evidence=report.evidence,
            fixture_status="match",
            rejection_codes=list(report.codes),
        )
    )
    assert receipt_problems(receipt) == []
