"""Unit tests of the billing example (an oracle path: a patch that edits them moved the oracle)."""

from decimal import Decimal

from billing import Line, Order, invoice_total, prorate


def test_prorate_half_period():
    assert prorate(Decimal("30.00"), 15, 30) == Decimal("15.00")


def test_invoice_total_two_lines():
    order = Order(
        "X", (Line("a", 2, Decimal("1.50")), Line("b", 1, Decimal("2.00"), Decimal("0.50")))
    )
    assert invoice_total(order) == Decimal("4.50")
