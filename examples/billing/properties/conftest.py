"""Shared helpers of the billing properties: fixtures are read from the read-only fixture tree."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def load_fixture(name: str) -> object:
    """The parsed JSON of one fixture file."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture
def rng() -> random.Random:
    """A random generator seeded from the signed seed (PATCHGATE_SEED)."""
    return random.Random(int(os.environ.get("PATCHGATE_SEED", "0")))
