"""requirements/dev.txt and runtime.txt: exact, hashed, true to pyproject.toml and to each other.

Offline checks of the committed files; tests/integration/test_install.py installs them.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
_ENTRY = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+?)(?: ; (.+?))?(?: \\)?$")


def pins(name: str) -> dict[str, list[tuple[Version, Marker | None, int]]]:
    """Each locked package: its versions (a universal lock may hold two), marker, hash count."""
    found: dict[str, list[tuple[Version, Marker | None, int]]] = {}
    lines = (ROOT / "requirements" / name).read_text().splitlines()
    for i, line in enumerate(lines):
        m = _ENTRY.match(line)
        if not m:
            continue
        hashes = 0
        for follow in lines[i + 1 :]:
            if not follow.startswith("    --hash=sha256:"):
                break
            hashes += 1
        marker = Marker(m.group(3)) if m.group(3) else None
        found.setdefault(canonicalize_name(m.group(1)), []).append(
            (Version(m.group(2)), marker, hashes)
        )
    return found


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [
        Requirement(d) for d in [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    ]


def test_every_locked_package_is_exact_and_hashed() -> None:
    """No entry without a sha256; no requirement line in another form."""
    for name in ("dev.txt", "runtime.txt"):
        locked = pins(name)
        assert len(locked) > 10
        for package, entries in locked.items():
            for version, _, hashes in entries:
                assert hashes > 0, f"{name}: {package}=={version} has no hash"
        for line in (ROOT / "requirements" / name).read_text().splitlines():
            assert not line.startswith("-"), f"{name}: an option line {line!r}"


def test_every_declared_dependency_is_locked_within_its_range() -> None:
    """Each runtime and dev dependency of pyproject.toml has a pin its range admits."""
    locked = pins("dev.txt")
    for req in _declared():
        entries = locked.get(canonicalize_name(req.name))
        assert entries, f"{req.name} is declared but not locked: run scripts/lock.sh"
        for version, _, _ in entries:
            assert req.specifier.contains(version, prereleases=True), f"{req} locked at {version}"


def test_the_runtime_lock_names_the_dev_lock_s_versions() -> None:
    """The image and CI recipes get exactly the versions the tests ran with."""
    dev = pins("dev.txt")
    for package, entries in pins("runtime.txt").items():
        assert package in dev, f"{package} is in runtime.txt only"
        assert {v for v, _, _ in entries} <= {v for v, _, _ in dev[package]}, package


def test_the_generator_and_the_build_backend_are_locked() -> None:
    """grpcio-tools (what made patchgate/v1/) and setuptools (what builds patchgate) are pinned."""
    dev = pins("dev.txt")
    assert len(dev["grpcio-tools"]) == 1
    assert len(dev["setuptools"]) == 1


def _pip_installs(text: str) -> list[str]:
    """Each ``pip install`` command of a recipe, its folded continuation lines joined."""
    joined = re.sub(r"\n\s+(?=[-\"'$])", " ", text)
    return [line for line in joined.splitlines() if "pip install" in line]


def test_the_image_and_the_ci_recipes_install_the_runtime_lock() -> None:
    """Every install of patchgate outside setup.sh takes its dependencies from runtime.txt with
    hashes, and patchgate itself with --no-deps: nothing floats to what an index serves today."""
    (wheels,) = [
        line
        for line in (ROOT / "compose" / "build-images.sh").read_text().splitlines()
        if "pip wheel" in line and "-r requirements/runtime.txt" in line
    ]
    assert "--require-hashes" in wheels
    assert (
        "--require-hashes -r /tmp/wheels/runtime.txt"
        in (ROOT / "compose" / "Dockerfile").read_text()
    )
    for recipe in ("github-actions.yml", "gitlab-ci.yml"):
        installs = _pip_installs((ROOT / "examples" / "ci" / recipe).read_text())
        assert installs, recipe
        for line in installs:
            locked = "--require-hashes" in line and "requirements/runtime.txt" in line
            assert locked or "--no-deps" in line, f"{recipe}: {line.strip()}"
