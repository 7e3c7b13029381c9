"""``patchgate verify-receipt``: is a receipt still true of the repository?

Recomputes, from the tree of ``--rev`` (default HEAD): each property's predicate hash (sha256 of its
test function's source) and the live fixture digest under the pins of that revision; verifies the
``fixture_envelope.json`` next to the receipt against the operator keyring and checks that it signs
the receipt's digest. Anything that moved makes the receipt stale: exit 1, naming what moved.

Reads receipts of schema ``patchgate/receipt/v1`` and ``v2`` and checks that the receipt agrees
with itself (credits name the changed symbols; coverage = credited/changed; ``admit`` only with
everything it needs; v2: every symbol with credit 0 has R1 and a line in ``uncredited``, every
credited symbol a property that passed every run in ``evidence``). A contradiction exits 1 too.

The operator keyring comes from ``--operator-keyring``, else ``[check] operator_keyring`` of
./patchgate.toml, else the signer's GetKeyring (``--signer`` or ``[check] signer``; trust on first
use, printed). With none of them the envelope cannot be checked and the receipt is not verified.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from client.analysis.classify.assertions import classify_property
from client.commands.check import check_defaults
from client.gate.steps import measure
from client.gate.workspace import base_pins, tree_at
from client.verdict.receipt import receipt_problems
from patchgate.envelope import Envelope, verify_fixture_envelope
from patchgate.errors import EnvelopeError, FixtureScanError, PatchgateError
from patchgate.keys import Keyring
from patchgate.ledgers import Receipt, read_record
from patchgate.signer_client import SignerClient
from patchgate.tls import ClientTLS

__all__ = ["register", "run", "verify"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``verify-receipt`` command."""
    p = subparsers.add_parser(
        "verify-receipt",
        help="recompute predicate hashes and fixture digest; check the envelope (exit 1: stale)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("receipt", type=Path, metavar="RECEIPT", help="receipt.json of a check")
    p.add_argument("--repo", required=True, type=Path, metavar="DIR", help="target git repository")
    p.add_argument("--rev", default="HEAD", metavar="REV", help="revision to check (default HEAD)")
    p.add_argument("--operator-keyring", type=Path, metavar="FILE", help="operator public keyring")
    p.add_argument("--signer", metavar="ADDR", help="fetch the keyring from this signer (TOFU)")
    for part in ("ca", "cert", "key"):
        p.add_argument(f"--signer-tls-{part}", type=Path, metavar="FILE", help=f"mTLS {part}")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(func=run)


def _keyring(args: argparse.Namespace, conf: dict[str, Any]) -> tuple[Keyring | None, str]:
    path = args.operator_keyring or conf.get("operator_keyring")
    if path:
        return Keyring.load(Path(path)), f"operator keyring from {path}"
    signer = args.signer or conf.get("signer")
    if not signer:
        return None, "no operator keyring (--operator-keyring or --signer)"
    parts = [
        str(getattr(args, f"signer_tls_{p}") or conf.get(f"signer_tls_{p}") or "")
        for p in ("ca", "cert", "key")
    ]
    tls = None
    if all(parts):
        tls = ClientTLS(ca_cert=Path(parts[0]), cert=Path(parts[1]), key=Path(parts[2]))
    with SignerClient(str(signer), tls=tls) as client:
        return (
            client.get_keyring(),
            f"operator keyring fetched from signer {signer} (trust on first use)",
        )


def verify(receipt_path: Path, repo: Path, rev: str, keyring: Keyring | None) -> list[str]:
    """What moved since the receipt was written (empty: still true)."""
    receipt = read_record(Receipt, receipt_path)
    stale = [f"receipt: {p}" for p in receipt_problems(receipt)]
    with tree_at(repo, rev) as tree:
        pins = base_pins(repo, rev)
        if receipt.admit and receipt.judge == "off" and not pins.config.allow_judge_off:
            stale.append(f"judge: admitted with --judge off, but {rev} has no allow_judge_off")
        by_id = {p.id: p for p in pins.properties}
        for pid, recorded in sorted(receipt.predicate_hashes.items()):
            prop = by_id.get(pid)
            if prop is None:
                stale.append(f"predicate {pid}: no longer pinned at {rev}")
                continue
            now = classify_property(tree, pid, prop.command).predicate_hash
            if now != recorded:
                stale.append(f"predicate {pid}: hash {recorded[:16]} is now {now[:16] or '(none)'}")
        if receipt.fixture_digest:
            try:
                manifest, _ = measure(tree, pins.fixtures, pins.config.fixture_root)
                live = manifest.digest()
            except FixtureScanError as exc:
                live = f"(unscannable: {exc})"
            if live != receipt.fixture_digest:
                stale.append(f"fixture digest: {receipt.fixture_digest[:16]} is now {live[:40]}")
    stale.extend(_envelope(receipt, receipt_path.parent / "fixture_envelope.json", keyring))
    return stale


def _envelope(receipt: Receipt, path: Path, keyring: Keyring | None) -> list[str]:
    signed_stage = receipt.decision in ("admit", "reject_class", "reject_fixture_role")
    if not path.exists():
        return ["fixture_envelope.json: missing next to the receipt"] if signed_stage else []
    if keyring is None:
        return ["fixture_envelope.json: cannot verify without an operator keyring"]
    try:
        env = Envelope.from_json(json.loads(path.read_text(encoding="utf-8")))
        statement = verify_fixture_envelope(env, keyring)
    except (OSError, ValueError, EnvelopeError) as exc:
        return [f"fixture_envelope.json: {exc}"]
    if statement.digest != receipt.fixture_digest:
        return [f"fixture_envelope.json: signs {statement.digest[:16]}, not the receipt's digest"]
    return []


def _judge_of(path: Path) -> str:
    """The receipt's judge mode: ``on``, ``off``, or ``unknown`` (a receipt from before it)."""
    try:
        return read_record(Receipt, path).judge or "unknown"
    except PatchgateError:
        return "unknown"


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the receipt still holds, 1 when stale (each moved item on stdout)."""
    try:
        keyring, source = _keyring(args, check_defaults())
    except PatchgateError as exc:
        keyring, source = None, f"no operator keyring: {exc}"
    stale = verify(args.receipt, args.repo, args.rev, keyring)
    if args.json:
        json.dump(
            {
                "receipt": str(args.receipt),
                "rev": args.rev,
                "keyring": source,
                "stale": stale,
                "judge": _judge_of(args.receipt),
                "ok": not stale,
            },
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
    else:
        print(f"keyring    {source}", file=sys.stderr)
        print(f"judge      {_judge_of(args.receipt)}")
        for line in stale:
            print(f"stale      {line}")
        print("receipt    " + ("still holds" if not stale else "STALE"))
    return 0 if not stale else 1
