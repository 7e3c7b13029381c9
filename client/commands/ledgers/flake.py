"""``patchgate flake-observe``: record one observation of a pre-listed flake, or refuse (exit 3).

A flake observation is never credit. It is written only when every precondition holds, checked in
this order (the first that fails is the one-line reason):

1. the property ledger was made on the fixture ledger's bytes: same ``pin_id``, its
   ``fixture_digest`` equals the fixture ledger's ``digest``, and the fixture ledger's status is
   ``match``;
2. the oracle did not move (``oracle_moved`` is false);
3. the test id is listed in the ``tests`` of a flake of the flake pin;
4. that flake is open at the review clock: ``opened_on`` is not after the clock's UTC date and
   ``expires_on`` (and ``review_by``, when the flake has one) is later than it;
5. no run of the test exceeded its clock bound (a hang is never a flake), and the observed
   failure matches the flake's signature (see :func:`observed_failure`).

When several flakes list the test id, the first (in pin order) for which 4 and 5 hold is used.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from client.commands._util import parse_clock, print_json, resolve_out
from client.errors import CommandRefused
from client.outpaths import Place
from patchgate.errors import LedgerError, PinError
from patchgate.ledgers import (
    FILE_NAMES,
    FixtureLedger,
    FlakeLedger,
    PropertyLedger,
    Record,
    read_record,
)
from patchgate.pins import Flake, parse_flakes
from patchgate.results import OUTCOMES, normalize_failure

__all__ = ["FAILING_OUTCOMES", "observe", "observed_failure", "register", "run", "runs_for"]

FAILING_OUTCOMES = ("fail", "error")  # exceeded_bound is never a flake: refused outright
_R = TypeVar("_R", bound=Record)

_DESCRIPTION = """\
Record that a known, pre-listed flaky test fired again, in flake_ledger.json. A missing or
unreadable input ledger is refused (exit 3, no file). Written only when:
the property ledger's fixture_digest equals the fixture ledger's digest (same pin, status match);
the oracle did not move; the test id is listed by a flake of the flake pin; that flake is open at
the review clock (opened_on <= clock date < expires_on); no run of that test id exceeded its clock
bound (a hang is never a flake); and the failure observed in the property ledger's runs for that
test id matches the flake signature. Otherwise exit 3 with a one-line
reason, and no file. Runs are looked up by their "test_id" field, or "property_id" when a run has
no "test_id". A flake observation is never credit.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``flake-observe`` command."""
    p = subparsers.add_parser(
        "flake-observe",
        help="record a pre-listed flake firing again; writes flake_ledger.json (exit 3 refused)",
        description=_DESCRIPTION,
    )
    p.add_argument("--fixture-ledger", required=True, type=Path, metavar="F")
    p.add_argument("--property-ledger", required=True, type=Path, metavar="F")
    p.add_argument(
        "--flake-pin", required=True, type=Path, metavar="F", help="pins/flakes.json (base)"
    )
    p.add_argument("--test-id", required=True, metavar="ID", help="e.g. tests/test_x.py::test_y")
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="F",
        help="flake ledger to write (a directory: flake_ledger.json inside it)",
    )
    p.add_argument(
        "--clock",
        metavar="ISO8601",
        help="review clock with an explicit offset, e.g. 2026-09-10T12:00:00Z (default: now, UTC)",
    )
    p.add_argument("--json", action="store_true", help="print the flake ledger as JSON")
    p.set_defaults(func=run)


def runs_for(ledger: PropertyLedger, test_id: str) -> list[dict[str, Any]]:
    """The runs of ``test_id``: entries whose ``test_id`` (else ``property_id``) equals it.

    Entries without an ``outcome`` (transport records) are not observations and are skipped; an
    entry with an unknown outcome or a non-string failure signature is a LedgerError.
    """
    found: list[dict[str, Any]] = []
    for i, entry in enumerate(ledger.runs):
        if not isinstance(entry, dict):
            raise LedgerError(f"property ledger: runs[{i}]: expected an object")
        key = entry.get("test_id", entry.get("property_id"))
        if key != test_id or "outcome" not in entry:
            continue
        if entry["outcome"] not in OUTCOMES:
            raise LedgerError(f"property ledger: runs[{i}]: unknown outcome {entry['outcome']!r}")
        if not isinstance(entry.get("failure_signature", ""), str):
            raise LedgerError(f"property ledger: runs[{i}]: failure_signature must be a string")
        found.append(entry)
    return found


def observed_failure(runs: Sequence[dict[str, Any]], signature: str) -> str:
    """The observed failure if it matches ``signature``, else CommandRefused.

    No run may have exceeded its clock bound (a hang is never a flake, as ``check`` holds:
    ``client.verdict.flakes``), at least one run must have failed (fail or error), and every
    failing run's normalized failure signature must contain the flake's normalized signature: a
    failure with any other signature is a real failure, not this flake. Returns the first failing
    run's signature.
    """
    hung = [r for r in runs if r["outcome"] == "exceeded_bound"]
    if hung:
        raise CommandRefused(
            f"run {hung[0].get('run_index', '?')} exceeded its clock bound: a hang is never a "
            "flake"
        )
    failing = [r for r in runs if r["outcome"] in FAILING_OUTCOMES]
    if not failing:
        raise CommandRefused(f"nothing observed: all {len(runs)} runs of the test passed")
    want = normalize_failure(signature)
    if not want:
        raise CommandRefused("the flake's signature is empty after normalization")
    for r in failing:
        got = normalize_failure(str(r.get("failure_signature", "")))
        if want not in got:
            raise CommandRefused(
                f"run {r.get('run_index', '?')} failed with {got[:120]!r}, "
                f"which does not match the flake signature {want!r}"
            )
    return normalize_failure(str(failing[0].get("failure_signature", "")))


def _check_ledgers(fixture: FixtureLedger, prop: PropertyLedger) -> None:
    if prop.pin_id != fixture.pin_id:
        raise CommandRefused(
            f"property ledger pin {prop.pin_id!r} is not the fixture ledger's "
            f"pin {fixture.pin_id!r}"
        )
    if fixture.status != "match":
        raise CommandRefused(f"fixture ledger status is {fixture.status!r}, not 'match'")
    if prop.fixture_digest != fixture.digest:
        raise CommandRefused(
            f"property ledger fixture_digest {prop.fixture_digest[:16]}... does not equal "
            f"the fixture ledger digest {fixture.digest[:16]}..."
        )
    if prop.oracle_moved:
        raise CommandRefused("the oracle moved (oracle_moved is true): no flake is observed")


def observe(
    fixture: FixtureLedger,
    prop: PropertyLedger,
    flakes: Sequence[Flake],
    test_id: str,
    clock: dt.datetime,
) -> FlakeLedger:
    """The flake ledger of this observation, or CommandRefused naming the first failed check."""
    _check_ledgers(fixture, prop)
    listed = [f for f in flakes if test_id in f.tests]
    if not listed:
        raise CommandRefused(f"test {test_id!r} is not listed by any flake of the flake pin")
    open_now = [f for f in listed if f.open_at(clock)]
    if not open_now:
        ids = ", ".join(
            f"{f.id} ({f.opened_on}..{f.expires_on}"
            + (f", review by {f.review_by}" if f.review_by else "")
            + ")"
            for f in listed
        )
        raise CommandRefused(f"no open flake at {clock.date()} lists {test_id!r}: {ids}")
    runs = runs_for(prop, test_id)
    if not runs:
        raise CommandRefused(f"the property ledger has no runs of {test_id!r}")
    refusal: CommandRefused | None = None
    for flake in open_now:
        try:
            observed = observed_failure(runs, flake.signature)
        except CommandRefused as exc:
            refusal = refusal or exc
            continue
        return FlakeLedger(
            test_id=test_id, flake_id=flake.id, fixture_digest=fixture.digest, observed=observed
        )
    assert refusal is not None  # noqa: S101 -- open_now is non-empty, so one attempt was made
    raise refusal


def _read_ledger(cls: type[_R], path: Path, flag: str) -> _R:
    """An input ledger, or a refusal (3): a ledger that is missing, unreadable, not JSON or not
    that record is no evidence of anything, so nothing is observed."""
    try:
        return read_record(cls, path)
    except LedgerError as exc:
        raise CommandRefused(f"{flag}: {exc}") from None


def _read_flakes(path: Path) -> tuple[Flake, ...]:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise PinError(str(path), "", f"cannot read: {exc.strerror}") from None
    return parse_flakes(raw, str(path))


def run(args: argparse.Namespace) -> int:
    """Run ``patchgate flake-observe``: 0 and the ledger written, or exit 3 and no file."""
    clock = parse_clock(args.clock)
    out = resolve_out(
        args.out,
        FILE_NAMES["flake"],
        inputs=[args.fixture_ledger, args.property_ledger, args.flake_pin],
        places=[Place(path=Path(args.flake_pin).parent, what="the pins directory")],
    )
    fixture = _read_ledger(FixtureLedger, args.fixture_ledger, "--fixture-ledger")
    prop = _read_ledger(PropertyLedger, args.property_ledger, "--property-ledger")
    flakes = _read_flakes(args.flake_pin)
    ledger = observe(fixture, prop, flakes, args.test_id, clock)
    ledger.write(out)
    if args.json:
        print_json(ledger.to_json())
    else:
        print(f"observed {ledger.flake_id} on {ledger.test_id}: {ledger.observed}")
    return 0
