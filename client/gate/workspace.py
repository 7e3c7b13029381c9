"""Materialize the base and patched trees of one check, and what the patch changed between them.

The base tree is ``git archive`` of ``--base`` extracted into a private temp dir (no checkout of the
user's repo is touched); the patched tree is a copy of it with ``git apply -p1`` (never
``--3way``, no index, no enclosing repository, no fuzz, whitespace matched exactly) of the exact
patch bytes, applied once. ``-p1`` is explicit so that git never guesses a strip level from the
patch text (it would, from a bare first name of a plain patch). A patch that does not apply is a
:class:`PatchApplyError`, which the gate turns into ``reject_provenance`` (unparsable).

What the patch touched is :meth:`Workspace.changes`: the two trees compared (paths, kinds, modes,
bytes), never the patch text. Pins are read from the base revision with
:class:`patchgate.pins.GitSource`, never from the patched tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from client.analysis.patch.treediff import PathChange, tree_changes
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

_GIT_TIMEOUT = 120


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


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args],
            input=stdin,
            capture_output=True,
            check=False,
            timeout=_GIT_TIMEOUT,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PatchgateError(f"git {args[0]} failed: {exc}") from exc


def resolve_rev(repo: Path, rev: str) -> str:
    """The commit id of ``rev`` in ``repo``; a UsageError if it is not a commit there."""
    if rev.startswith("-"):
        raise UsageError(f"revision {rev!r}: not a revision")
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if proc.returncode != 0:
        raise UsageError(f"revision {rev!r}: not a commit in {repo}")
    return proc.stdout.decode().strip()


def _archive(repo: Path, commit: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    proc = _git(repo, "archive", "--format=tar", commit)
    if proc.returncode != 0:
        raise PatchgateError(
            f"git archive {commit}: {proc.stderr.decode(errors='replace').strip()}"
        )
    with tempfile.TemporaryFile() as fh:
        fh.write(proc.stdout)
        fh.seek(0)
        with tarfile.open(fileobj=fh, mode="r:") as tar:
            _extract(tar, dest)


def _extract(tar: tarfile.TarFile, dest: Path) -> None:
    """Extract with the ``data`` filter (Python >= 3.11.4); on older 3.11 (Debian bookworm's
    3.11.2) refuse by hand what that filter refuses: absolute or ``..`` names, links that leave
    ``dest``, devices and fifos. ``git archive`` output is trusted input, but fail closed anyway.
    """
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    root = os.path.realpath(dest)
    for member in tar.getmembers():
        target = os.path.realpath(os.path.join(root, member.name))
        bad = member.name.startswith("/") or not (
            target == root or target.startswith(root + os.sep)
        )
        if member.issym() or member.islnk():
            link = (
                os.path.join(os.path.dirname(target), member.linkname)
                if member.issym()
                else (os.path.join(root, member.linkname))
            )
            link_real = os.path.realpath(link)
            bad = bad or member.linkname.startswith("/") or not link_real.startswith(root + os.sep)
        elif not (member.isfile() or member.isdir()):
            bad = True
        if bad:
            raise PatchgateError(f"git archive: unsafe member {member.name!r}; refusing")
        member.mode &= 0o755
    tar.extractall(dest)  # noqa: S202 - every member was checked above


# How the patch is applied is fixed here, never by the user's or the system's git config
# (``apply.ignoreWhitespace = change`` would let a hunk match context whose whitespace differs).
_APPLY = ("apply", "-p1", "--no-3way", "--whitespace=nowarn", "--no-ignore-whitespace")


def _isolated_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return env


def _apply(patch: bytes, patched: Path, scratch: Path) -> None:
    patch_file = scratch / "patch.diff"
    patch_file.write_bytes(patch)
    env = _isolated_env()
    env["GIT_CEILING_DIRECTORIES"] = str(patched.parent)
    try:
        proc = subprocess.run(
            ["git", *_APPLY, str(patch_file)],
            cwd=patched,
            capture_output=True,
            check=False,
            timeout=_GIT_TIMEOUT,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PatchgateError(f"git apply failed: {exc}") from exc
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
        _archive(repo, commit, base_dir)
        shutil.copytree(base_dir, patched_dir, symlinks=True)
        _apply(patch, patched_dir, root)
        yield Workspace(repo=repo, base_rev=commit, base_dir=base_dir, patched_dir=patched_dir)


@contextmanager
def tree_at(repo: Path, rev: str) -> Iterator[Path]:
    """Yield a temp dir holding the tree of ``rev`` (``git archive``); removed on exit."""
    commit = resolve_rev(Path(repo).resolve(), rev)
    with tempfile.TemporaryDirectory(prefix="patchgate-tree-") as tmp:
        dest = Path(tmp) / "tree"
        _archive(Path(repo).resolve(), commit, dest)
        yield dest


def base_pins(repo: Path, rev: str) -> PinSet:
    """The pins of the base revision (configuration included), read with ``git show``."""
    return load_pins(GitSource(Path(repo), rev))
