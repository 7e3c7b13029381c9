"""``--second-pin``: the same patch on a second fixture pin, compared in drift.json (R9, exit 3).

A second pin is an operator input, like the base pins: a pin file (``--second-pin FILE``) and the
fixture bytes it pins. The bytes are the patched tree's own fixtures, unless the second pin names
its own fixture tree (``--second-pin-tree DIR``, a directory standing in for the fixture root) or
a revision of the repository (``--second-pin-rev REV``: that revision's fixture tree and, without
``--second-pin``, its pin file). The suite then runs on a copy of the patched tree whose fixture
root holds those bytes, signed by the same signer, and the two ``status_by_id`` maps are compared:
any difference is drift.

* The second bytes do not satisfy the second pin: drift (fail closed), nothing runs.
* The second pin is a copy of the first -- the same fixture digest, or the same pin id -- :
  refused (``dual_pin: refused``, the reason listed, no drift.json): a copy compares nothing, so
  the check stands on one pin.
* A second pin the signer will not sign: drift (fail closed). Transport on the second run:
  ``unavailable``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client.gate.settings import CheckSettings
from client.gate.steps import Say, execute, measure, signature_step, signed_suite
from client.gate.workspace import Workspace, tree_at
from client.verdict.stability import Stability, assess_all
from patchgate.digest import Manifest
from patchgate.errors import FixtureScanError, UsageError
from patchgate.ledgers import FILE_NAMES, DriftRecord
from patchgate.pins import FixturePin, PinSet, PropertyPin, parse_fixture_pin
from patchgate.receipt_parts import TransportEntry

__all__ = ["SecondPin", "copy_of_first", "second_pin_step"]


@dataclass(kw_only=True)
class SecondPin:
    """Step 8b: the same patch on a second fixture pin."""

    drift: bool | None = False  # None: the second run could not complete (transport)
    agrees: bool | None = None
    status: str = "not_run"  # the receipt's dual_pin: not_run, agree, drift or refused
    transport: list[TransportEntry] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class _Source:
    """The second pin and the tree whose fixture root holds its bytes."""

    pin: FixturePin
    root: Path
    where: str  # for the reasons: which bytes these are


def copy_of_first(first_pin_id: str, first_digest: str, pin: FixturePin, digest: str) -> str:
    """Why the second pin is a copy of the first ("" when it is not): the same digest (the same
    bytes, seed, bound and commands, whatever its name), or the same pin id."""
    if digest == first_digest:
        return (
            f"the second pin is a copy of the first: the same fixture digest {digest[:16]}... "
            f"({first_pin_id} and {pin.pin_id}); a copy compares nothing"
        )
    if pin.pin_id == first_pin_id:
        return f"the second pin has the first pin's id {pin.pin_id}; a second pin needs its own id"
    return ""


def _read(path: Path, flag: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot read: {exc.strerror}") from None


def _with_fixtures(stack: ExitStack, patched: Path, fixture_root: str, tree: Path) -> Path:
    """A copy of the patched tree whose fixture root holds ``tree`` (links kept, never followed:
    the digest scan refuses one that leaves the tree)."""
    dest = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="patchgate-pin2-")))
    root = dest / "tree"
    shutil.copytree(patched, root, symlinks=True)
    target = root / fixture_root
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    shutil.copytree(tree, target, symlinks=True)
    return root


@contextmanager
def _source(s: CheckSettings, ws: Workspace, pins: PinSet) -> Iterator[_Source | None]:
    """The second pin and its bytes, from the flags; None without a second pin."""
    fixture_root = pins.config.fixture_root
    with ExitStack() as stack:
        tree: Path | None
        if s.second_pin_rev is not None:
            rev_tree = stack.enter_context(tree_at(s.repo, s.second_pin_rev))
            pin_path = s.second_pin or rev_tree / pins.config.pins_dir / "fixtures.json"
            flag = "--second-pin" if s.second_pin else f"--second-pin-rev {s.second_pin_rev}:"
            raw, label = _read(pin_path, flag), str(s.second_pin or f"{flag} pins")
            tree, where = rev_tree / fixture_root, f"the fixture tree of {s.second_pin_rev}"
        elif s.second_pin is not None:
            raw, label = _read(s.second_pin, "--second-pin"), str(s.second_pin)
            tree = s.second_pin_tree
            where = f"the tree {tree}" if tree else "the patched tree's fixtures"
        else:
            yield None
            return
        pin = parse_fixture_pin(raw, label, fixture_root)
        if tree is None:
            yield _Source(pin=pin, root=ws.patched_dir, where=where)
            return
        if not tree.is_dir() or tree.is_symlink():
            raise UsageError(f"second pin fixtures: {where}: not a directory")
        root = _with_fixtures(stack, ws.patched_dir, fixture_root, tree)
        yield _Source(pin=pin, root=root, where=where)


def second_pin_step(  # noqa: PLR0917 - one call site, the check's state in pipeline order
    s: CheckSettings,
    ws: Workspace,
    pins: PinSet,
    suite: Sequence[PropertyPin],
    stab: Mapping[str, Stability],
    digest: str,
    say: Say,
) -> SecondPin:
    """Run the suite again on the second pin; write drift.json comparing the two ledgers."""
    with _source(s, ws, pins) as src:
        if src is None:
            return SecondPin()
        return _compare(s, src, pins, suite, stab, digest, say)


def _compare(  # noqa: PLR0917 - the step's state, split from the reading of the flags
    s: CheckSettings,
    src: _Source,
    pins: PinSet,
    suite: Sequence[PropertyPin],
    stab: Mapping[str, Stability],
    digest: str,
    say: Say,
) -> SecondPin:
    result = SecondPin()
    left = {
        "pin_id": pins.fixtures.pin_id,
        "fixture_digest": digest,
        "status_by_id": {k: v.status for k, v in stab.items()},
    }
    right: dict[str, Any] = {"pin_id": src.pin.pin_id}
    manifest2: Manifest | None
    try:
        manifest2, mismatched = measure(src.root, src.pin, pins.config.fixture_root)
    except FixtureScanError as exc:
        manifest2, mismatched = None, [str(exc)]
    if manifest2 is None or mismatched:
        differing = [f"fixture bytes: {', '.join(mismatched)}"]
        result.reasons.append(f"R9 {src.where} does not satisfy the second pin")
    else:
        copy = copy_of_first(pins.fixtures.pin_id, digest, src.pin, manifest2.digest())
        if copy:
            result.status = "refused"
            result.reasons.append(f"second pin refused: {copy}")
            return result
        right["fixture_digest"] = manifest2.digest()
        sig = signature_step(s, manifest2, s.out, "fixture_envelope_second_pin.json")
        if sig.transport is not None:
            result.transport.append(sig.transport)
            result.drift = None
            return result
        if sig.envelope is None:
            differing = [f"second pin not signed: {sig.problem}"]
        else:
            where = (src.root, pins.config.fixture_root, pins.config)
            signed = signed_suite(s, sig, manifest2.digest(), *where)
            # the verdict's evidence is the first pin's (signed_runs/): this lane keeps nothing
            lane = execute(s, signed, "local", suite, say, keep=False)
            io = {p.id for p in suite if p.property_class == "idempotent_io"}
            stab2 = assess_all([p.id for p in suite], lane.outcomes, s.runs, same_tree=io)
            result.transport.extend(t.retried() for t in lane.retried)
            result.transport.extend(t.to_json() for t in lane.transport)
            if (
                lane.refusals
                or lane.transport
                or any(v.status == "incomplete" for v in stab2.values())
            ):
                result.reasons.extend(lane.refusals)
                result.drift = None
                return result
            right["status_by_id"] = {k: v.status for k, v in stab2.items()}
            differing = sorted(k for k, v in stab2.items() if v.status != stab[k].status)
    result.drift = bool(differing)
    result.agrees = not differing
    result.status = "drift" if differing else "agree"
    if differing:
        result.reasons.append(f"R9 the two pins disagree: {', '.join(differing)}")
    DriftRecord(
        left=left,
        right=right,
        drift=bool(differing),
        differing=differing,
        left_digest=str(left.get("fixture_digest", "")),
        right_digest=str(right.get("fixture_digest", "")),
    ).write(s.out / FILE_NAMES["drift"])
    return result
