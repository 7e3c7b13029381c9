"""A tree to check pins against: the working tree of a directory, or a git revision.

Both read the pin files through a :class:`patchgate.pins.PinSource` (so an error names the file
as ``path`` or ``REV:path``) and give a directory holding the tree's files: the working tree
itself, or the revision written from its blobs into a temp dir — the same materialization
``patchgate check`` makes of its base (:func:`client.gate.workspace.tree_at`).

:func:`python_files` lists what may be the project's own modules: regular ``.py`` files, never
through a link, skipping hidden directories (``.git``, ``.venv``), ``__pycache__``, virtual
environments (a ``pyvenv.cfg``), ``site-packages``, ``node_modules`` and ``*.egg-info`` /
``*.dist-info``; which of them are production source is the layout's to say.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from client.gate.workspace import resolve_rev, tree_at
from patchgate.errors import UsageError
from patchgate.pins import DirSource, GitSource, PinSource

__all__ = ["RevTree", "SourceTree", "WorkTree", "open_tree", "python_files", "tree_files"]

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})


class SourceTree(Protocol):
    """What ``pin check`` reads from a tree."""

    @property
    def pins(self) -> PinSource:
        """The pin files and the configuration of the tree."""

    @property
    def name(self) -> str:
        """How to name the tree in a message (``the working tree``, ``revision main``)."""

    def checkout(self) -> AbstractContextManager[Path]:
        """A directory holding the tree's files, for as long as the context lasts."""


@dataclass(frozen=True)
class WorkTree:
    """The files of a directory as they are now."""

    root: Path

    @property
    def pins(self) -> PinSource:
        return DirSource(self.root)

    @property
    def name(self) -> str:
        return "the working tree"

    def checkout(self) -> AbstractContextManager[Path]:
        return nullcontext(self.root)


@dataclass(frozen=True)
class RevTree:
    """The files of a git revision (a commit that exists: see :func:`open_tree`)."""

    repo: Path
    rev: str

    @property
    def pins(self) -> PinSource:
        return GitSource(self.repo, self.rev)

    @property
    def name(self) -> str:
        return f"revision {self.rev}"

    @contextmanager
    def checkout(self) -> Iterator[Path]:
        with tree_at(self.repo, self.rev) as root:
            yield root


def _skipped(name: str, directory: str) -> bool:
    return (
        name.startswith(".")
        or name in _SKIP_DIRS
        or name.endswith((".egg-info", ".dist-info"))
        or os.path.exists(os.path.join(directory, name, "pyvenv.cfg"))
    )


def python_files(root: Path) -> list[str]:
    """Every regular ``.py`` file under ``root`` (relative POSIX paths, sorted; see above)."""
    return [f for f in tree_files(root) if f.endswith(".py")]


def tree_files(root: Path) -> list[str]:
    """Every regular file under ``root``, skipping what :func:`python_files` skips."""
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _skipped(d, directory))
        rel = Path(os.path.relpath(directory, root)).as_posix()
        for name in files:
            full = os.path.join(directory, name)
            if not os.path.islink(full) and os.path.isfile(full):
                found.append(name if rel == "." else f"{rel}/{name}")
    return sorted(found)


def open_tree(repo: Path, rev: str | None) -> SourceTree:
    """The working tree of ``repo``, or its revision ``rev`` (UsageError: not a commit)."""
    if not repo.is_dir():
        raise UsageError(f"--repo {repo}: not a directory")
    if rev is None:
        return WorkTree(repo)
    try:
        resolve_rev(repo, rev)
    except UsageError as exc:
        raise UsageError(f"--rev: {exc}") from None
    return RevTree(repo, rev)
