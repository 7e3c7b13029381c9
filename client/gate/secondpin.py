"""``--second-pin``: the same patch on a second fixture pin, compared in drift.json (R9, exit 3).

The second pin is read from the given file (an operator input, like the base pins); the patched
tree's fixture bytes must satisfy it, else the two pins disagree about the bytes themselves. The
manifest is signed by the same signer, the suite runs again on the local lane, and the two
``status_by_id`` maps are compared. A transport failure on the second run is ``unavailable``; a
second pin the signer will not sign is counted as drift (fail closed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client.gate.settings import CheckSettings
from client.gate.steps import Say, execute, measure, signature_step
from client.gate.workspace import Workspace
from client.verdict.stability import Stability, assess_all
from patchgate.errors import FixtureScanError, UsageError
from patchgate.ledgers import FILE_NAMES, DriftRecord
from patchgate.pins import PinSet, PropertyPin, parse_fixture_pin

__all__ = ["SecondPin", "second_pin_step"]


@dataclass(kw_only=True)
class SecondPin:
    """Step 8b: the same patch on a second fixture pin."""

    drift: bool | None = False  # None: the second run could not complete (transport)
    agrees: bool | None = None
    transport: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def second_pin_step(  # noqa: PLR0917 - one call site, the check's state in pipeline order
    s: CheckSettings,
    ws: Workspace,
    pins: PinSet,
    suite: Sequence[PropertyPin],
    stab: Mapping[str, Stability],
    digest: str,
    say: Say,
) -> SecondPin:
    """Run the suite again on ``--second-pin``; write drift.json comparing the two ledgers."""
    result = SecondPin()
    if s.second_pin is None:
        return result
    try:
        raw = Path(s.second_pin).read_bytes()
    except OSError as exc:
        raise UsageError(f"--second-pin {s.second_pin}: cannot read: {exc.strerror}") from None
    pin2 = parse_fixture_pin(raw, str(s.second_pin), pins.config.fixture_root)
    left = {
        "pin_id": pins.fixtures.pin_id,
        "fixture_digest": digest,
        "status_by_id": {k: v.status for k, v in stab.items()},
    }
    right: dict[str, Any] = {"pin_id": pin2.pin_id}
    differing: list[str] = []
    try:
        manifest2, mismatched = measure(ws.patched_dir, pin2, pins.config.fixture_root)
    except FixtureScanError as exc:
        manifest2, mismatched = None, [str(exc)]
    if manifest2 is None or mismatched:
        differing = [f"fixture bytes: {', '.join(mismatched)}"]
        result.reasons.append("R9 the fixture bytes do not satisfy the second pin")
    else:
        right["fixture_digest"] = manifest2.digest()
        sig = signature_step(s, manifest2, s.out, "fixture_envelope_second_pin.json")
        if sig.transport is not None:
            result.transport.append(sig.transport)
            result.drift = None
            return result
        if sig.envelope is None:
            differing = [f"second pin not signed: {sig.problem}"]
        else:
            lane = execute(
                s,
                lane="local",
                addresses=s.executors,
                suite=suite,
                envelope=sig.envelope,
                digest=manifest2.digest(),
                workspace=ws.patched_dir,
                fixture_root=pins.config.fixture_root,
                executor_keyring=sig.executor_keyring,
                say=say,
            )
            stab2 = assess_all([p.id for p in suite], lane.outcomes, s.runs)
            result.transport.extend({**t.to_json(), "retried": True} for t in lane.retried)
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
    if differing:
        result.reasons.append(f"R9 the two pins disagree: {', '.join(differing)}")
    DriftRecord(left=left, right=right, drift=bool(differing), differing=differing).write(
        s.out / FILE_NAMES["drift"]
    )
    return result
