"""The one way patchgate runs git: nothing the repository (or the user's git setup) configures runs.

Every git call of the client and of the shared library goes through :func:`run`. It

* ignores git's system and global configuration (``GIT_CONFIG_NOSYSTEM=1``,
  ``GIT_CONFIG_GLOBAL=/dev/null``) and the system attributes file;
* starts from a scrubbed environment: no ``GIT_*`` variable of the caller (``GIT_DIR``,
  ``GIT_WORK_TREE``, ``GIT_EXEC_PATH``, ``GIT_CONFIG_COUNT``... would each steer git), no pager,
  no terminal prompt, no optional locks;
* overrides on the command line (which beats the repository's ``.git/config`` and anything it
  includes) every key that names a command git could run for the commands we use:
  ``core.fsmonitor``, ``core.hooksPath``, ``core.pager``, ``core.sshCommand``, ``core.askPass``,
  ``diff.external``, ``core.attributesFile``, and ``protocol.allow=never`` (no transport at all);
* is only ever asked for plumbing that applies no filter, textconv, hook or fsmonitor:
  ``rev-parse``, ``ls-tree``, ``cat-file --batch`` (without ``--filters``/``--textconv``),
  ``apply`` outside any repository (a temp tree under a ceiling), ``check-ignore``, and the demo's
  own ``init``/``add``/``commit`` in a repository it made.

A revision is materialized from its blobs (:func:`materialize_tree`): ``ls-tree -r -z`` lists the
commit's entries, ``cat-file --batch`` gives their exact bytes, so the tree on disk is the commit's
tree — no ``export-ignore``, ``export-subst``, smudge filter or eol conversion — with the modes and
symlinks the commit records. A path that could not exist in a checkout (absolute, ``..``, a ``.git``
component), a symlink that is absolute or leaves the tree, or an entry that would be written through
a symlink, is an :class:`patchgate.errors.UnsafeTreeError` naming the path.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from patchgate.errors import PatchgateError, UnsafeTreeError

__all__ = [
    "SAFE_CONFIG",
    "TreeEntry",
    "git_env",
    "list_tree",
    "materialize_tree",
    "read_blob",
    "resolve_commit",
    "run",
]

TIMEOUT_SECONDS = 120

#: ``-c`` overrides of every repository-configurable key that could name a command.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),
    ("core.askPass", "false"),
    ("core.editor", "false"),
    ("core.attributesFile", os.devnull),
    ("core.untrackedCache", "false"),
    ("diff.external", ""),
    ("protocol.allow", "never"),
    ("credential.helper", ""),
    ("gpg.program", "false"),
    ("sequence.editor", "false"),
)

_MODES = {"100644": 0o644, "100755": 0o755, "120000": -1, "160000": 0}


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every git call: the caller's, without any ``GIT_*`` variable, with
    git's system and global configuration off (see the module docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.pop("PAGER", None)
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_PAGER="cat",
    )
    env.update(extra or {})
    return env


def _argv(repo: Path | None, args: Sequence[str]) -> list[str]:
    argv = ["git", "--no-pager"]
    for key, value in SAFE_CONFIG:
        argv += ["-c", f"{key}={value}"]
    if repo is not None:
        argv += ["-C", str(repo)]
    return [*argv, *args]


def run(
    repo: Path | None,
    *args: str,
    stdin: bytes | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT_SECONDS,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git args`` in ``repo`` (or in ``cwd`` with no ``-C``), output captured; never raises
    for a non-zero exit (the caller reads ``returncode``), PatchgateError when git cannot run."""
    try:
        return subprocess.run(
            _argv(repo, args),
            input=stdin,
            capture_output=True,
            check=False,
            timeout=timeout,
            cwd=cwd,
            env=git_env(env),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PatchgateError(f"git {args[0] if args else ''} failed: {exc}") from exc


def _popen(repo: Path, *args: str) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            _argv(repo, args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=git_env(),
        )
    except OSError as exc:
        raise PatchgateError(f"git {args[0]} failed: {exc}") from exc


def resolve_commit(repo: Path, rev: str) -> str | None:
    """The commit id ``rev`` names in ``repo``, None when it names no commit."""
    if rev.startswith("-"):
        return None
    proc = run(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("ascii", "replace").strip()


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a commit's tree (``mode``: git's octal text; ``path``: POSIX, relative)."""

    mode: str
    oid: str
    path: str


def _check_entry_path(path: str) -> None:
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise UnsafeTreeError(path, "not a relative path inside the tree")
    if any(p.lower() == ".git" for p in parts):
        raise UnsafeTreeError(path, "a .git component")


def list_tree(repo: Path, commit: str) -> list[TreeEntry]:
    """Every entry of ``commit``'s tree (``ls-tree -r -z``), paths checked."""
    proc = run(repo, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit)
    if proc.returncode != 0:
        raise PatchgateError(
            f"git ls-tree {commit}: {proc.stderr.decode('utf-8', 'replace').strip()}"
        )
    out: list[TreeEntry] = []
    for record in proc.stdout.split(b"\0"):
        if not record:
            continue
        head, _, raw_path = record.partition(b"\t")
        mode, _kind, oid = head.decode("ascii").split(" ")
        path = os.fsdecode(raw_path)
        _check_entry_path(path)
        if mode not in _MODES:
            raise UnsafeTreeError(path, f"unsupported git mode {mode}")
        out.append(TreeEntry(mode, oid, path))
    return out


def _feed(stdin: IO[bytes] | None, lines: Sequence[str]) -> None:
    if stdin is None:
        return
    try:
        for line in lines:
            stdin.write(line.encode("utf-8", "surrogateescape") + b"\n")
        stdin.close()
    except OSError:  # git went away: the reader reports it
        pass


def _batch(repo: Path, names: Sequence[str], sink: _Sink) -> None:
    """``cat-file --batch`` of ``names``; ``sink(index, header, stream, size)`` reads each body."""
    proc = _popen(repo, "cat-file", "--batch")
    feeder = threading.Thread(target=_feed, args=(proc.stdin, names), daemon=True)
    feeder.start()
    if proc.stdout is None:  # pragma: no cover - stdout=PIPE always gives one
        raise PatchgateError("git cat-file: no output pipe")
    try:
        for i, name in enumerate(names):
            header = proc.stdout.readline().decode("ascii", "replace").split()
            if len(header) == 3 and header[2].isdigit():
                size = int(header[2])
                sink.take(i, header[1], proc.stdout, size)
                if proc.stdout.read(1) != b"\n":
                    raise PatchgateError("git cat-file: malformed output")
            elif header[-1:] == ["missing"] or header[-1:] == ["ambiguous"]:
                sink.take(i, "missing", proc.stdout, 0)
            else:
                raise PatchgateError(f"git cat-file: unexpected output for {name!r}")
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
        feeder.join()


class _Sink:
    def take(self, index: int, kind: str, stream: IO[bytes], size: int) -> None:
        raise NotImplementedError


class _Bytes(_Sink):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.got: dict[int, bytes | None] = {}
        self.kinds: dict[int, str] = {}

    def take(self, index: int, kind: str, stream: IO[bytes], size: int) -> None:
        self.kinds[index] = kind
        if kind != "blob":
            _skip(stream, size)
            self.got[index] = None
            return
        if size > self.limit:
            _skip(stream, size)
            raise PatchgateError(f"blob of {size} bytes over the {self.limit}-byte limit")
        data = stream.read(size)
        self.got[index] = data


def _skip(stream: IO[bytes], size: int) -> None:
    while size > 0:
        chunk = stream.read(min(size, 1 << 20))
        if not chunk:
            raise PatchgateError("git cat-file: output ended early")
        size -= len(chunk)


def read_blob(repo: Path, rev: str, path: str, *, limit: int) -> bytes | None:
    """The bytes of ``path`` at ``rev`` (None: no such path, or not a file); no filter applies.
    PatchgateError when ``rev`` names no tree."""
    if "\n" in path or "\n" in rev:
        return None
    sink = _Bytes(limit)
    _batch(repo, [f"{rev}^{{tree}}", f"{rev}:{path}"], sink)
    if 0 not in sink.kinds or sink.kinds[0] != "tree":
        raise PatchgateError(f"{rev!r} is not a revision of {repo}")
    return sink.got.get(1)


class _Files(_Sink):
    def __init__(self, dest: Path, entries: Sequence[TreeEntry]) -> None:
        self.dest = dest
        self.entries = entries
        self.links: list[tuple[str, str]] = []

    def take(self, index: int, kind: str, stream: IO[bytes], size: int) -> None:
        entry = self.entries[index]
        if kind != "blob":
            raise UnsafeTreeError(entry.path, f"object {entry.oid} is a {kind}, not a blob")
        if entry.mode == "120000":
            target = os.fsdecode(stream.read(size))
            self.links.append((entry.path, target))
            return
        full = self.dest / entry.path
        _mkdirs(self.dest, posixpath.dirname(entry.path), entry.path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(full, flags, _MODES[entry.mode])
        with os.fdopen(fd, "wb") as out:
            left = size
            while left > 0:
                chunk = stream.read(min(left, 1 << 20))
                if not chunk:
                    raise PatchgateError("git cat-file: output ended early")
                out.write(chunk)
                left -= len(chunk)
        os.chmod(full, _MODES[entry.mode], follow_symlinks=False)


def _mkdirs(root: Path, rel_dir: str, path: str) -> None:
    """Make ``rel_dir`` under ``root``, refusing to pass through anything but a real directory."""
    if not rel_dir:
        return
    current = root
    for part in rel_dir.split("/"):
        current = current / part
        try:
            os.mkdir(current, 0o755)
        except FileExistsError:
            if current.is_symlink() or not current.is_dir():
                raise UnsafeTreeError(path, "a parent of it is not a directory") from None


def _link_ok(path: str, target: str) -> str | None:
    """Why a symlink of the tree is unsafe (None: it stays inside the tree)."""
    if not target or "\0" in target:
        return "an empty link"
    if target.startswith("/"):
        return f"an absolute symlink (to {target!r})"
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if joined == ".." or joined.startswith("../"):
        return f"a symlink leaving the tree (to {target!r})"
    return None


def materialize_tree(repo: Path, commit: str, dest: Path) -> None:
    """Write ``commit``'s tree into the new directory ``dest`` from its blobs (see the module
    docstring); UnsafeTreeError names the first unsafe entry, and nothing is followed."""
    entries = list_tree(repo, commit)
    dest.mkdir(parents=True)
    blobs = [e for e in entries if e.mode != "160000"]
    for gitlink in (e for e in entries if e.mode == "160000"):
        _mkdirs(dest, gitlink.path, gitlink.path)  # a submodule: an empty directory, as archive
    sink = _Files(dest, blobs)
    _batch(repo, [e.oid for e in blobs], sink)
    # Links last: nothing of the tree is ever written through one, and a link cannot replace a
    # path the tree also uses as a directory (symlink() fails on an existing name).
    for path, target in sink.links:
        why = _link_ok(path, target)
        if why is not None:
            raise UnsafeTreeError(path, why)
        _mkdirs(dest, posixpath.dirname(path), path)
        try:
            os.symlink(target, dest / path)
        except FileExistsError:
            raise UnsafeTreeError(path, "a symlink over a path the tree also uses") from None
    # A chain of links each inside the tree on its own can still leave it (``y -> .``,
    # ``x -> y/..``): every link is resolved once all exist.
    root = os.path.realpath(dest)
    for path, target in sink.links:
        real = os.path.realpath(dest / path)
        if not (real == root or real.startswith(root + os.sep)):
            raise UnsafeTreeError(path, f"a symlink leaving the tree (to {target!r})")
