"""``patchgate properties``: the property ledger alone of one revision, on an expected digest.

The work is :mod:`client.gate.properties`; this module parses the flags, finds the lane's signer
and executors exactly as ``check`` does (flags > ``PATCHGATE_*`` > ``--lane`` / ``patchgate.toml``
``[check]`` > the default lane), guards ``--out`` and prints the result.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from client.commands import check as check_command
from client.commands._util import add_repo_option, print_json, resolve_out
from client.commands.check import base_config, check_defaults, settings_from_args
from client.errors import CommandRefused
from client.gate.properties import run_properties
from client.gate.workspace import resolve_rev
from patchgate.errors import UsageError
from patchgate.ledgers import FILE_NAMES

__all__ = ["register", "run"]

_DIGEST = re.compile(r"[0-9a-f]{64}")

_DESCRIPTION = """\
Run the pinned properties of a revision twice and write property_ledger.json alone. The pins come
from --base; the tree scored is --rev (default HEAD), read from the revision's blobs. The live
fixture digest of --rev under the base's fixture pin must equal --expect-digest: otherwise (or when
a fixture file is missing, extra, unsafe or changed, or there is no fixture root) exit 2 and no
ledger. Then the operator signs the manifest and every pinned property but external_probe runs
twice on the executors, as in check (no mutation stage, no admission, no credit, no receipt). The
ledger records status_by_id, the runs, and oracle_moved: whether the oracle (oracle paths, harness,
a pinned predicate) differs between --base and --rev. The signer and executors are found as check
finds them. check is the gate on a patch; properties is the record of a revision, for
flake-observe and dual-pin.
"""

_EPILOG = """\
exit codes: 0 written · 1 no valid operator signature · 2 refused to score (digest other than
            --expect-digest, fixture files missing/extra/unsafe/changed, no fixture root, an
            executor refused) · 4 transport, nothing written · 64 usage (unknown --base or --rev
            too; --out where patchgate reads) · 78 invalid pins in the base
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``properties`` command."""
    p = subparsers.add_parser(
        "properties",
        help="run the pinned properties of a revision on an expected digest; writes "
        "property_ledger.json alone (exit 2 on a digest mismatch)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    add_repo_option(p, "target git repository")
    p.add_argument("--base", required=True, metavar="REV", help="revision whose pins are read")
    p.add_argument("--rev", default="HEAD", metavar="REV", help="the tree scored (default HEAD)")
    p.add_argument(
        "--expect-digest",
        required=True,
        metavar="DIGEST",
        help="the canonical fixture digest (64 hex) the tree must have",
    )
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="F",
        help="property ledger to write (a directory: property_ledger.json inside it)",
    )
    p.add_argument("--signer", metavar="ADDR", help="signer daemon (default: the lane's)")
    p.add_argument(
        "--executor", action="append", metavar="ADDR", help="executor (repeat; default: the lane's)"
    )
    p.add_argument("--lane", metavar="NAME|DIR", help="the lane whose daemons to use")
    p.add_argument("--operator-keyring", type=Path, metavar="FILE")
    p.add_argument("--executor-keyring", type=Path, metavar="FILE")
    p.add_argument("--clock", metavar="ISO8601", help="review clock (default: now, UTC)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _check_args(args: argparse.Namespace) -> argparse.Namespace:
    """``check --self-test``'s namespace with this command's flags: the settings are built by
    ``check``'s own code, so the daemons are found exactly as ``check`` finds them."""
    argv = ["check", "--repo", str(args.repo), "--base", args.base, "--self-test"]
    parser = argparse.ArgumentParser(prog="patchgate")
    check_command.register(parser.add_subparsers())
    ns = parser.parse_args(argv)
    for name in ("signer", "executor", "lane", "operator_keyring", "executor_keyring", "clock"):
        setattr(ns, name, getattr(args, name))
    return ns


def run(args: argparse.Namespace) -> int:
    """Run ``patchgate properties``: 0 and the ledger written, or the refusal's code, no file."""
    if not _DIGEST.fullmatch(args.expect_digest):
        raise UsageError(f"--expect-digest {args.expect_digest!r}: expected 64 lowercase hex")
    check = _check_args(args)
    settings = settings_from_args(check, check_defaults(args.lane))
    resolve_rev(settings.repo, args.rev)  # an unknown --rev is a usage error (64)
    config = base_config(settings.repo, settings.base).config
    inputs = [p for p in (settings.operator_keyring, settings.executor_keyring) if p is not None]
    out = resolve_out(
        args.out, FILE_NAMES["property"], repo=settings.repo, config=config, inputs=inputs
    )
    result = run_properties(
        settings,
        rev=args.rev,
        expect_digest=args.expect_digest,
        ledger=out,
        say=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    if result.exit_code != 0:
        raise CommandRefused("; ".join(result.reasons) or "refused", result.exit_code)
    if args.json:
        print_json({
            "ledger": str(out), "fixture_digest": result.digest,
            "oracle_moved": result.oracle_moved, "status_by_id": result.status_by_id,
        })  # fmt: skip
    else:
        moved = " (the oracle moved between --base and --rev)" if result.oracle_moved else ""
        print(f"property ledger {out}: {len(result.status_by_id)} properties{moved}")
        for pid, status in sorted(result.status_by_id.items()):
            print(f"  {pid}: {status}")
    return 0
