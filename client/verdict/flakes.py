"""Flake observations (docs/gate.md): when a pre-listed flake may excuse a failing property.

A failing property is a flake observation only when all of these hold:

* the flake is in the base ledger and unexpired at the review clock;
* the flake lists the property's test id, or the property's test cites the flake id;
* the property covers **no changed symbol** (a flake never excuses a defect in the code the patch
  changed: the patch could make that code raise the flake's signature), and no failing run
  executed one (when the executor reports what a run executed);
* **no production code the patch changed can explain the failure** (issue 22): with a
  trustworthy record of the modules the property's runs imported (``imported``: the judge's
  proxy imports plus their static import closure, :data:`DYNAMIC` for a dynamic import, which
  counts as every production module, whatever phase it ran in), no changed symbol may belong to
  one of them; **without** such a record (every run today, and ``--judge off``), the patch may
  change no production code at all. A module constant the test reads, or a function its test
  module calls at import (``BATCH = make_batch(100)``), is code the tracer of the call phase
  never sees;
* **every** failing run of the property failed with ``fail`` or ``error`` whose normalized failure
  contains the flake's signature (``exceeded_bound`` is never a flake, and one matching run does not
  excuse another run that failed for a different reason).

A property that *cites* a valid flake and fails without matching it is a mismatched freeze (R4).
An observation is never credit.

A pinned property whose test is quarantined by a skip/xfail citation (assertion class
``freeze_ref``, e.g. ``@pytest.mark.skip(reason="FLK-1044: ...")``) whose every cited id is a
valid, unexpired flake of the base ledger is :func:`quarantined`: it does not run (a skipped test
would only report an error and block every patch), it is listed as a citation, and it never earns
credit. A citation of an unknown or expired id is R4 and quarantines nothing. Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from client.verdict.admission import covering
from client.verdict.stability import Stability
from patchgate.pins import Flake, PropertyPin
from patchgate.results import RunOutcome, normalize_failure
from patchgate.symbols import module_of

__all__ = [
    "DYNAMIC",
    "FLAKE_OUTCOMES",
    "FlakeObservation",
    "FlakeReport",
    "changed_code_explains",
    "observe_flakes",
    "quarantined",
]

FLAKE_OUTCOMES = ("fail", "error")  # exceeded_bound is never a flake
#: In a record of imported modules: the run imported dynamically (``importlib``,
#: ``__import__``): it counts as every production module.
DYNAMIC = "*"


@dataclass(frozen=True, kw_only=True)
class FlakeObservation:
    """A failing test on a valid baseline freeze whose observed failure matches its signature."""

    property_id: str
    test_id: str
    flake_id: str
    signature: str
    observed: str

    def to_json(self) -> dict[str, Any]:
        """The entry of the receipt's ``flake_observations``."""
        return {
            "property_id": self.property_id,
            "test_id": self.test_id,
            "flake_id": self.flake_id,
            "signature": self.signature,
            "observed": self.observed,
        }


@dataclass(frozen=True, kw_only=True)
class FlakeReport:
    """Observations, R4 mismatch problems, and notes on flakes that were refused as excuses."""

    observations: tuple[FlakeObservation, ...] = ()
    problems: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()


def _matches(flake: Flake, failures: Sequence[RunOutcome]) -> bool:
    """Every failing run is a fail/error whose normalized failure holds the flake's signature."""
    wanted = normalize_failure(flake.signature)
    return bool(wanted) and all(
        r.outcome in FLAKE_OUTCOMES and wanted in normalize_failure(r.failure_signature)
        for r in failures
    )


def changed_code_explains(
    changed_symbols: Sequence[str], imported_modules: frozenset[str] | None
) -> tuple[str, ...]:
    """The changed symbols that could explain a failing run, given what it imported.

    ``imported_modules``: the production modules a trustworthy record shows the property's runs
    imported (the judge's proxy imports plus their static import closure; :data:`DYNAMIC` in it
    counts as every module), or None when there is no such record — then every changed symbol
    explains it (the strict rule of ``--judge off``). A symbol whose module is unknown or empty
    (one name changed in two modules) always explains it (fail closed)."""
    if imported_modules is None or DYNAMIC in imported_modules:
        return tuple(sorted(changed_symbols))
    return tuple(
        sorted(
            s
            for s in changed_symbols
            if not (module := module_of(s)) or _within(module, imported_modules)
        )
    )


