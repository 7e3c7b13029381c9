"""A receipt against its recomputation (issue 43): which of its fields differ, named.

Pure: the fields come from :mod:`client.gate.recompute` (the signed statements re-scored); the
merge policy's answer is :func:`holds` — no problem, no difference, and an admit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["COMPARED", "differences", "holds"]

#: The receipt fields a recomputation re-derives, in the order they are reported.
COMPARED = (
    "patch_sha256",
    "changed_symbols",
    "excluded_paths",
    "fixture_status",
    "fixture_digest",
    "environment",
    "predicate_hashes",
    "decision",
    "credits",
    "coverage",
    "rejection_codes",
    "posture",
    "admit",
)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def differences(receipt: Mapping[str, Any], fields: Mapping[str, Any]) -> list[str]:
    """``receipt <field>: says X, the signed evidence gives Y`` for every compared field the
    recomputation reached that differs (a field it did not reach is not compared: the reason it
    stopped is a problem of its own)."""
    out: list[str] = []
    for name in COMPARED:
        if name not in fields:
            continue
        said, got = receipt.get(name), fields[name]
        if name in ("changed_symbols", "excluded_paths", "rejection_codes"):
            said, got = sorted(said or []), sorted(got)
        if said != got:
            out.append(
                f"receipt {name}: says {_show(said)}, the signed evidence gives {_show(got)}"
            )
    return out


def holds(receipt: Mapping[str, Any], fields: Mapping[str, Any], problems: Sequence[str]) -> bool:
    """Exit 0's condition: nothing wrong, nothing different, and both say admit."""
    return (
        not problems
        and not differences(receipt, fields)
        and fields.get("admit") is True
        and receipt.get("admit") is True
    )
