"""One results table for every benchmark: name, patchgate value, baseline value, ratio, target."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Row", "render"]


@dataclass(frozen=True)
class Row:
    """One measured line; ``ratio`` is patchgate against the baseline, as the row names it."""

    bench: str
    measure: str
    value: str
    baseline: str = ""
    ratio: str = ""
    target: str = ""


def render(rows: Sequence[Row]) -> str:
    """A Markdown table (readable as plain text too)."""
    head = ("benchmark", "measure", "patchgate", "baseline", "ratio", "target")
    cells = [head] + [(r.bench, r.measure, r.value, r.baseline, r.ratio, r.target) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
             for row in cells]  # fmt: skip
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)
