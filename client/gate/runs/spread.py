"""Spreading a batched suite over a lane's executors (``--isolation run``).

The properties that share a command prefix run in one sandbox per run on one executor, so the unit
to spread is the group (``patchgate.batching``). With ``S`` slots (every address times its
concurrency) the suite is cut into at most ``S`` chunks, one ``Execute`` each: while there are fewer
groups than slots, the costliest group of more than one property is halved; then the groups go,
costliest first, to the chunk with the least estimated cost so far (longest processing time first).
A group's cost is one sandbox's start-up plus its members' estimated durations — from the last
check's durations (``client.gate.runs.durations``), or the median of the known ones for a property
never seen. The estimate only decides where a property runs, never its outcome: every run of every
property is still in a fresh sandbox, on whichever executor.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from patchgate.batching import group_properties
from patchgate.pins import PropertyPin

__all__ = ["SANDBOX_MS", "UNKNOWN_MS", "plan_chunks"]

SANDBOX_MS = 400.0  # one sandbox's start-up and pytest's collection, as measured on the bench
UNKNOWN_MS = 100.0  # a property's duration when nothing is known at all


def plan_chunks(
    suite: Sequence[PropertyPin],
    allowed: Sequence[Sequence[str]],
    slots: int,
    costs: Mapping[str, float],
) -> list[list[PropertyPin]]:
    """At most ``slots`` chunks of whole groups (halved when there are fewer groups than slots),
    balanced by estimated cost; chunks in suite order inside, costliest chunk first."""
    if not suite:
        return []
    by_id = {p.id: p for p in suite}
    known = [costs[p.id] for p in suite if p.id in costs]
    default = statistics.median(known) if known else UNKNOWN_MS

    def cost(ids: Sequence[str]) -> float:
        return SANDBOX_MS + sum(max(0.0, costs.get(i, default)) for i in ids)

    groups = [list(g.ids) for g in group_properties([(p.id, p.command) for p in suite], allowed)]
    slots = max(1, slots)
    while len(groups) < slots:
        big = max((g for g in groups if len(g) > 1), key=cost, default=None)
        if big is None:
            break
        groups.remove(big)
        half = len(big) // 2
        groups += [big[:half], big[half:]]
    bins: list[tuple[float, list[str]]] = [(0.0, []) for _ in range(min(slots, len(groups)))]
    for g in sorted(groups, key=lambda g: (-cost(g), g[0])):
        i = min(range(len(bins)), key=lambda k: (bins[k][0], k))
        bins[i] = (bins[i][0] + cost(g), bins[i][1] + g)
    order = {p.id: n for n, p in enumerate(suite)}
    bins.sort(key=lambda b: -b[0])
    return [[by_id[i] for i in sorted(ids, key=order.__getitem__)] for _, ids in bins if ids]
