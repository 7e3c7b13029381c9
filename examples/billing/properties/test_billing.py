"""Properties of the billing module, reviewed by a person and pinned in pins/properties.json."""

from __future__ import annotations

from decimal import Decimal

from billing import invoice_total, prorate
from billing.orders import load_orders

from properties.conftest import FIXTURES, load_fixture


def test_prorate_non_negative(rng):
    for _ in range(500):
        amount = Decimal(rng.randint(0, 10**6)) / 100
        period = rng.randint(1, 366)
        used = rng.randint(-10, 400)
        assert prorate(amount, used, period) >= 0


def test_prorate_bounded_by_amount(rng):
    for _ in range(500):
        amount = Decimal(rng.randint(0, 10**6)) / 100
        period = rng.randint(1, 366)
        used = rng.randint(0, period)
        assert prorate(amount, used, period) <= amount


def test_invoice_total_matches_fixture():
    orders = load_orders(FIXTURES / "orders_min.json")
    order = next(o for o in orders if o.order_id == "A-2")
    assert invoice_total(order) == Decimal(load_fixture("invoice.json"))


def test_boundary_orders_total_non_negative():
    for order in load_orders(FIXTURES / "orders_boundary.json"):
        assert invoice_total(order) >= 0


def test_prorate_is_the_used_share(rng):
    from decimal import ROUND_HALF_EVEN  # noqa: PLC0415 - the header stays as the sample patches know it

    cent = Decimal("0.01")
    for _ in range(300):
        amount = Decimal(rng.randint(0, 10**6)) / 100
        period = rng.randint(1, 366)
        used = rng.randint(-10, 400)
        share = amount * min(max(used, 0), period) / period
        assert prorate(amount, used, period) == share.quantize(cent, ROUND_HALF_EVEN)
