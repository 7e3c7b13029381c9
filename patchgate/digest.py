"""Canonical fixture digest v1 (DESIGN §4), safe paths, and streaming, parallel file hashing.

``canonical_bytes`` is the one encoding every role computes; the signer recomputes it from the
manifest it is asked to sign and the executor from the bytes it mounts. Per-file hashes make the
encoding unambiguous at file boundaries and let files be hashed in parallel.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from patchgate.errors import FixtureScanError, UnsafePathError

__all__ = [
    "DIGEST_HEADER",
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


def validate_path(path: str) -> str:
    """Return ``path`` if it is a safe relative POSIX path in UTF-8, else raise UnsafePathError."""
    if not isinstance(path, str) or path == "":
        raise UnsafePathError(str(path), "empty path")
    try:
        path.encode("utf-8", errors="strict")
    except UnicodeEncodeError as exc:
        raise UnsafePathError(path, "not valid UTF-8") from exc
    for bad, why in (
        ("\x00", "contains NUL"),
        ("\n", "contains a newline"),
        ("\\", "contains a backslash"),
    ):
        if bad in path:
            raise UnsafePathError(path, why)
    if path.startswith("/"):
        raise UnsafePathError(path, "absolute path")
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            raise UnsafePathError(path, f"empty, '.' or '..' segment ({segment!r})")
    return path


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
    return sorted(files.items(), key=lambda item: item[0].encode("utf-8"))


def _sorted_commands(commands: Iterable[Sequence[str]]) -> list[Sequence[str]]:
    return sorted(commands, key=lambda c: command_text(c).encode("utf-8"))


def canonical_bytes(manifest: Manifest) -> bytes:
    """The canonical bytes of DESIGN §4. Paths are validated; an unsafe one raises."""
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


def hash_file(path: Path) -> FileEntry:
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


def _hash_batch(items: Sequence[tuple[str, Path]]) -> list[tuple[str, FileEntry]]:
    return [(rel, hash_file(p)) for rel, p in items]


def hash_files(paths: Mapping[str, Path], workers: int | None = None) -> dict[str, FileEntry]:
    """Hash many files; in parallel threads when the files are large (hashlib and reads release the
    GIL on big buffers). Many small files are hashed in one thread: there the per-file Python work
    holds the GIL and threads only contend (measured: bench/bench_digest.py). Each thread takes one
    contiguous batch, so a hand-off costs once per thread, not once per file.
    """
    items = list(paths.items())
    if workers is None:
        workers = min(8, os.cpu_count() or 1)
    if workers > 1 and len(items) > 1:
        total = sum(os.stat(p).st_size for _, p in items)
        if total < _PARALLEL_MIN_BYTES or total // len(items) < _PARALLEL_MIN_AVG_BYTES:
            workers = 1
    workers = min(workers, len(items)) or 1
    if workers == 1:
        return dict(_hash_batch(items))
    size = -(-len(items) // workers)
    batches = [items[i : i + size] for i in range(0, len(items), size)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return {rel: entry for batch in pool.map(_hash_batch, batches) for rel, entry in batch}


def scan_fixture_tree(root: Path, fixture_root: str, pinned: Iterable[str]) -> dict[str, Path]:
    """Match the files under ``root/fixture_root`` against the pinned paths (relative to ``root``).

    Returns pinned path -> file to hash. Raises FixtureScanError listing every missing, unpinned
    (extra) and unsafe file: a symlink that leaves the fixture tree, a linked directory, a
    non-regular file, a path that is not safe UTF-8. Nothing is hashed here.
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
    found: dict[str, Path] = {}
    if base.is_symlink():
        unsafe.append(fixture_root)
    elif base.is_dir():
        _walk(base, fixture_root, os.path.realpath(base), found, unsafe)
    missing = sorted(pinned_set - set(found) - set(unsafe))
    extra = sorted(set(found) - pinned_set)
    if missing or extra or unsafe:
        raise FixtureScanError(missing=missing, extra=extra, unsafe=unsafe)
    return found


def _walk(
    directory: Path, rel_dir: str, base_real: str, found: dict[str, Path], unsafe: list[str]
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
                    found[rel] = Path(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                _walk(Path(entry.path), rel, base_real, found, unsafe)
            elif entry.is_file(follow_symlinks=False):
                found[rel] = Path(entry.path)
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
