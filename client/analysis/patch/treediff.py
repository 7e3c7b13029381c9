"""What a patch changed, read from the trees: the base tree against the tree ``git apply`` made.

Every path whose kind (regular file, symlink, other), executable bit, bytes or link target differ
between the two trees is one :class:`PathChange`. Directories are not entries (git tracks none);
an empty directory left behind by a deletion is nothing. Nothing is followed: a symlink is its
target string, never the file it points to. Nothing is skipped either (the trees are written
from a commit's blobs: no ``.git`` in them, and ``git apply`` refuses to write one). This is the
one answer to "what did the patch touch" (docs/gate-analysis.md); the patch text is never parsed
a second time for it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Entry", "PathChange", "new_empty_dirs", "scan_tree", "tree_changes"]


@dataclass(frozen=True)
class Entry:
    """One non-directory path of a tree: ``kind`` is ``file``, ``link`` or ``other``."""

    kind: str
    executable: bool
    sha256: str

    @property
    def mode(self) -> str:
        """git's notation: ``100644``, ``100755``, ``120000`` (``other``: ``0``)."""
        if self.kind == "link":
            return "120000"
        if self.kind == "file":
            return "100755" if self.executable else "100644"
        return "0"


@dataclass(frozen=True)
class PathChange:
    """One path that differs: ``before`` is None when added, ``after`` None when deleted."""

    path: str
    before: Entry | None
    after: Entry | None

    @property
    def status(self) -> str:
        """``added``, ``deleted``, ``modified`` (bytes or target) or ``mode`` (mode/kind only)."""
        if self.before is None:
            return "added"
        if self.after is None:
            return "deleted"
        if self.before.sha256 == self.after.sha256 and self.before.kind == self.after.kind:
            return "mode"
        return "modified"

    @property
    def is_regular_pair(self) -> bool:
        """Both sides are regular files or absent (no symlink, no special file)."""
        return all(e is None or e.kind == "file" for e in (self.before, self.after))


def _entry(full: str, st: os.stat_result) -> Entry:
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(full)
        return Entry("link", False, hashlib.sha256(os.fsencode(target)).hexdigest())
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with open(full, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return Entry("file", bool(st.st_mode & 0o111), digest.hexdigest())
    return Entry("other", False, "")


def scan_tree(root: Path) -> dict[str, Entry]:
    """Every non-directory path under ``root`` (POSIX, relative); no link followed."""
    out: dict[str, Entry] = {}
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as it:
            for item in it:
                rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
                st = item.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    stack.append(rel)
                else:
                    out[rel] = _entry(item.path, st)
    return out


def tree_changes(base: Path, patched: Path) -> tuple[PathChange, ...]:
    """Every path whose kind, mode, bytes or link target differ, sorted by path."""
    before, after = scan_tree(base), scan_tree(patched)
    return tuple(
        PathChange(path, before.get(path), after.get(path))
        for path in sorted(set(before) | set(after))
        if before.get(path) != after.get(path)
    )


def _empty_dirs(root: Path) -> set[str]:
    out: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if not dirnames and not filenames and os.path.realpath(dirpath) != os.path.realpath(root):
            out.add(Path(dirpath).relative_to(root).as_posix())
    return out


def new_empty_dirs(base: Path, patched: Path) -> tuple[str, ...]:
    """Empty directories of ``patched`` that are not empty directories of ``base``: git tracks no
    directory, so a patch that leaves one behind wrote something that is not a file — ``git
    apply`` without an index writes a gitlink (a submodule) that way. A directory a deletion
    emptied counts too: it held files in the base (fail closed; the deletion is a change anyway).
    """
    return tuple(sorted(_empty_dirs(patched) - _empty_dirs(base)))
