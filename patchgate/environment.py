"""The suite's environment: its configuration, its digest, its deterministic tree
(docs/reference/pins.md).

The base's ``[tool.patchgate.environment]`` names a reviewed requirements/lock file (pytest among
its entries); the target itself is never installed, its source roots go on the sandbox's path.
``build_environment`` makes the tree with ``pip install --target`` (wheels only, no dependencies
resolved, no bytecode, hashes required when the lock has them), normalizes it and digests it:

    environment_digest = sha256("patchgate-environment-digest-v1\\n" +
                                for each file, by the UTF-8 bytes of its path:
                                "file " + sha256hex + " " + decimal size + " " + path + "\\n")

A build step (``[tool.patchgate.environment.build]``: a command, the input patterns it reads,
the output patterns it makes) runs after the install, in a sandbox of an executor with no network
(never on the host): its outputs go into the tree under :data:`OVERLAY` (so they are digested and
signed with the rest), and the executor lays them onto the materialized workspace at their paths.

Trees are cached by digest (``<cache>/env/<digest>/``) with an index from the build's inputs (the
lock's bytes, the source roots, the Python version) to the digest, so ``check`` builds once.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from patchgate.digest import SHA256_HEX, FileEntry, hash_files, validate_path
from patchgate.errors import EnvironmentBuildError, PinError, UnsafePathError
from patchgate.lockgaps import lock_gaps

__all__ = [
    "ENVIRONMENT_HEADER",
    "ENVIRONMENT_INFO",
    "OVERLAY",
    "BuildStep",
    "Built",
    "EnvironmentConfig",
    "Lock",
    "PipOptions",
    "build_environment",
    "cached_tree",
    "default_cache_dir",
    "environment_digest",
    "matches",
    "overlay_files",
    "parse_environment",
    "parse_lock",
    "read_info",
    "tree_files",
]

ENVIRONMENT_HEADER = b"patchgate-environment-digest-v1\n"
ENVIRONMENT_INFO = "patchgate-environment.json"
"""A file at the top of every tree: its source roots and Python version (digested with the rest)."""
OVERLAY = "patchgate-overlay"
"""The tree's directory of build outputs, by repository path (not importable: it has a dash)."""
MAX_BUILD_TIMEOUT_S = 3600
DEFAULT_BUILD_TIMEOUT_S = 600
_DROP_DIRS = {"__pycache__", "bin"}
_DROP_FILES = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
_REQ = re.compile(
    r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:\[[A-Za-z0-9,._ -]*\])?"
    r"==(?P<version>[A-Za-z0-9][A-Za-z0-9.+!_-]*)"
)
_HASHES = re.compile(r"(?P<head>.*?)(?P<hashes>(?:\s+--hash=sha256:[0-9a-f]{64})*)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")
_COMMENT = re.compile(r"(?:^|\s)#.*$")
_MARKER_TOKEN = re.compile(
    r"\s*(?:(?P<str>\"[^\"]*\"|'[^']*')|(?P<op>===|==|!=|<=|>=|~=|<|>)|(?P<paren>[()])"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_.]*))"
)
_MARKER_VARIABLES = frozenset(
    {
        "python_version", "python_full_version", "os_name", "sys_platform", "platform_release",
        "platform_system", "platform_version", "platform_machine",
        "platform_python_implementation", "implementation_name", "implementation_version",
        "extra",
    }
)  # fmt: skip
_MARKER_STRING = re.compile(r"[A-Za-z0-9 ._+!*<>=~,:/()@-]*")
MAX_LOCK_BYTES = 1 << 20


@dataclass(frozen=True, kw_only=True)
class BuildStep:
    """``[tool.patchgate.environment.build]``: one command, what it reads, what it makes.

    ``inputs`` and ``outputs`` are patterns of repository paths (``*`` within a name, ``**`` any
    number of directories). The command sees only the inputs (from the base revision); the files
    it leaves that match an output pattern are the build's outputs.
    """

    command: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    timeout_s: int = DEFAULT_BUILD_TIMEOUT_S

    def key(self) -> list[object]:
        """What the cache key holds of the step (with its inputs' bytes, added by the caller)."""
        return [list(self.command), list(self.inputs), list(self.outputs), self.timeout_s]

    def reads(self, path: str) -> bool:
        """Whether ``path`` is one of the step's inputs."""
        return any(matches(p, path) for p in self.inputs)

    def makes(self, path: str) -> bool:
        """Whether ``path`` is one of the step's outputs."""
        return any(matches(p, path) for p in self.outputs)


