"""Helpers of the compose and fleet tests: build the images once per session, prepare a fleet dir.

Not a test module. The images are rebuilt once per pytest process (``compose/build-images.sh``
reuses the Debian base and takes seconds), so the containers run the code under test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "compose"
BILLING = REPO / "examples" / "billing"
PATCHES = BILLING / "patches"
CLOCK = "2026-09-10T12:00:00Z"
_BUILT: list[bool] = []

__all__ = [
    "CLOCK", "COMPOSE", "PATCHES", "billing_git_repo", "docker_json", "ensure_images",
    "prepare_fleet_dir", "run", "unique",
]  # fmt: skip


def run(
    argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 600, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run a command (stdin closed); raise with its output when ``check`` and it fails."""
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False,
        stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
    )  # fmt: skip
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def unique() -> str:
    """A short random name part (compose project, stack, sweep label)."""
    return uuid.uuid4().hex[:8]


def ensure_images() -> None:
    """``compose/build-images.sh`` once per test session."""
    if not _BUILT:
        run([str(COMPOSE / "build-images.sh")], timeout=900)
        _BUILT.append(True)


def prepare_fleet_dir(path: Path) -> Path:
    """``compose/prepare.sh`` into ``path`` (keys, certs, modes for uid 10001)."""
    run([str(COMPOSE / "prepare.sh"), str(path)], timeout=300)
    return path


def billing_git_repo(path: Path) -> Path:
    """A git repository holding examples/billing (without patches/) as its first commit."""
    shutil.copytree(BILLING, path, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    git = ["git", "-C", str(path), "-c", "user.name=person", "-c", "user.email=p@example.org"]
    run([*git, "init", "-q"])
    run([*git, "add", "-A"])
    run([*git, "commit", "-qm", "base"])
    return path


def docker_json(*argv: str) -> list[Any]:
    """``docker ARGV --format '{{json .}}'`` as a list of objects (one per line)."""
    out = run(["docker", *argv, "--format", "{{json .}}"]).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]