def _within(module: str, imported: frozenset[str]) -> bool:
    """``module`` or one of its packages was imported (importing ``pkg.mod`` runs ``pkg``)."""
    return any(i == module or i.startswith(module + ".") for i in imported)


def observe_flakes(
    *,
    suite: Sequence[PropertyPin],
    local: Mapping[str, Stability],
    citations: Mapping[str, Sequence[str]],
    flakes: Sequence[Flake],
    clock: dt.datetime,
    changed_symbols: Sequence[str],
    imported: Mapping[str, frozenset[str]] | None = None,
) -> FlakeReport:
    """Which failing suite properties are flake observations (see the module docstring).

    ``imported``: property id -> the production modules a trustworthy record shows its runs
    imported (:func:`changed_code_explains`); None, or a property missing from it: no trustworthy
    record, so no excuse when the patch changed any production code."""
    observations: list[FlakeObservation] = []
    problems: list[str] = []
    refused: list[str] = []
    for prop in suite:
        stab = local.get(prop.id)
        failures = [r for r in (stab.runs if stab else ()) if r is not None and r.outcome != "pass"]
        test_id = prop.command[-1]
        cited = set(citations.get(prop.id, ()))
        relevant = [
            f for f in flakes if f.valid_at(clock) and (test_id in f.tests or f.id in cited)
        ]
        if not relevant or not failures:
            continue
        flake = next((f for f in relevant if _matches(f, failures)), None)
        ran = {s for r in failures for s in r.executed if s in changed_symbols}
        hit = sorted({*covering(prop, changed_symbols), *ran})
        record = imported.get(prop.id) if imported is not None else None
        explains = changed_code_explains(changed_symbols, record)
        if flake is not None and hit:
            refused.append(
                f"flake {flake.id} cannot excuse {prop.id}: it covers or ran changed "
                f"{', '.join(hit)}"
            )
        elif flake is not None and explains:
            why = (
                "no trustworthy record of what its runs imported, and the patch changed "
                "production code"
                if record is None
                else "its runs imported modules whose code the patch changed"
            )
            refused.append(
                f"flake {flake.id} cannot excuse {prop.id}: {why} ({', '.join(explains[:5])}"
                + (f" and {len(explains) - 5} more" if len(explains) > 5 else "")
                + ")"
            )
        elif flake is not None:
            observations.append(
                FlakeObservation(
                    property_id=prop.id,
                    test_id=test_id,
                    flake_id=flake.id,
                    signature=flake.signature,
                    observed=failures[0].failure_signature,
                )
            )
        elif cited:
            problems.append(
                f"{prop.id} failed, but not with the signature of {', '.join(sorted(cited))}"
            )
    return FlakeReport(
        observations=tuple(observations), problems=tuple(problems), refused=tuple(refused)
    )


def quarantined(
    *,
    properties: Sequence[PropertyPin],
    assertion_classes: Mapping[str, str],
    citations: Mapping[str, Sequence[str]],
    flakes: Sequence[Flake],
    clock: dt.datetime,
) -> dict[str, str]:
    """Property id -> why it does not run: its test is a freeze citation (skip/xfail citing a flake
    id) and every id it cites is a valid, unexpired flake of the base ledger."""
    known = {f.id: f for f in flakes}
    out: dict[str, str] = {}
    for prop in properties:
        ids = tuple(citations.get(prop.id, ()))
        if assertion_classes.get(prop.id) != "freeze_ref" or not ids:
            continue
        valid = [known[i] for i in ids if i in known and known[i].valid_at(clock)]
        if len(valid) == len(ids):
            until = ", ".join(f"{f.id} until {f.expires_on.isoformat()}" for f in valid)
            out[prop.id] = f"quarantined by a freeze citation ({until}): not run, never credit"
    return out
