"""A tiny billing module: proration and invoice totals (the target of patchgate's examples)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

__all__ = ["Line", "Order", "invoice_total", "prorate"]

CENT = Decimal("0.01")


@dataclass(frozen=True)
class Line:
    """One invoice line: quantity times unit price, minus a discount."""

    sku: str
    quantity: int
    unit_price: Decimal
    discount: Decimal = Decimal("0")

    @property
    def net(self) -> Decimal:
        return (self.quantity * self.unit_price - self.discount).quantize(CENT, ROUND_HALF_EVEN)


@dataclass(frozen=True)
class Order:
    """An order: its lines."""

    order_id: str
    lines: tuple[Line, ...]


def prorate(amount: Decimal, used_days: int, period_days: int) -> Decimal:
    """The share of ``amount`` for ``used_days`` out of ``period_days``, rounded to the cent."""
    if period_days <= 0:
        raise ValueError("period_days must be positive")
    used = min(max(used_days, 0), period_days)
    return (amount * used / period_days).quantize(CENT, ROUND_HALF_EVEN)


def invoice_total(order: Order) -> Decimal:
    """The sum of the order's line nets."""
    total = Decimal("0")
    for line in order.lines:
        total += line.net
    return total.quantize(CENT, ROUND_HALF_EVEN)
