"""``patchgate digest``: the live fixture digest of a tree, checked against its pin.

Scans the fixture root of ``--root``, refuses (exit 2, no file) when a file is missing, unpinned
(extra), unsafe or differs from its pinned hash, else writes ``fixture_ledger.json`` atomically and
prints the canonical fixture digest v1 (docs/reference/digest.md).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from client.commands._util import print_json, resolve_out
from client.errors import EXIT_SCAN, CommandRefused
from client.outpaths import Place, reading_places
from patchgate.digest import hash_files, scan_fixture_tree, validate_path
from patchgate.errors import FixtureScanError, PinError, UnsafePathError, UsageError
from patchgate.ledgers import FILE_NAMES, FixtureLedger
from patchgate.pins import DirSource, FixturePin, ProjectConfig, load_config, parse_fixture_pin

__all__ = ["build_fixture_ledger", "read_fixture_pin", "register", "run"]

_DESCRIPTION = """\
Compute the canonical fixture digest v1 of the fixture files under ROOT and compare it with the
fixture pin. Every file under the fixture root must be pinned, every pinned file must exist, no
symlink may leave the tree, and each file's sha256 must equal its pin. On success the digest is
printed and fixture_ledger.json is written atomically (exit 0). Otherwise the missing, unpinned
(extra), unsafe and mismatched files are listed, nothing is written, and the exit code is 2; a tree
with no fixture root at all is refused the same way (a digest of nothing is not a match). The
output is never written where the command reads: the pins directory, the fixture tree, an oracle
path (64).
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``digest`` command."""
    p = subparsers.add_parser(
        "digest",
        help="live fixture digest vs the pin; writes fixture_ledger.json (exit 2 on mismatch)",
        description=_DESCRIPTION,
    )
    p.add_argument("--pin", required=True, type=Path, metavar="FILE", help="pins/fixtures.json")
    p.add_argument(
        "--root",
        required=True,
        type=Path,
        metavar="DIR",
        help="the tree whose fixtures are checked; the pin's paths are relative to it",
    )
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="FILE",
        help="fixture ledger to write (a directory: fixture_ledger.json inside it)",
    )
    p.add_argument(
        "--fixture-root",
        metavar="DIR",
        help="fixture directory relative to ROOT (default: fixture_root of ROOT's "
        "[tool.patchgate] config, else 'fixtures')",
    )
    p.add_argument("--json", action="store_true", help="print the ledger as JSON, not the digest")
    p.set_defaults(func=run)


def read_fixture_pin(path: Path, fixture_root: str) -> FixturePin:
    """Read and validate a fixture pin file (PinError names the file, field and why)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise PinError(str(path), "", f"cannot read: {exc.strerror}") from None
    return parse_fixture_pin(raw, str(path), fixture_root)


def build_fixture_ledger(pin: FixturePin, root: Path, fixture_root: str) -> FixtureLedger:
    """Scan, hash and compare; the ledger of a matching tree, else FixtureScanError (nothing kept).

    The digest covers the live bytes (hashes and sizes as read now) with the pin's seed, clock
    bound and commands. A hash that differs from the pin is listed as ``mismatched``.
    """
    found = scan_fixture_tree(root, fixture_root, pin.files)
    live = hash_files(found, processes=min(8, os.cpu_count() or 1))
    mismatched = sorted(p for p, entry in live.items() if entry.sha256 != pin.files[p])
    if mismatched:
        raise FixtureScanError(mismatched=mismatched)
    manifest = pin.manifest(live)
    return FixtureLedger(
        pin_id=pin.pin_id,
        digest=manifest.digest(),
        algorithm=pin.algorithm,
        files={p: {"sha256": e.sha256, "size": e.size} for p, e in sorted(live.items())},
        status="match",
        mismatched=[],
    )


def _fixture_root(args: argparse.Namespace, root: Path) -> tuple[str, ProjectConfig]:
    config = load_config(DirSource(root))
    fixture_root: str = args.fixture_root or config.fixture_root
    try:
        validate_path(fixture_root.rstrip("/"))
    except UnsafePathError as exc:
        raise UsageError(f"--fixture-root: {exc}") from None
    return fixture_root.rstrip("/"), config


def run(args: argparse.Namespace) -> int:
    """Run ``patchgate digest``; exit 0, or FixtureScanError (exit 2) with no file written."""
    root: Path = args.root
    if not root.is_dir():
        raise UsageError(f"--root {root}: not a directory")
    fixture_root, config = _fixture_root(args, root)
    out = resolve_out(
        args.out,
        FILE_NAMES["fixture"],
        inputs=[args.pin],
        places=[
            Place(path=Path(args.pin).parent, what="the pins directory"),
            *reading_places(root, config),
            Place(path=root / fixture_root, what="the fixture tree"),
        ],
    )
    pin = read_fixture_pin(args.pin, fixture_root)
    # docs/reference/receipt.md: not_applicable is never a match -- no green digest of nothing,
    # whether the fixture root is missing or is there with nothing pinned in it.
    fix = "commit one fixture that can falsify a claim and pin it (patchgate pin fixtures)"
    if not os.path.lexists(root / fixture_root):
        raise CommandRefused(
            f"no fixture root {fixture_root}/ under {root}: there is nothing to digest, "
            f"and a digest of nothing is not a match; {fix}",
            EXIT_SCAN,
        )
    if not pin.files:
        raise CommandRefused(
            f"the pin {args.pin} lists no fixture file: there is nothing to digest, and a "
            f"digest of nothing is not a match; {fix}",
            EXIT_SCAN,
        )
    ledger = build_fixture_ledger(pin, root, fixture_root)
    ledger.write(out)
    if args.json:
        print_json(ledger.to_json())
    else:
        print(ledger.digest)
    return 0
