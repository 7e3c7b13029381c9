"""A small ``src/``-layout library generated for the operator commands' tests (no Docker)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]

CORE = """\
def slugify(text):
    return "-".join(words(text))


def words(text):
    return text.lower().split()


class Counter:
    def count(self, text):
        def inner():
            return len(words(text))
        return inner()
"""

TESTS = """\
import pytest
from textkit.core import Counter, slugify


@pytest.mark.patchgate(
    claim="slugify is idempotent",
    kind="pure_fn",
    covers=["textkit.core.slugify"],
    id="textkit.slugify.idempotent",
)
def test_slugify_idempotent():
    once = slugify("A b")
    assert isinstance(once, str) and once
    assert slugify(once) == once


@pytest.mark.patchgate(kind="pure_fn", covers=["textkit.core.Counter"])
def test_count():
    assert Counter().count("a b") == 2


def test_not_a_property():
    assert slugify("x") == "x"
"""

PYPROJECT = """\
[project]
name = "textkit"
version = "0.1"

[tool.pytest.ini_options]
pythonpath = ["src"]
addopts = ["--strict-markers"]
"""


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Write ``files`` (relative path -> text or bytes) under ``root``."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")


def make_library(root: Path, *, pyproject: bool = True) -> Path:
    """A ``src/``-layout library ``textkit`` with one fixture file and marked tests."""
    files: dict[str, str | bytes] = {
        "src/textkit/__init__.py": "from textkit.core import slugify\n",
        "src/textkit/core.py": CORE,
        "tests/test_core.py": TESTS,
        "fixtures/words.json": '{"words": ["a", "b"]}\n',
    }
    if pyproject:
        files["pyproject.toml"] = PYPROJECT
    write(root, files)
    return root


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` (a throwaway identity for commits)."""
    proc = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return proc.stdout


def fixture_pin(files: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """A valid fixture pin object."""
    return {
        "pin_id": "fixpin-t",
        "algorithm": "sha256",
        "files": files or {},
        "seed": 7,
        "clock_bound_ms": 30000,
        "allowed_commands": [PYTEST],
        **extra,
    }


def prop(pid: str, covers: list[str], node: str = "tests/test_core.py::test_x") -> dict[str, Any]:
    """A valid property object."""
    return {
        "id": pid,
        "claim": "",
        "class": "pure_fn",
        "covers": covers,
        "command": [*PYTEST, node],
    }


def write_pins(
    root: Path,
    properties: list[dict[str, Any]],
    fixtures: dict[str, Any] | None = None,
    flakes: object = None,
) -> None:
    """Write the pin files (flakes.json only when ``flakes`` is given)."""
    files: dict[str, str | bytes] = {
        "pins/fixtures.json": json.dumps(fixtures or fixture_pin()),
        "pins/properties.json": json.dumps({"properties": properties}),
    }
    if flakes is not None:
        files["pins/flakes.json"] = json.dumps(flakes)
    write(root, files)
