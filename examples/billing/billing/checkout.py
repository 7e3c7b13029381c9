"""The checkout worker: takes queued order ids in arrival order."""

from __future__ import annotations

from collections.abc import Iterable


def drain_worker(queue: Iterable[str], limit: int) -> list[str]:
    """Take up to ``limit`` order ids from ``queue``, in arrival order."""
    if limit < 0:
        raise ValueError("limit must not be negative")
    taken: list[str] = []
    for order_id in queue:
        if len(taken) == limit:
            break
        taken.append(order_id)
    return taken
