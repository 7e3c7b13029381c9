"""Canonical fixture digest v1 (docs/reference/digest.md), safe paths, and streaming, parallel
file hashing.

``canonical_bytes`` is the one encoding every role computes; the signer recomputes it from the
manifest it is asked to sign and the executor from the bytes it mounts. Per-file hashes make the
encoding unambiguous at file boundaries and let files be hashed in parallel.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import stat
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn, TypeAlias

from patchgate.errors import FixtureScanError, UnsafePathError

__all__ = [
    "DIGEST_HEADER",
    "SHA256_HEX",
    "FileEntry",
    "Manifest",
    "canonical_bytes",
    "command_text",
    "fixture_digest",
    "hash_file",
    "hash_files",
    "scan_fixture_tree",
    "validate_path",
]

DIGEST_HEADER = b"patchgate-fixture-digest-v1\n"
_CHUNK = 1 << 20  # 1 MiB: files are streamed, never read whole
_PARALLEL_MIN_BYTES = 8 << 20  # less than this in all: one thread is faster
_PARALLEL_MIN_AVG_BYTES = 256 << 10  # smaller files than this on average: one thread is faster
_FORK_MIN_FILES = 1000  # fewer files than this: a fork (~2 ms) costs more than it saves
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
"""A sha256 as every file format here writes it: 64 lowercase hex digits (use ``fullmatch``)."""

FilePath: TypeAlias = "str | os.PathLike[str]"
_Item: TypeAlias = "tuple[str, FilePath]"


_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\\]|(?:^|/)\.{0,2}(?:/|$)")
"""One search finds every unsafe shape: a C0 or C1 control (NUL and newline included), DEL,
backslash, or an empty, '.' or '..' segment (an absolute path starts with an empty segment). Only a
path it flags pays for the reason."""

#: Unicode categories a path never holds beside the controls: format characters (bidi overrides
#: and isolates, zero-width space and joiners, the byte-order mark...) and line/paragraph
#: separators — each makes a path read as another one to a person.
_INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp"})


def validate_path(path: str) -> str:
    """Return ``path`` if it is a safe relative POSIX path in UTF-8, else raise UnsafePathError."""
    if (
        isinstance(path, str)
        and _UNSAFE.search(path) is None
        and (path.isascii() or (_utf8(path) and _visible(path)))
    ):
        return path
    raise _unsafe_reason(path)


def _visible(path: str) -> bool:
    return not any(unicodedata.category(c) in _INVISIBLE for c in path if not c.isascii())


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8", errors="strict")
    except UnicodeEncodeError:
        return False
    return True


def _unsafe_reason(path: object) -> UnsafePathError:
    """The error naming the first reason ``path`` is unsafe (the slow path, for refusals only)."""
    if not isinstance(path, str) or path == "":
        return UnsafePathError(str(path), "empty path")
    if not _utf8(path):
        return UnsafePathError(path, "not valid UTF-8")
    for bad, why in (
        ("\x00", "contains NUL"),
        ("\n", "contains a newline"),
        ("\\", "contains a backslash"),
    ):
        if bad in path:
            return UnsafePathError(path, why)
    for c in path:
        if unicodedata.category(c) in _INVISIBLE:
            return UnsafePathError(
                path, f"contains a control or invisible format character (U+{ord(c):04X})"
            )
    if path.startswith("/"):
        return UnsafePathError(path, "absolute path")
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            return UnsafePathError(path, f"empty, '.' or '..' segment ({segment!r})")
    return UnsafePathError(path, "unsafe path")  # fail closed if the two checks ever disagree


@dataclass(frozen=True, slots=True)
class FileEntry:
    """The sha256 (lowercase hex) and byte length of one file."""

    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """Everything the fixture digest v1 covers, plus the pin id it belongs to."""

    pin_id: str
    algorithm: str = "sha256"
    files: Mapping[str, FileEntry] = field(default_factory=dict)
    seed: int = 0
    clock_bound_ms: int = 0
    allowed_commands: tuple[tuple[str, ...], ...] = ()
    #: The environment digest v1 of the suite's environment (``patchgate.environment``), or None
    #: for a base that configures none. Not part of the fixture digest v1: the signed statement
    #: carries it as a predicate field of its own.
    environment_digest: str | None = None

    def digest(self) -> str:
        """The canonical fixture digest v1 of this manifest."""
        return fixture_digest(self)

    def to_json(self) -> dict[str, object]:
        """The manifest as the JSON object carried in statements and ledgers."""
        return {
            "pin_id": self.pin_id,
            "algorithm": self.algorithm,
            "files": {
                p: {"sha256": e.sha256, "size": e.size} for p, e in _sorted_files(self.files)
            },
            "seed": self.seed,
            "clock_bound_ms": self.clock_bound_ms,
            "allowed_commands": [list(c) for c in _sorted_commands(self.allowed_commands)],
        }


def command_text(argv: Sequence[str]) -> str:
    """Compact JSON text of one argv list, as in the canonical bytes."""
    return json.dumps(list(argv), separators=(",", ":"), ensure_ascii=False)


def _sorted_files(files: Mapping[str, FileEntry]) -> list[tuple[str, FileEntry]]:
    # Code point order is UTF-8 byte order (for the valid UTF-8 paths allowed): the digest's sort
    # (docs/reference/digest.md).
    return sorted(files.items())


def _sorted_commands(commands: Iterable[Sequence[str]]) -> list[Sequence[str]]:
    return sorted(commands, key=lambda c: command_text(c).encode("utf-8"))


def canonical_bytes(manifest: Manifest) -> bytes:
    """The canonical bytes (docs/reference/digest.md). Paths are validated; an unsafe one raises."""
    out = [DIGEST_HEADER]
    for path, entry in _sorted_files(manifest.files):
        validate_path(path)
        out.append(f"file {entry.sha256} {entry.size:d} {path}\n".encode())
    out.append(f"seed {manifest.seed:d}\n".encode())
    out.append(f"clock_bound_ms {manifest.clock_bound_ms:d}\n".encode())
    for argv in _sorted_commands(manifest.allowed_commands):
        out.append(f"command {command_text(argv)}\n".encode())
    return b"".join(out)


def fixture_digest(manifest: Manifest) -> str:
    """sha256 hex of the canonical bytes."""
    return hashlib.sha256(canonical_bytes(manifest)).hexdigest()


def hash_file(path: FilePath) -> FileEntry:
    """Stream one file through sha256 in 1 MiB chunks (never the whole file in memory)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        h = hashlib.sha256()
        size = 0
        while chunk := os.read(fd, _CHUNK):
            h.update(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return FileEntry(sha256=h.hexdigest(), size=size)


def _hash_batch(items: Sequence[tuple[str, FilePath]]) -> list[tuple[str, FileEntry]]:
    return [(rel, hash_file(p)) for rel, p in items]


def hash_files(
    paths: Mapping[str, FilePath], workers: int | None = None, *, processes: int = 1
) -> dict[str, FileEntry]:
    """Hash many files; in parallel threads when the files are large (hashlib and reads release the
    GIL on big buffers). Many small files are hashed in one thread: there the per-file Python work
    holds the GIL and threads only contend (measured: bench/bench_digest.py). Each thread takes one
    contiguous batch, so a hand-off costs once per thread, not once per file.

    ``processes`` > 1 lets a tree of many files be split over that many forked processes (the
    caller's among them), which is what makes many small files fast. Only a single-threaded caller
    may ask for it (the CLI does, the daemons never do): a fork copies locks other threads hold. It
    is ignored, and threads are used, when the caller has other Python threads running.
    """
    items = list(paths.items())
    if processes > 1 and len(items) >= _FORK_MIN_FILES and threading.active_count() == 1:
        return dict(_hash_forked(items, processes))
    if workers is None:
        workers = min(8, os.cpu_count() or 1)
    if workers > 1 and len(items) > 1:
        total = sum(os.stat(p).st_size for _, p in items)
        if total < _PARALLEL_MIN_BYTES or total // len(items) < _PARALLEL_MIN_AVG_BYTES:
            workers = 1
    workers = min(workers, len(items)) or 1
    if workers == 1:
        return dict(_hash_batch(items))
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415 - the CLI starts faster

    with ThreadPoolExecutor(max_workers=workers) as pool:
        batches = pool.map(_hash_batch, _split(items, workers))
        return {rel: entry for batch in batches for rel, entry in batch}


def _split(items: list[_Item], n: int) -> list[list[_Item]]:
    size = -(-len(items) // n)
    return [items[i : i + size] for i in range(0, len(items), size)]


@dataclass
class _Child:
    pid: int
    fd: int
    batch: list[_Item]
    reaped: bool = False


def _hash_forked(items: list[_Item], processes: int) -> list[tuple[str, FileEntry]]:
    """Hash the first batch here and each other batch in a forked child that reports over a pipe.

    A child that dies or reports anything malformed has its batch hashed again here: a result is
    computed or the error raised, never guessed. An OSError a child met is raised as if met here.
    """
    batches = _split(items, processes)
    children: list[_Child] = []
    here = batches[0]
    try:
        for batch in batches[1:]:
            child = _fork(batch)
            if child is None:
                here = here + batch  # no process to be had: this one hashes that share too
            else:
                children.append(child)
        results = _hash_batch(here)
        for child in children:
            results.extend(_collect(child))
        return results
    finally:
        for child in children:
            if not child.reaped:
                with contextlib.suppress(OSError):
                    os.kill(child.pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.close(child.fd)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(child.pid, 0)


def _fork(batch: list[_Item]) -> _Child | None:
    """A child hashing ``batch``, or None when the system will not give one (no fd or process)."""
    try:
        r, w = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(r)
        _child_main(batch, w)
    os.close(w)
    return _Child(pid, r, batch)


def _child_main(batch: list[_Item], w: int) -> NoReturn:  # pragma: no cover - runs in the child
    """Hash ``batch``; write one line per file ("HEX SIZE", or "!ERRNO WHY" and stop); exit."""
    code = 1
    try:
        lines = []
        for _, path in batch:
            try:
                entry = hash_file(path)
            except OSError as exc:
                lines.append(f"!{exc.errno or 0} {exc.strerror or exc}")
                break
            lines.append(f"{entry.sha256} {entry.size}")
        view = memoryview("\n".join(lines).encode("utf-8", "surrogateescape"))
        while view:
            view = view[os.write(w, view) :]
        code = 0
    finally:
        os._exit(code)


def _collect(child: _Child) -> list[tuple[str, FileEntry]]:
    with os.fdopen(child.fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(child.pid, 0)
    child.reaped = True
    lines = data.decode("utf-8", "surrogateescape").split("\n") if data else []
    out: list[tuple[str, FileEntry]] = []
    for (rel, path), line in zip(child.batch, lines, strict=False):
        if line.startswith("!"):
            code, _, why = line[1:].partition(" ")
            raise OSError(int(code) if code.isdigit() else 0, why, os.fspath(path))
        sha, _, size = line.partition(" ")
        if not (SHA256_HEX.fullmatch(sha) and size.isdigit()):
            break
        out.append((rel, FileEntry(sha256=sha, size=int(size))))
    if os.waitstatus_to_exitcode(status) != 0 or len(out) != len(child.batch):
        return _hash_batch(child.batch)  # the child failed: its share is hashed here instead
    return out


def scan_fixture_tree(root: Path, fixture_root: str, pinned: Iterable[str]) -> dict[str, str]:
    """Match the files under ``root/fixture_root`` against the pinned paths (relative to ``root``).

    Returns pinned path -> file to hash (a str path: ten thousand Path objects cost more than the
    scan itself). Raises FixtureScanError listing every missing, unpinned (extra) and unsafe file:
    a symlink that leaves the fixture tree, a linked directory, a non-regular file, a path that is
    not safe UTF-8. Nothing is hashed here.
    """
    root = Path(root)
    validate_path(fixture_root)
    pinned_set = set(pinned)
    unsafe: list[str] = []
    for p in pinned_set:
        try:
            validate_path(p)
        except UnsafePathError:
            unsafe.append(p)
    base = root / fixture_root
    found: dict[str, str] = {}
    if base.is_symlink():
        unsafe.append(fixture_root)
    elif base.is_dir():
        _walk(str(base), fixture_root, os.path.realpath(base), found, unsafe)
    missing = sorted(pinned_set - set(found) - set(unsafe))
    extra = sorted(set(found) - pinned_set)
    if missing or extra or unsafe:
        raise FixtureScanError(missing=missing, extra=extra, unsafe=unsafe)
    return found


def _walk(
    directory: str, rel_dir: str, base_real: str, found: dict[str, str], unsafe: list[str]
) -> None:
    """Depth-first scan with os.scandir: only symlinks pay for a realpath."""
    with os.scandir(directory) as entries:
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}"
            try:
                validate_path(rel)
            except UnsafePathError:
                unsafe.append(rel)
                continue
            if entry.is_symlink():
                if entry.is_dir() or _link_problem(entry.path, base_real):
                    unsafe.append(rel)  # a linked directory is not walked: refuse it
                else:
                    found[rel] = entry.path
            elif entry.is_dir(follow_symlinks=False):
                _walk(entry.path, rel, base_real, found, unsafe)
            elif entry.is_file(follow_symlinks=False):
                found[rel] = entry.path
            else:
                unsafe.append(rel)  # fifo, socket, device: not a regular file


def _link_problem(path: str, base_real: str) -> str | None:
    real = os.path.realpath(path)
    if not real.startswith(base_real + os.sep):
        return "symlink leaves the fixture tree"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "dangling symlink"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    return None
