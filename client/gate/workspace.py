"""Materialize the base and patched trees of one check, and what the patch changed between them.

The base tree is written from the blobs of ``--base`` into a private temp dir
(:func:`patchgate.git.materialize_tree`: the commit's exact bytes, modes and symlinks, no filter or
attribute applied, no checkout of the user's repo touched); the patched tree is a copy of it with
``git apply -p1`` (never ``--3way``, no index, no enclosing repository, no fuzz, whitespace
matched exactly) of the exact patch bytes, applied once. ``-p1`` is explicit so that git never
guesses a strip level from the patch text (it would, from a bare first name of a plain patch). A
patch that does not apply is a :class:`PatchApplyError`, which the gate turns into
``reject_provenance`` (unparsable).

What the patch touched is :meth:`Workspace.changes`: the two trees compared (paths, kinds, modes,
bytes), never the patch text. Pins are read from the base revision with
:class:`patchgate.pins.GitSource`, never from the patched tree.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from client.analysis.patch.treediff import PathChange, tree_changes
from patchgate import git
from patchgate.errors import PatchgateError, UsageError
from patchgate.pins import GitSource, PinSet, load_pins

__all__ = [
    "PatchApplyError",
    "Workspace",
    "base_pins",
    "materialize",
    "resolve_rev",
    "tree_at",
]


class PatchApplyError(PatchgateError):
    """The patch does not apply to the base revision: it is unparsable for the gate."""


@dataclass(frozen=True, kw_only=True)
class Workspace:
    """The two trees of one check, in a temp dir removed when the context exits."""

    repo: Path
    base_rev: str
    base_dir: Path
    patched_dir: Path

    @cached_property
    def _changes(self) -> tuple[PathChange, ...]:
        return tree_changes(self.base_dir, self.patched_dir)

    def changes(self) -> tuple[PathChange, ...]:
        """Every path whose kind, mode or bytes differ between the base and the patched tree:
        compared once per check (several steps ask; neither tree changes after the patch is
        applied)."""
        return self._changes

    def read_base(self, path: str) -> bytes | None:
        """Bytes of a regular file of the base tree (None: absent, a symlink or not a file)."""
        return _read(self.base_dir, path)

    def read_patched(self, path: str) -> bytes | None:
        """Bytes of a regular file of the patched tree (None: absent, a symlink or not a file)."""
        return _read(self.patched_dir, path)

    def read_pair(
        self, paths: Iterable[str]
    ) -> tuple[dict[str, bytes | None], dict[str, bytes | None]]:
        """Bytes of each path in the base and the patched tree (None: absent or not a file)."""
        return (
            {p: _read(self.base_dir, p) for p in paths},
            {p: _read(self.patched_dir, p) for p in paths},
        )


def _read(root: Path, rel: str) -> bytes | None:
    path = root / rel
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def resolve_rev(repo: Path, rev: str) -> str:
    """The commit id of ``rev`` in ``repo``; a UsageError if it is not a commit there."""
    if rev.startswith("-"):
        raise UsageError(f"revision {rev!r}: not a revision")
    commit = git.resolve_commit(repo, rev)
    if commit is None:
        raise UsageError(f"revision {rev!r}: not a commit in {repo}")
    return commit


# How the patch is applied is fixed here, never by the user's or the system's git config
# (``apply.ignoreWhitespace = change`` would let a hunk match context whose whitespace differs).
# It runs in the temp tree, which holds no ``.git`` (the base never does: :mod:`patchgate.git`
# refuses the name), under a ceiling: git finds no repository, so no repository config, attributes
# or hooks apply.
_APPLY = ("apply", "-p1", "--no-3way", "--whitespace=nowarn", "--no-ignore-whitespace")


def _apply(patch: bytes, patched: Path, scratch: Path) -> None:
    patch_file = scratch / "patch.diff"
    patch_file.write_bytes(patch)
    proc = git.run(
        None,
        *_APPLY,
        str(patch_file),
        cwd=patched,
        env={"GIT_CEILING_DIRECTORIES": str(patched.parent)},
    )
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise PatchApplyError("patch does not apply to the base: " + ("; ".join(why[:3]) or "?"))


@contextmanager
def materialize(repo: Path, base: str, patch: bytes) -> Iterator[Workspace]:
    """Yield the base and patched trees of ``patch`` on ``base``; the temp dir goes on exit."""
    repo = Path(repo).resolve()
    commit = resolve_rev(repo, base)
    with tempfile.TemporaryDirectory(prefix="patchgate-ws-") as tmp:
        root = Path(tmp)
        base_dir, patched_dir = root / "base", root / "patched"
        git.materialize_tree(repo, commit, base_dir)
        shutil.copytree(base_dir, patched_dir, symlinks=True)
        _apply(patch, patched_dir, root)
        yield Workspace(repo=repo, base_rev=commit, base_dir=base_dir, patched_dir=patched_dir)


@contextmanager
def tree_at(repo: Path, rev: str) -> Iterator[Path]:
    """Yield a temp dir holding the tree of ``rev`` (from its blobs); removed on exit."""
    commit = resolve_rev(Path(repo).resolve(), rev)
    with tempfile.TemporaryDirectory(prefix="patchgate-tree-") as tmp:
        dest = Path(tmp) / "tree"
        git.materialize_tree(Path(repo).resolve(), commit, dest)
        yield dest


def base_pins(repo: Path, rev: str) -> PinSet:
    """The pins of the base revision (configuration included), read from its blobs."""
    return load_pins(GitSource(Path(repo), rev))