@dataclass(frozen=True, kw_only=True)
class EnvironmentConfig:
    """``[tool.patchgate.environment]`` of the base: the reviewed lock file, a build step."""

    requirements: str
    build: BuildStep | None = None


def parse_environment(val: object, where: str) -> EnvironmentConfig:
    """The ``environment`` table: ``requirements`` and an optional ``build`` table."""
    field = "tool.patchgate.environment"
    if not isinstance(val, dict):
        raise PinError(where, field, "expected a table with 'requirements'")
    unknown = sorted(set(val) - {"requirements", "build"})
    if unknown:
        raise PinError(where, f"{field}.{unknown[0]}", "unknown setting")
    req = val.get("requirements")
    if not isinstance(req, str) or not req:
        raise PinError(where, f"{field}.requirements", "expected the path of a requirements file")
    try:
        validate_path(req)
    except UnsafePathError as exc:
        raise PinError(where, f"{field}.requirements", exc.why) from None
    build = _parse_build(val["build"], where, f"{field}.build") if "build" in val else None
    return EnvironmentConfig(requirements=req, build=build)


def _parse_build(val: object, where: str, field: str) -> BuildStep:
    if not isinstance(val, dict):
        raise PinError(where, field, "expected a table with 'command', 'inputs' and 'outputs'")
    unknown = sorted(set(val) - {"command", "inputs", "outputs", "timeout"})
    if unknown:
        raise PinError(where, f"{field}.{unknown[0]}", "unknown setting")
    command = val.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(a, str) and a and "\0" not in a for a in command)
    ):
        raise PinError(
            where,
            f"{field}.command",
            'expected a list of arguments (no shell), e.g. ["python", "tools/compile_catalogs.py"]',
        )
    patterns = {k: _patterns(val.get(k), where, f"{field}.{k}") for k in ("inputs", "outputs")}
    timeout = val.get("timeout", DEFAULT_BUILD_TIMEOUT_S)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int)
        or not (1 <= timeout <= MAX_BUILD_TIMEOUT_S)
    ):
        raise PinError(where, f"{field}.timeout", f"expected seconds, 1 to {MAX_BUILD_TIMEOUT_S}")
    return BuildStep(
        command=tuple(command),
        inputs=patterns["inputs"],
        outputs=patterns["outputs"],
        timeout_s=timeout,
    )


def _patterns(val: object, where: str, field: str) -> tuple[str, ...]:
    if not isinstance(val, list) or not val or not all(isinstance(p, str) for p in val):
        raise PinError(where, field, "expected a non-empty list of path patterns")
    for p in val:
        try:
            validate_path(p.replace("**", "x").replace("*", "x").replace("?", "x"))
        except UnsafePathError as exc:
            raise PinError(where, field, f"{p!r}: {exc.why}") from None
        if p.split("/", 1)[0] == OVERLAY or p in {"**", "*"}:
            raise PinError(where, field, f"{p!r}: names the whole tree or the overlay; be exact")
    return tuple(val)


def matches(pattern: str, path: str) -> bool:
    """Whether the repository path ``path`` matches ``pattern``: segments are compared one by
    one (``*`` and ``?`` within a segment, as :func:`fnmatch.fnmatchcase`), and a ``**``
    segment matches any number of segments, none included."""
    return _match(tuple(pattern.split("/")), tuple(path.split("/")))


