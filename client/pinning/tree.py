"""A tree to check pins against: the working tree of a directory, or a git revision.

Both read the pin files through a :class:`patchgate.pins.PinSource` (so errors name the file as
``path`` or ``REV:path``), list the regular ``.py`` files under a directory and read them. Links
are never followed: a symlinked module is not a module of the tree. The working tree skips what is
not the project's own code: hidden directories (``.git``, ``.venv``), ``__pycache__``, virtual
environments (a ``pyvenv.cfg``), ``site-packages``, ``node_modules`` and ``*.egg-info`` /
``*.dist-info``.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from patchgate.errors import UsageError
from patchgate.pins import DirSource, GitSource, PinSource

__all__ = ["RevTree", "SourceTree", "WorkTree", "open_tree"]

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
_GIT_TIMEOUT = 120


class SourceTree(Protocol):
    """What ``pin check`` reads from a tree."""

    @property
    def pins(self) -> PinSource:
        """The pin files and the configuration of the tree."""

    @property
    def name(self) -> str:
        """How to name the tree in a message (``the working tree``, ``revision main``)."""

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory of the tree (not a link)."""

    def python_files(self) -> list[str]:
        """Every regular ``.py`` file of the tree, relative POSIX paths, sorted."""

    def read_all(self, paths: list[str]) -> dict[str, bytes]:
        """The bytes of each of ``paths`` that can be read."""


def _skipped(name: str, directory: str) -> bool:
    return (
        name.startswith(".")
        or name in _SKIP_DIRS
        or name.endswith((".egg-info", ".dist-info"))
        or os.path.exists(os.path.join(directory, name, "pyvenv.cfg"))
    )


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

    def is_dir(self, path: str) -> bool:
        p = self.root / path
        return p.is_dir() and not p.is_symlink()

    def python_files(self) -> list[str]:
        found: list[str] = []
        for directory, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not _skipped(d, directory))
            rel = os.path.relpath(directory, self.root)
            for name in files:
                full = os.path.join(directory, name)
                if name.endswith(".py") and not os.path.islink(full) and os.path.isfile(full):
                    found.append(name if rel == "." else f"{Path(rel).as_posix()}/{name}")
        return sorted(found)

    def read_all(self, paths: list[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for path in paths:
            try:
                out[path] = (self.root / path).read_bytes()
            except OSError:
                continue
        return out


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args],
            input=stdin,
            capture_output=True,
            check=False,
            timeout=_GIT_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"git {args[0]} failed: {exc}") from None


@dataclass(frozen=True)
class RevTree:
    """The files of a git revision (a commit that exists: see :func:`open_tree`)."""

    repo: Path
    rev: str
    _listing: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def pins(self) -> PinSource:
        return GitSource(self.repo, self.rev)

    @property
    def name(self) -> str:
        return f"revision {self.rev}"

    def _entries(self) -> dict[str, str]:
        """Path -> git mode of every file of the revision (read once)."""
        if not self._listing:
            proc = _git(self.repo, "ls-tree", "-r", "-z", "--full-tree", self.rev)
            if proc.returncode != 0:
                raise UsageError(f"--rev {self.rev}: git ls-tree failed")
            for entry in proc.stdout.split(b"\0"):
                if entry:
                    meta, _, path = entry.partition(b"\t")
                    self._listing[path.decode("utf-8", "surrogateescape")] = meta.split()[
                        0
                    ].decode()
        return self._listing

    def is_dir(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self._entries())

    def python_files(self) -> list[str]:
        regular = ("100644", "100755")
        return sorted(p for p, m in self._entries().items() if p.endswith(".py") and m in regular)

    def read_all(self, paths: list[str]) -> dict[str, bytes]:
        """Every blob in one ``git cat-file --batch``."""
        if not paths:
            return {}
        request = "".join(f"{self.rev}:{p}\n" for p in paths).encode("utf-8", "surrogateescape")
        proc = _git(self.repo, "cat-file", "--batch", stdin=request)
        out: dict[str, bytes] = {}
        data, pos = proc.stdout, 0
        for path in paths:
            end = data.find(b"\n", pos)
            if end < 0:
                break
            header = data[pos:end].split()
            pos = end + 1
            if len(header) != 3 or header[1] != b"blob":
                continue  # "<name> missing"
            size = int(header[2])
            out[path] = data[pos : pos + size]
            pos += size + 1
        return out


def open_tree(repo: Path, rev: str | None) -> SourceTree:
    """The working tree of ``repo``, or its revision ``rev`` (UsageError: not a commit)."""
    if not repo.is_dir():
        raise UsageError(f"--repo {repo}: not a directory")
    if rev is None:
        return WorkTree(repo)
    if not rev or rev.startswith("-"):
        raise UsageError(f"--rev {rev!r}: not a revision")
    proc = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    if proc.returncode != 0:
        raise UsageError(f"--rev {rev}: not a commit of {repo}")
    return RevTree(repo, rev)
