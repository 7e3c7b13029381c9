"""No command writes where it reads: the one check of every output path a command is given.

Every output path (``--out``, ``--junit``, any other) passes through :func:`guard_output` before
anything is read or written. It is refused with a :class:`~patchgate.errors.UsageError` (exit 64,
nothing written) when, after symbolic links and ``..`` are resolved, it lies

* inside the pins directory, the fixture tree, an oracle path (``tests/``, ``properties/``,
  ``pins/`` by default, as ``[tool.patchgate]`` says) or the ``.git`` directory (hooks and
  configuration live there) of the repository the command reads — for a
  command that reads no repository (``digest`` of a bare tree, ``dual-pin``, ``flake-observe``),
  of the git work tree the output path lies in, and of the nearest directory above it that holds
  ``patchgate.toml``, ``pyproject.toml`` or a ``pins`` directory (a plain directory's project,
  no git needed), each with its configuration or the defaults;
* inside another place the command names (the directory of a pin file it reads);
* onto one of the command's own input files (for a directory output: an input inside it);
* under ``/proc``, ``/sys`` or ``/dev``, below something that is not a directory, or where the
  nearest existing directory is not writable.

Pure but for reading the file system (no git is run). Decisions: docs/decisions.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchgate.errors import PatchgateError, UsageError
from patchgate.pins import DirSource, ProjectConfig, load_config

__all__ = ["Place", "guard_output", "project_of", "reading_places", "work_tree_of"]

#: Kernel file systems: nothing a command writes belongs there.
_PSEUDO = (Path("/proc"), Path("/sys"), Path("/dev"))


@dataclass(frozen=True, kw_only=True)
class Place:
    """A directory (or file) no output may lie in, and how the refusal names it."""

    path: Path
    what: str


def work_tree_of(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` (resolved) holding a ``.git``, if any."""
    for place in (path, *path.parents):
        if (place / ".git").exists() or (place / ".git").is_symlink():
            return place
    return None


#: What marks a directory outside any git work tree as a project whose places no output may
#: enter: its configuration, or a pins directory by the default name.
_PROJECT_MARKS = ("patchgate.toml", "pyproject.toml", "pins")


def project_of(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` (resolved) that holds a patchgate or Python
    project configuration or a ``pins`` directory: a plain (non-git) directory's project."""
    for place in (path, *path.parents):
        if any((place / mark).exists() for mark in _PROJECT_MARKS):
            return place
    return None


def _config_of(tree: Path) -> ProjectConfig:
    """The tree's ``[tool.patchgate]`` (or ``patchgate.toml``); its defaults when it is absent
    or invalid (a broken configuration must not make the check weaker than the defaults)."""
    try:
        return load_config(DirSource(tree))
    except PatchgateError:
        return ProjectConfig()


def reading_places(repo: Path, config: ProjectConfig | None = None) -> list[Place]:
    """The pins directory, the fixture tree, every oracle path and the git directory of
    ``repo``."""
    conf = config if config is not None else _config_of(repo)
    places = [
        Place(path=repo / ".git", what="the git directory"),
        Place(path=repo / conf.pins_dir, what="the pins directory"),
        Place(path=repo / conf.fixture_root, what="the fixture tree"),
    ]
    places.extend(
        Place(path=repo / p.rstrip("/"), what=f"the oracle path {p}")
        for p in conf.oracle_paths
        if p.rstrip("/")
    )
    return places


def _resolve(path: Path) -> Path:
    return Path(os.path.realpath(Path(path).absolute()))


def _inside(target: Path, place: Path) -> bool:
    return target == place or target.is_relative_to(place)


def _writable(flag: str, shown: Path, target: Path, *, directory: bool) -> None:
    for pseudo in _PSEUDO:
        if _inside(target, pseudo):
            raise UsageError(f"{flag} {shown}: under {pseudo}, not a place for output")
    if target.exists() and not (target.is_file() or target.is_dir()):
        raise UsageError(f"{flag} {shown}: exists and is neither a file nor a directory")
    above = next((p for p in target.parents if p.exists()), Path("/"))
    if not above.is_dir():
        raise UsageError(f"{flag} {shown}: {above} is not a directory")
    # A file is replaced by a rename in its directory; a directory output is filled in place.
    check = target if directory and target.is_dir() else above
    if not os.access(check, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {shown}: {check} is not writable")


def guard_output(
    path: Path,
    *,
    flag: str = "--out",
    repo: Path | None = None,
    config: ProjectConfig | None = None,
    inputs: Iterable[Path] = (),
    places: Sequence[Place] = (),
    directory: bool = False,
) -> Path:
    """Refuse (UsageError, exit 64) an output path a command must not write; return ``path``.

    ``repo``: the repository the command reads (``config``: its configuration, when the command
    has already read it from the base); None: the git work tree ``path`` lies in, if any.
    ``inputs``: the files the command reads. ``places``: further places to keep out of.
    ``directory``: the output is a directory the command fills (``check --out``).
    """
    target = _resolve(path)
    _writable(flag, Path(path), target, directory=directory)
    if repo is not None:
        trees = [_resolve(repo)]
    else:  # the git work tree the path lies in, and the plain directory's project (seed 004)
        trees = [t for t in (work_tree_of(target), project_of(target.parent)) if t is not None]
    forbidden = [*places]
    for tree in dict.fromkeys(trees):
        conf = config if repo is not None and config is not None else _config_of(tree)
        forbidden.extend(reading_places(tree, conf))
    for place in forbidden:
        resolved = _resolve(place.path)
        if _inside(target, resolved):
            raise UsageError(
                f"{flag} {path}: inside {place.what} ({resolved}); patchgate never writes "
                "where it reads"
            )
    for given in inputs:
        source = _resolve(given)
        if target == source or (directory and source.is_relative_to(target)):
            raise UsageError(f"{flag} {path}: that is an input of this command ({given})")
    return Path(path)
