"""Loading orders from fixture JSON."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from billing import Line, Order

__all__ = ["load_orders"]


def load_orders(path: Path) -> list[Order]:
    """Parse a list of orders from a JSON fixture file."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return [
        Order(
            order_id=o["order_id"],
            lines=tuple(
                Line(
                    sku=ln["sku"],
                    quantity=int(ln["quantity"]),
                    unit_price=Decimal(ln["unit_price"]),
                    discount=Decimal(ln.get("discount", "0")),
                )
                for ln in o["lines"]
            ),
        )
        for o in raw["orders"]
    ]
