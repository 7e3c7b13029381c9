"""The client's memory of how long each property took: a cache that only spreads work.

``$XDG_CACHE_HOME/patchgate/durations.json`` (default ``~/.cache/patchgate/durations.json``):
``{"v": 1, "ms": {<key>: <ms>}}``, where the key is a hash of the property id and its command, and
the value the mean duration of its runs in the last check that ran it. It is read to estimate the
cost of each group when a lane has several executors (``client.gate.runs.spread``) and written after
each lane; it is never read by anything that decides an outcome, a verdict or a receipt field, so
a stale, missing, corrupt or hostile file can only make the split less even. Reading never fails
a check (anything unreadable is an empty memory); writing is atomic and best effort.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from patchgate.pins import PropertyPin
from patchgate.results import RunOutcome

__all__ = ["MAX_ENTRIES", "default_path", "load", "save"]

MAX_ENTRIES = 20_000
_MAX_BYTES = 4 << 20


def default_path() -> Path:
    """``$XDG_CACHE_HOME/patchgate/durations.json`` (``~/.cache`` when unset or relative)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "patchgate" / "durations.json"


def _key(p: PropertyPin) -> str:
    text = json.dumps([p.id, list(p.command)], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _read(path: Path) -> dict[str, float]:
    try:
        with path.open("rb") as fh:
            raw = json.loads(fh.read(_MAX_BYTES + 1)[:_MAX_BYTES])
        table = raw["ms"] if isinstance(raw, dict) and raw.get("v") == 1 else {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in table.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < 1e9
    }


def load(path: Path, suite: Sequence[PropertyPin]) -> dict[str, float]:
    """The remembered duration (ms) of each property of ``suite`` that has one, by property id."""
    table = _read(path)
    return {p.id: table[_key(p)] for p in suite if _key(p) in table}


def save(path: Path, suite: Sequence[PropertyPin], outcomes: Iterable[RunOutcome]) -> None:
    """Remember the mean duration of each property's runs; never raises."""
    runs: dict[str, list[int]] = {}
    for o in outcomes:
        runs.setdefault(o.property_id, []).append(o.duration_ms)
    fresh: Mapping[str, float] = {
        _key(p): sum(runs[p.id]) / len(runs[p.id]) for p in suite if runs.get(p.id)
    }
    if not fresh:
        return
    with contextlib.suppress(OSError):
        table = {**_read(path), **fresh}
        if len(table) > MAX_ENTRIES:
            table = dict(list(table.items())[-MAX_ENTRIES:])
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"v": 1, "ms": table}, separators=(",", ":")), "utf-8")
        os.replace(tmp, path)
