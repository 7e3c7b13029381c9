"""The receipt of DESIGN §7 and the human summary printed after a check.

The receipt is written for every verdict, refusals included, so it always says why. The summary is
a table (symbol, property, class, run 1, run 2, credit) followed by the verdict and its reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from client.verdict.credit import CreditRow
from patchgate.ledgers import Receipt

__all__ = ["build_receipt", "render_summary"]


def build_receipt(
    *,
    review_clock: str,
    patch_sha256: str,
    decision: str,
    posture: str,
    admit: bool,
    changed_symbols: Sequence[str] = (),
    excluded_paths: Sequence[str] = (),
    credits: Mapping[str, int] | None = None,
    coverage: float = 0.0,
    fixture_status: str = "",
    fixture_digest: str = "",
    freeze_citations: Sequence[str] = (),
    predicate_hashes: Mapping[str, str] | None = None,
    rejection_codes: Sequence[str] = (),
    transport: Sequence[Mapping[str, Any]] = (),
    lanes: Mapping[str, Any] | None = None,
) -> Receipt:
    """A Receipt; every changed symbol has a credit entry (0 unless earned)."""
    credit_map = {s: 0 for s in changed_symbols}
    credit_map.update(credits or {})
    lane_map: dict[str, Any] = {"local": {}, "remote": {}}
    lane_map.update(lanes or {})
    return Receipt(
        review_clock=review_clock,
        patch_sha256=patch_sha256,
        decision=decision,
        posture=posture,
        changed_symbols=list(changed_symbols),
        excluded_paths=list(excluded_paths),
        credits=credit_map,
        coverage=round(coverage, 6),
        fixture_status=fixture_status,
        fixture_digest=fixture_digest,
        freeze_citations=sorted(set(freeze_citations)),
        predicate_hashes=dict(sorted((predicate_hashes or {}).items())),
        rejection_codes=list(rejection_codes),
        transport=[dict(t) for t in transport],
        lanes=lane_map,
        admit=admit,
    )


_HEADER = ("symbol", "property", "class", "run 1", "run 2", "credit")


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def render_summary(
    receipt: Receipt, rows: Sequence[CreditRow], reasons: Sequence[str] = (), out_dir: str = ""
) -> str:
    """The human summary: the credit table, then verdict, codes and reasons."""
    body: list[Sequence[str]] = [_HEADER]
    body += [
        (r.symbol, r.property_id, r.assertion_class, r.run1, r.run2, str(r.credit)) for r in rows
    ]
    if not rows:
        body += [
            (s, "-", "-", "-", "-", str(receipt.credits.get(s, 0))) for s in receipt.changed_symbols
        ]
    lines = _table(body) if len(body) > 1 else ["(no changed production symbol)"]
    lines.append("")
    lines.append(f"decision   {receipt.decision or '-'}")
    lines.append(f"posture    {receipt.posture}")
    lines.append(
        f"coverage   {receipt.coverage:g} ({sum(receipt.credits.values())}/{len(receipt.credits)})"
    )
    lines.append(f"fixtures   {receipt.fixture_status or '-'} {receipt.fixture_digest[:16]}")
    lines.append(f"codes      {', '.join(receipt.rejection_codes) or '-'}")
    if receipt.excluded_paths:
        lines.append(f"excluded   {', '.join(receipt.excluded_paths)}")
    for t in receipt.transport:
        lines.append(f"transport  {t.get('lane', '')} {t.get('kind', '')}: {t.get('detail', '')}")
    lines.extend(f"why        {r}" for r in reasons)
    lines.append(f"admit      {'yes' if receipt.admit else 'no'}")
    if out_dir:
        lines.append(f"ledgers    {out_dir}")
    return "\n".join(lines) + "\n"