def _match(pat: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not pat:
        return not parts
    if pat[0] == "**":
        return any(_match(pat[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pat[0]) and _match(pat[1:], parts[1:])


def overlay_files(tree: Path) -> dict[str, Path]:
    """The build outputs a tree carries, by repository path (none: ``{}``)."""
    root = tree / OVERLAY
    if not root.is_dir():
        return {}
    return tree_files(root)


@dataclass(frozen=True)
class Lock:
    """A parsed lock: its pinned names (lowercase), whether every entry carries hashes, and each
    entry re-serialized (``name==version [; marker] [--hash=sha256:...]``): pip reads those,
    never the lock's own bytes."""

    names: tuple[str, ...]
    hashed: bool
    requirements: tuple[str, ...] = ()


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """The lock's logical lines (comments dropped, continuations joined) with their first line's
    number, whitespace collapsed to single spaces."""
    out: list[tuple[int, str]] = []
    buf = ""
    first = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _COMMENT.sub("", raw).rstrip()
        if not buf:
            first = number
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            out.append((first, " ".join(buf.split())))
        buf = ""
    if buf.strip():
        out.append((first, " ".join(buf.split())))
    return out


class _Marker:
    """An environment marker's recursive-descent parser, writing its re-serialization."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        self.i = 0
        self.out: list[str] = []
        pos, text = 0, text.strip()
        while pos < len(text):
            m = _MARKER_TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise ValueError(f"unexpected {text[pos : pos + 20]!r} in the marker")
            pos = m.end()
            kind = m.lastgroup or ""
            self.tokens.append((kind, m[kind]))

    def parsed(self) -> str:
        self.expr()
        if self.i != len(self.tokens):
            raise ValueError(f"{self.tokens[self.i][1]!r} after the marker")
        return " ".join(self.out)

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise ValueError("the marker ends early")
        self.i += 1
        return self.tokens[self.i - 1]

    def expr(self) -> None:
        self.atom()
        while self.peek() in {("word", "and"), ("word", "or")}:
            self.out.append(self.take()[1])
            self.atom()

    def atom(self) -> None:
        if self.peek() == ("paren", "("):
            self.out.append(self.take()[1])
            self.expr()
            if self.take() != ("paren", ")"):
                raise ValueError("an unclosed parenthesis")
            self.out.append(")")
            return
        self.value()
        kind, tok = self.take()
        if kind == "op" or (kind, tok) == ("word", "in"):
            self.out.append(tok)
        elif (kind, tok) == ("word", "not") and self.take() == ("word", "in"):
            self.out.append("not in")
        else:
            raise ValueError(f"{tok!r}: expected a comparison")
        self.value()

    def value(self) -> None:
        kind, tok = self.take()
        if kind == "str":
            inner = tok[1:-1]
            if not _MARKER_STRING.fullmatch(inner) or re.search(r"(?:^|\s)-", inner):
                raise ValueError(f"{tok}: not a marker value")
            self.out.append(f'"{inner}"')
        elif kind == "word" and tok in _MARKER_VARIABLES:
            self.out.append(tok)
        else:
            raise ValueError(f"{tok!r}: expected a marker variable or a quoted value")


def _marker(text: str) -> str:
    """An environment marker, checked by its grammar and re-serialized (one space between tokens,
    strings double-quoted); ValueError says why not. No string holds a word that starts with a
    dash, so pip cannot read an option out of it."""
    return _Marker(text).parsed()


def parse_lock(text: str, where: str) -> Lock:
    """Only ``name==version``, an optional marker, ``--hash=sha256:`` entries; pytest required.

    Any other token is refused, naming its line: an option on a line of its own (``-r``, ``-c``,
    ``-e``, ``--index-url``, ``--no-binary``) or anywhere on a requirement's line (after its
    marker included), URLs and paths. The operator reviews exactly which distributions make the
    environment, nothing is built from source, and pip reads only the re-serialized entries.
    """
    names: list[str] = []
    hashed: list[bool] = []
    serialized: list[str] = []
    for number, line in _logical_lines(text):
        m = _HASHES.fullmatch(line)
        head, hashes = (m["head"], m["hashes"]) if m else (line, "")
        req_text, sep, marker_text = head.partition(";")
        req = _REQ.fullmatch(req_text.strip())
        why = ""
        marker = ""
        if req is None:
            why = (
                "expected 'name==version' (hashes optional); options, URLs and paths are not "
                "allowed"
            )
        elif sep:
            try:
                marker = _marker(marker_text)
            except ValueError as exc:
                why = f"the marker: {exc}; only a marker and --hash=sha256: entries may follow"
        if req is None or why:
            raise PinError(where, "", f"line {number}: {line[:120]!r}: {why}")
        name = re.sub(r"[-_.]+", "-", req["name"]).lower()
        if name in names:
            raise PinError(where, "", f"line {number}: {name} is listed twice")
        names.append(name)
        digests = _HASH.findall(hashes)
        hashed.append(bool(digests))
        parts = [f"{name}=={req['version']}"]
        if marker:
            parts += [";", marker]
        parts += [f"--hash=sha256:{d}" for d in digests]
        serialized.append(" ".join(parts))
    if "pytest" not in names:
        raise PinError(where, "", "pytest is not among the entries (the suite runs with it)")
    if any(hashed) and not all(hashed):
        raise PinError(where, "", "some entries carry --hash and some do not: all or none")
    return Lock(names=tuple(names), hashed=all(hashed), requirements=tuple(serialized))


def environment_digest(files: Mapping[str, FileEntry]) -> str:
    """The environment digest v1 of a tree's files (relative POSIX paths)."""
    h = hashlib.sha256(ENVIRONMENT_HEADER)
    for path in sorted(files, key=lambda p: p.encode("utf-8")):
        validate_path(path)
        e = files[path]
        h.update(f"file {e.sha256} {e.size:d} {path}\n".encode())
    return h.hexdigest()


def tree_files(root: Path) -> dict[str, Path]:
    """Every regular file under ``root`` by relative path; anything else (a link) is refused."""
    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = Path(dirpath) / name
            st = full.lstat()
            if stat.S_ISDIR(st.st_mode):
                continue
            rel = full.relative_to(root).as_posix()
            if not stat.S_ISREG(st.st_mode):
                raise EnvironmentBuildError(f"environment tree: {rel} is not a regular file")
            out[validate_path(rel)] = full
    return out


def _normalize(root: Path) -> None:
    """Drop bytecode, scripts (their shebang names the host) and install records; fix modes."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=True):
        for d in list(dirnames):
            full = Path(dirpath) / d
            if d in _DROP_DIRS or full.is_symlink():
                if full.is_symlink():
                    full.unlink()
                else:
                    shutil.rmtree(full)
                dirnames.remove(d)
            else:
                full.chmod(0o755)
        for f in filenames:
            full = Path(dirpath) / f
            if f.endswith((".pyc", ".pyo")) or f in _DROP_FILES or full.is_symlink():
                full.unlink()
            else:
                full.chmod(0o644)
                os.utime(full, (0, 0))


def default_cache_dir() -> Path:
    """``$PATCHGATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/patchgate``, else ``~/.cache/patchgate``."""
    if env := os.environ.get("PATCHGATE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "patchgate"


def cached_tree(digest: str, cache: Path | None = None) -> Path | None:
    """The cached tree of ``digest`` if it is there (its bytes are re-digested by the reader)."""
    if not SHA256_HEX.fullmatch(digest):
        return None
    tree = (cache or default_cache_dir()) / "env" / digest
    return tree if tree.is_dir() else None


def read_info(tree: Path) -> tuple[str, ...]:
    """The source roots a tree's info file names (``""``: the repository root)."""
    try:
        info = json.loads((tree / ENVIRONMENT_INFO).read_text(encoding="utf-8"))
        roots = tuple(str(r) for r in info["source_roots"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EnvironmentBuildError(
            f"environment tree: {ENVIRONMENT_INFO} unreadable: {exc}"
        ) from exc
    for r in roots:
        if r:
            validate_path(r)
    return roots


def _key(lock: bytes, source_roots: Sequence[str], build_key: object = None) -> str:
    h = hashlib.sha256(b"patchgate-environment-key-v1\n")
    material: list[object] = [lock.hex(), list(source_roots), _python()]
    if build_key is not None:
        material.append(build_key)
    h.update(json.dumps(material).encode())
    return h.hexdigest()


def _python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass(frozen=True)
class Built:
    """A built (or cached) environment."""

    digest: str
    tree: Path
    files: int
    cached: bool


class PipOptions(TypedDict, total=False):
    """Where a build installs from and caches: the keywords of :func:`build_environment`."""

    cache: Path | None  # the cache directory (None: the default one)
    find_links: Sequence[Path]  # wheel directories pip may install from
    no_index: bool  # pip reads no package index
    rebuild: bool  # build again even when the cache holds the tree


def build_environment(
    *,
    lock: bytes,
    lock_name: str,
    source_roots: Sequence[str],
    build: Callable[[Path], Mapping[str, Path]] | None = None,
    build_key: object = None,
    **pip: Unpack[PipOptions],
) -> Built:
    """Build the tree of ``lock`` (or reuse the cached one); EnvironmentBuildError says why not.

    ``build``: the build step, given the installed tree; it returns its outputs (repository path
    to a file), which go under :data:`OVERLAY`. ``build_key``: what identifies that step and its
    inputs in the cache key (JSON-able).
    """
    cache, find_links = pip.get("cache"), pip.get("find_links", ())
    no_index, rebuild = pip.get("no_index", False), pip.get("rebuild", False)
    if len(lock) > MAX_LOCK_BYTES:
        raise EnvironmentBuildError(f"{lock_name}: larger than {MAX_LOCK_BYTES} bytes")
    try:
        parsed = parse_lock(lock.decode("utf-8"), lock_name)
    except UnicodeDecodeError:
        raise EnvironmentBuildError(f"{lock_name}: not UTF-8") from None
    except PinError as exc:
        raise EnvironmentBuildError(str(exc)) from None
    env_dir = (cache or default_cache_dir()) / "env"
    env_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    index = env_dir / "index" / _key(lock, source_roots, build_key)
    if not rebuild and index.is_file():
        digest = index.read_text(encoding="ascii").strip()
        tree = cached_tree(digest, env_dir.parent)
        if tree is not None:
            files = tree_files(tree)
            if environment_digest(hash_files(files)) == digest:
                return Built(digest=digest, tree=tree, files=len(files), cached=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=env_dir))
    try:
        target = work / "tree"
        lock_file = work / "requirements.txt"
        lock_file.write_text("".join(r + "\n" for r in parsed.requirements), encoding="utf-8")
        _pip_install(target, lock_file, lock_name, parsed, find_links, no_index=no_index)
        if gaps := lock_gaps(target):
            raise EnvironmentBuildError(
                f"{lock_name} misses what its packages need on Python {_python()}: "
                + "; ".join(gaps)
            )
        _normalize(target)
        if build is not None:
            # the locked packages alone are a tree of their own too: collection on the operator's
            # host (``pin properties --from-pytest``) runs with them, without the build outputs
            plain = work / "plain"
            shutil.copytree(target, plain, symlinks=True)
            _store(plain, env_dir, env_dir / "index" / _key(lock, source_roots), source_roots)
            _overlay(target, build(target))
        return _store(target, env_dir, index, source_roots)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _store(target: Path, env_dir: Path, index: Path, source_roots: Sequence[str]) -> Built:
    """Write the info file, digest the tree, move it into the cache, index it by ``index``."""
    info = {"format": 1, "python": _python(), "source_roots": list(source_roots)}
    (target / ENVIRONMENT_INFO).write_text(
        json.dumps(info, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    (target / ENVIRONMENT_INFO).chmod(0o644)
    files = tree_files(target)
    digest = environment_digest(hash_files(files))
    final = env_dir / digest
    if not final.is_dir():
        with contextlib.suppress(OSError):
            target.rename(final)
    index.parent.mkdir(exist_ok=True, mode=0o700)
    tmp = index.with_suffix(".tmp")
    tmp.write_text(digest + "\n", encoding="ascii")
    tmp.replace(index)
    return Built(digest=digest, tree=final, files=len(files), cached=False)


def _overlay(target: Path, outputs: Mapping[str, Path]) -> None:
    """Put the build outputs under ``target/OVERLAY`` (regular files, mode 0644, mtime 0)."""
    root = target / OVERLAY
    if root.exists():
        raise EnvironmentBuildError(f"environment tree: {OVERLAY}/ is made by the build alone")
    for path in sorted(outputs):
        dest = root / validate_path(path)
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        shutil.copyfile(outputs[path], dest)
        dest.chmod(0o644)
        os.utime(dest, (0, 0))
    for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        if d.exists():
            d.chmod(0o755)


def _pip_install(
    target: Path,
    lock_file: Path,
    lock_name: str,
    parsed: Lock,
    find_links: Sequence[Path],
    *,
    no_index: bool,
) -> None:
    """``pip install --target``: wheels only, no dependency resolution, no bytecode.

    ``lock_file`` is the parser's re-serialization (no option can come from the lock). The
    operator's own pip settings (where wheels are found) still apply, but ``--only-binary :all:``
    comes last on the command line, after them, so nothing turns a source build on.
    """
    argv = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--target", str(target), "--no-deps", "--no-compile", "-r", str(lock_file),
    ]  # fmt: skip
    if parsed.hashed:
        argv.append("--require-hashes")
    if no_index:
        argv.append("--no-index")
    for d in find_links:
        argv += ["--find-links", str(d)]
    argv += ["--only-binary", ":all:"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "SOURCE_DATE_EPOCH": "0"}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise EnvironmentBuildError(f"pip install from {lock_name} failed: {' | '.join(tail)}")
