"""The executor-signed run results a check used, kept beside its receipt (issue 43).

Every verified result envelope of the local lane (suite runs and mutation batches) is written as
received to ``<out>/signed_runs/<sha256 of its payload, 24 hex>.json`` (DSSE JSON, the form of
``fixture_envelope.json``). ``patchgate verify-receipt --recompute`` re-derives the verdict from
these alone; nothing here decides anything.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from patchgate.atomicfile import atomic_write_json
from patchgate.envelope import Envelope

__all__ = ["SIGNED_RUNS", "keep_signed", "signed_runs_dir"]

#: The directory, beside the receipt, of the kept run-result envelopes.
SIGNED_RUNS = "signed_runs"


def signed_runs_dir(out: Path) -> Path:
    """Where a check writing to ``out`` keeps its signed run results."""
    return out / SIGNED_RUNS


def keep_signed(directory: Path, envelope: Envelope) -> Path:
    """Write ``envelope`` as received into ``directory``, named by its payload's digest."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{hashlib.sha256(envelope.payload).hexdigest()[:24]}.json"
    atomic_write_json(path, envelope.to_json())
    return path
