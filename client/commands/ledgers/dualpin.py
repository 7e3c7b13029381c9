"""``patchgate dual-pin``: compare two property ledgers (two pins) and record drift (R9).

Drift is any property whose status differs between the two ``status_by_id`` maps, a property
present in one map only included. The fixture digests and ``recorded_at`` are not compared for
drift (each pin has its own digest, each ledger its own write time), but they tell a copy: two
ledgers with the same fixture digest, the same pin id or the same ``recorded_at`` are one pin's
ledger twice (no two ledgers of one check share a stamp), and are refused (exit 1, nothing
written).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from client.commands._util import print_json, resolve_out
from client.errors import EXIT_DRIFT, EXIT_ERROR, CommandRefused
from patchgate.ledgers import FILE_NAMES, DriftRecord, PropertyLedger, read_record

__all__ = ["compare", "copied", "register", "run"]

_DESCRIPTION = """\
Compare the status_by_id maps of two property ledgers produced on two pins. Writes drift.json
atomically in both cases. Exit 0 when every property has the same status on both pins, exit 3 with
"drift": true and the differing property ids when they do not. Two ledgers of one pin -- the same
fixture digest, the same pin id, or the same recorded_at -- are a copy: refused, exit 1, no file.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``dual-pin`` command."""
    p = subparsers.add_parser(
        "dual-pin",
        help="compare two property ledgers; writes drift.json (exit 3 on drift)",
        description=_DESCRIPTION,
    )
    p.add_argument("--left", required=True, type=Path, metavar="FILE", help="property ledger A")
    p.add_argument("--right", required=True, type=Path, metavar="FILE", help="property ledger B")
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="FILE",
        help="drift record to write (a directory: drift.json inside it)",
    )
    p.add_argument("--json", action="store_true", help="print the drift record as JSON")
    p.set_defaults(func=run)


def _side(path: Path, ledger: PropertyLedger) -> dict[str, Any]:
    # recorded_at is deliberately not copied: each record stamps its own
    return {
        "path": str(path),
        "pin_id": ledger.pin_id,
        "fixture_digest": ledger.fixture_digest,
        "status_by_id": dict(ledger.status_by_id),
    }


def copied(left: PropertyLedger, right: PropertyLedger) -> str:
    """Why the two ledgers are one pin's ledger twice ("" when they are two pins)."""
    if left.fixture_digest == right.fixture_digest:
        return f"the same fixture digest {left.fixture_digest[:16]}"
    if left.pin_id == right.pin_id:
        return f"the same pin id {left.pin_id}"
    if left.recorded_at and left.recorded_at == right.recorded_at:
        return f"the same recorded_at {left.recorded_at}"
    return ""


def compare(left: PropertyLedger, right: PropertyLedger) -> list[str]:
    """Property ids whose status differs (or that only one ledger has), sorted."""
    ids = set(left.status_by_id) | set(right.status_by_id)
    return sorted(i for i in ids if left.status_by_id.get(i) != right.status_by_id.get(i))


def run(args: argparse.Namespace) -> int:
    """Run ``patchgate dual-pin``: 0 when the pins agree, 3 on drift; the record is written."""
    out = resolve_out(
        args.out,
        FILE_NAMES["drift"],
        inputs=[args.left, args.right],
    )
    left = read_record(PropertyLedger, args.left)
    right = read_record(PropertyLedger, args.right)
    if why := copied(left, right):
        raise CommandRefused(
            f"refused: --right is a copy of --left ({why}); dual-pin compares two pins",
            EXIT_ERROR,
        )
    differing = compare(left, right)
    record = DriftRecord(
        left=_side(args.left, left),
        right=_side(args.right, right),
        drift=bool(differing),
        differing=differing,
        left_digest=left.fixture_digest,
        right_digest=right.fixture_digest,
    )
    record.write(out)
    if args.json:
        print_json(record.to_json())
    elif differing:
        print(f"drift: {len(differing)} properties differ: {', '.join(differing)}")
    else:
        print(f"agree: {len(left.status_by_id)} properties, same status on both pins")
    return EXIT_DRIFT if differing else 0
