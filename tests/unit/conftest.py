"""Unit-test fixtures shared by several modules (no Docker, no sockets)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with an empty fixture pin (``check`` reads its config at the base)."""
    r = tmp_path / "repo"
    (r / "pins").mkdir(parents=True)
    (r / "pins" / "fixtures.json").write_text("{}")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "b"],
    ):
        subprocess.run(["git", "-C", str(r), *args], check=True, capture_output=True)
    return r
