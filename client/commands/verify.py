"""``patchgate verify-receipt``: is a receipt still true of the repository?

(``--recompute``: re-derive the verdict from the signed evidence instead; see
:mod:`client.commands.verify_recompute`.)

Recomputes, from the tree of ``--rev`` (default HEAD): each property's predicate hash (sha256 of its
test function's source) and the live fixture digest under the pins of that revision; verifies the
``fixture_envelope.json`` next to the receipt against the operator keyring and checks that it signs
the receipt's digest. Anything that moved makes the receipt stale: exit 1, naming what moved.
What cannot be checked makes it UNVERIFIABLE, not stale: exit 3, naming why (no operator keyring,
the signer unreachable for one, no fixture_envelope.json beside a receipt that needs one); a
receipt that is stale as well is STALE (exit 1), with the reasons it is unverifiable listed too.

Reads receipts of schema ``patchgate/receipt/v1`` and ``v2`` and checks that the receipt agrees
with itself (credits name the changed symbols; coverage = credited/changed; ``admit`` only with
everything it needs; v2: every symbol with credit 0 has R1 and a line in ``uncredited``, every
credited symbol a property that passed every run in ``evidence``). A contradiction exits 1 too.

The operator keyring comes from ``--operator-keyring``, else ``[check] operator_keyring`` of
./patchgate.toml, else the signer's GetKeyring (``--signer`` or ``[check] signer``; trust on first
use, printed). With none of them the envelope cannot be checked: UNVERIFIABLE.

exit codes: 0 the receipt still holds · 1 STALE (something moved, or the receipt contradicts
itself, or an input cannot be read) · 3 UNVERIFIABLE (nothing moved that could be checked, but the
envelope could not be checked) · 64 usage. 'patchgate explain' says what the receipt's codes mean.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client.analysis.classify.assertions import classify_property
from client.commands._util import add_repo_option
from client.commands.check import check_defaults
from client.commands.verify_recompute import run_recompute
from client.gate.steps import measure
from client.gate.workspace import base_pins, tree_at
from client.verdict.codes import unreachable_words
from client.verdict.receipt import receipt_problems
from patchgate.envelope import Envelope, verify_fixture_envelope
from patchgate.errors import EnvelopeError, FixtureScanError, PatchgateError, TransportError
from patchgate.keys import Keyring
from patchgate.ledgers import Receipt, read_record
from patchgate.signer_client import SignerClient
from patchgate.tls import ClientTLS

__all__ = ["EXIT_UNVERIFIABLE", "Findings", "register", "run", "verify"]

EXIT_UNVERIFIABLE = 3


@dataclass(frozen=True)
class Findings:
    """What verify-receipt found: what moved (``stale``) and what it could not check."""

    stale: list[str]
    unverifiable: list[str]

    @property
    def verdict(self) -> str:
        """``still holds``, ``STALE`` or ``UNVERIFIABLE`` (stale wins: something moved)."""
        if self.stale:
            return "STALE"
        return "UNVERIFIABLE" if self.unverifiable else "still holds"

    @property
    def exit_code(self) -> int:
        """0 holds, 1 stale, 3 unverifiable."""
        return 1 if self.stale else (EXIT_UNVERIFIABLE if self.unverifiable else 0)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``verify-receipt`` command."""
    p = subparsers.add_parser(
        "verify-receipt",
        help="recompute predicate hashes and fixture digest; check the envelope "
        "(exit 1: stale, 3: unverifiable)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "receipt", type=Path, metavar="RECEIPT",
        help="receipt.json of a check (or, with --recompute, its --out directory)",
    )  # fmt: skip
    add_repo_option(p, "target git repository")
    p.add_argument("--rev", default="HEAD", metavar="REV", help="revision to check (default HEAD)")
    p.add_argument("--operator-keyring", type=Path, metavar="FILE", help="operator public keyring")
    p.add_argument("--signer", metavar="ADDR", help="fetch the keyring from this signer (TOFU)")
    for part in ("ca", "cert", "key"):
        p.add_argument(f"--signer-tls-{part}", type=Path, metavar="FILE", help=f"mTLS {part}")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument(
        "--recompute", action="store_true",
        help="re-derive the verdict from the signed run results beside the receipt (needs "
        "--base, --patch, --operator-keyring with the executor keys; exit 0 only for an equal "
        "admit)",
    )  # fmt: skip
    p.add_argument("--base", metavar="REV", help="with --recompute: the check's base revision")
    p.add_argument("--patch", type=Path, metavar="FILE", help="with --recompute: the patch")
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


def verify(
    receipt_path: Path, repo: Path, rev: str, keyring: Keyring | None, *, why_no_keyring: str = ""
) -> Findings:
    """What moved since the receipt was written, and what could not be checked."""
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
    envelope = receipt_path.parent / "fixture_envelope.json"
    moved, unchecked = _envelope(receipt, envelope, keyring, why_no_keyring)
    return Findings(stale=[*stale, *moved], unverifiable=unchecked)


def _envelope(
    receipt: Receipt, path: Path, keyring: Keyring | None, why_no_keyring: str
) -> tuple[list[str], list[str]]:
    """(what moved, what could not be checked) of the envelope beside the receipt."""
    found = _envelope_problems(receipt, path, keyring, why_no_keyring)
    cannot = [p for p in found if p.startswith(_CANNOT)]
    return [p for p in found if p not in cannot], cannot


_CANNOT = "fixture_envelope.json: cannot verify"


def _envelope_problems(
    receipt: Receipt, path: Path, keyring: Keyring | None, why_no_keyring: str
) -> list[str]:
    signed_stage = receipt.decision in ("admit", "reject_class", "reject_fixture_role")
    if not path.exists():
        return [f"{_CANNOT}: missing next to the receipt"] if signed_stage else []
    if keyring is None:
        why = why_no_keyring or "no operator keyring (--operator-keyring or --signer)"
        return [f"{_CANNOT}: {why}"]
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
    """Exit 0 when the receipt still holds, 1 when stale, 3 when it cannot be verified."""
    if args.recompute:
        return run_recompute(args)
    try:
        keyring, source = _keyring(args, check_defaults())
    except TransportError as exc:
        signer = str(args.signer or check_defaults().get("signer"))
        words = unreachable_words(who="signer", address=signer, kind=exc.kind, detail=exc.detail)
        keyring, source = None, f"no operator keyring: {words}"
    except PatchgateError as exc:
        keyring, source = None, f"no operator keyring: {exc}"
    found = verify(args.receipt, args.repo, args.rev, keyring, why_no_keyring=source)
    if args.json:
        json.dump(
            {
                "receipt": str(args.receipt),
                "rev": args.rev,
                "keyring": source,
                "stale": found.stale,
                "unverifiable": found.unverifiable,
                "verdict": found.verdict,
                "judge": _judge_of(args.receipt),
                "ok": found.exit_code == 0,
            },
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
    else:
        print(f"keyring    {source}", file=sys.stderr)
        for line in found.stale:
            print(f"stale      {line}")
        for line in found.unverifiable:
            print(f"unverified {line}")
        print(f"judge      {_judge_of(args.receipt)}")
        print(f"receipt    {found.verdict}")
    return found.exit_code
