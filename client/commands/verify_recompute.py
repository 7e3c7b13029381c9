"""``patchgate verify-receipt --recompute --base REV --patch FILE DIR --operator-keyring F``.

A merge policy's check (issue 43; docs/reference/receipt.md): re-derive the verdict of the check
whose ``--out`` directory is DIR from the signed evidence kept there (``fixture_envelope.json`` and
``signed_runs/``), with no daemon, and compare it with ``receipt.json``. The keyring holds the
operator keys and, by role ``executor``, the executor keys whose run results count.

exit codes: 0 the recomputed verdict is an admit equal to the receipt's · 1 anything else, each
problem and each differing receipt field named (an unsigned, mis-bound, missing or extra statement;
a field the evidence does not give; a rejected patch) · 64 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from client.gate.recompute import recompute
from client.verdict.recompute import differences, holds
from patchgate.errors import PatchgateError, UsageError
from patchgate.keys import Keyring

__all__ = ["ledger_dir", "run_recompute"]


def ledger_dir(target: Path) -> Path:
    """The check's ``--out`` directory: ``target`` itself, or the directory of a receipt file."""
    return target if target.is_dir() else target.parent


def run_recompute(args: argparse.Namespace) -> int:
    """Exit 0 only when the signed evidence re-derives the receipt's admit."""
    missing = [f for f in ("base", "patch", "operator_keyring") if not getattr(args, f, None)]
    if missing:
        flags = ", ".join("--" + m.replace("_", "-") for m in missing)
        raise UsageError(f"--recompute needs {flags}")
    ledgers = ledger_dir(args.receipt)
    try:
        keyring = Keyring.load(args.operator_keyring)
        patch = Path(args.patch).read_bytes()
        receipt = json.loads((ledgers / "receipt.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return _report(args, [f"cannot read an input: {exc}"], [], {}, 0)
    try:
        found = recompute(args.repo, args.base, patch, ledgers, keyring)
    except (PatchgateError, OSError) as exc:
        return _report(args, [f"cannot recompute: {exc}"], [], {}, 0)
    diffs = differences(receipt, found.fields)
    ok = holds(receipt, found.fields, found.problems)
    if not ok and not diffs and not found.problems:
        found.problems.append("not admitted: the receipt and its recomputation both reject")
    return _report(args, found.problems, diffs, found.fields, found.statements, ok=ok)


def _report(
    args: argparse.Namespace,
    problems: list[str],
    diffs: list[str],
    fields: dict[str, object],
    statements: int,
    *,
    ok: bool = False,
) -> int:
    verdict = "RECOMPUTED ADMIT" if ok else "NOT RECOMPUTED"
    if args.json:
        json.dump(
            {"ledgers": str(ledger_dir(args.receipt)), "statements": statements,
             "problems": problems, "differences": diffs, "recomputed": fields,
             "verdict": verdict, "ok": ok},
            sys.stdout, indent=2, default=str,
        )  # fmt: skip
        sys.stdout.write("\n")
    else:
        print(f"statements {statements} signed run result(s) verified and bound")
        for line in problems:
            print(f"problem    {line}")
        for line in diffs:
            print(f"differs    {line}")
        print(f"receipt    {verdict}")
    return 0 if ok else 1
