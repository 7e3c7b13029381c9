"""Unit-test fixtures shared by several modules (no Docker, no sockets)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

EMPTY_FIXTURE_PIN = (
    '{"pin_id": "fixpin-empty", "algorithm": "sha256", "files": {}, "seed": 7,'
    ' "clock_bound_ms": 30000, "allowed_commands": [["python", "-m", "pytest"]]}'
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with valid, empty pins (``check`` validates the base's pins)."""
    r = tmp_path / "repo"
    (r / "pins").mkdir(parents=True)
    (r / "pins" / "fixtures.json").write_text(EMPTY_FIXTURE_PIN)
    (r / "pins" / "properties.json").write_text('{"properties": []}')
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "b"],
    ):
        subprocess.run(["git", "-C", str(r), *args], check=True, capture_output=True)
    return r
