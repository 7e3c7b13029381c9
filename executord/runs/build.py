"""The build step of a suite's environment, run once in a sandbox with no network.

The contract: docs/reference/pins.md.

``[tool.patchgate.environment.build]`` of the base names a command, the repository paths it reads
and the ones it makes. The client sends the environment tree (the locked packages) and the
declared inputs (from the base revision) by content; here they are placed in a request directory,
the tree read-only at :data:`ENV` and the inputs in a writable working directory at
:data:`BUILD` (with each output pattern's directory before its first wildcard made, as a
checkout would have it), and the command runs there as the sandbox's non-root user:
``network_mode=none``, read-only root filesystem, every capability dropped,
``no-new-privileges``, the pids, memory and CPU limits of every run, the clock bound of the
step. What it leaves that matches an output pattern goes back
(regular files only, capped in number and bytes); everything else is dropped with the request
directory. The client folds the outputs into the tree it digests, so the executor that later
runs the suite lays down exactly the bytes the operator signed.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from executord.errors import FailedPrecondition, InvalidArgument, SandboxError
from executord.runs.environment import ENV, MAX_ENVIRONMENT_FILES, sandbox_mounts
from executord.runs.request import TreeItem
from executord.sandbox.container import (
    ContainerExit,
    ContainerSpec,
    Mount,
    SandboxPolicy,
    run_container,
)
from executord.sandbox.output import OutputCapture, printable
from executord.store.blobstore import is_digest
from patchgate.digest import validate_path
from patchgate.environment import MAX_BUILD_TIMEOUT_S, OVERLAY, matches
from patchgate.errors import UnsafePathError

if TYPE_CHECKING:
    from executord.runs.executor import Executor

__all__ = [
    "BUILD",
    "MAX_OUTPUT_BYTES",
    "MAX_OUTPUT_FILES",
    "BuildInput",
    "BuildOutcome",
    "check_build",
    "run_build",
]

BUILD = "/build"
MAX_INPUT_FILES = 50_000
MAX_OUTPUT_FILES = 10_000
MAX_OUTPUT_BYTES = 256 << 20
_TMP = "/tmp"  # noqa: S108 - the sandbox's tmpfs


@dataclass(frozen=True, kw_only=True)
class BuildInput:
    """The Build request, without grpc."""

    request_id: str
    environment: tuple[TreeItem, ...]
    inputs: tuple[TreeItem, ...]
    argv: tuple[str, ...]
    outputs: tuple[str, ...]
    timeout_s: int
    source_roots: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BuildOutcome:
    """How the command ended and the files it made that match an output pattern."""

    exit: ContainerExit
    files: tuple[tuple[str, Path], ...]
    ignored: int
    stdout_tail: str  # printable text (``executord.sandbox.output.printable``)
    stderr_tail: str


def _tree(items: tuple[TreeItem, ...], what: str, limit: int) -> None:
    if len(items) > limit:
        raise InvalidArgument(f"{what}: more than {limit} files")
    seen: set[str] = set()
    for item in items:
        try:
            validate_path(item.path)
        except UnsafePathError as exc:
            raise InvalidArgument(f"{what}: {exc}") from exc
        if item.path in seen or not is_digest(item.digest):
            raise InvalidArgument(f"{what} entry {item.path!r}: repeated path or bad digest")
        seen.add(item.path)


def check_build(inp: BuildInput) -> None:
    """The request's shape (INVALID_ARGUMENT), before any blob is read or container made."""
    if not inp.environment:
        raise InvalidArgument("a build needs the environment tree it runs with")
    if any(i.path.split("/", 1)[0] == OVERLAY for i in inp.environment):
        raise InvalidArgument(f"the environment sent to a build already holds {OVERLAY}/")
    _tree(inp.environment, "environment", MAX_ENVIRONMENT_FILES)
    _tree(inp.inputs, "inputs", MAX_INPUT_FILES)
    if not inp.argv or not all(a and "\0" not in a for a in inp.argv):
        raise InvalidArgument("argv: expected a non-empty list of non-empty arguments")
    if not inp.outputs or not all(p and "\0" not in p for p in inp.outputs):
        raise InvalidArgument("outputs: expected at least one pattern")
    if not 1 <= inp.timeout_s <= MAX_BUILD_TIMEOUT_S:
        raise InvalidArgument(f"timeout_s: expected 1 to {MAX_BUILD_TIMEOUT_S}")
    for r in inp.source_roots:
        if r not in {"", "."}:
            try:
                validate_path(r)
            except UnsafePathError as exc:
                raise InvalidArgument(f"source root: {exc}") from exc


@contextmanager
def run_build(
    executor: Executor, inp: BuildInput, cancel: threading.Event
) -> Iterator[BuildOutcome]:
    """Place, run, collect; the request directory (the outputs' files) lives until the caller is
    done with them. SandboxError when the sandbox could not run (transport, not the command)."""
    check_build(inp)
    needed = [i.digest for i in (*inp.environment, *inp.inputs)]
    missing = executor.store.missing(needed)
    if missing:
        raise FailedPrecondition(f"{len(missing)} blob(s) not in the store, e.g. {missing[0][:16]}")
    req = Path(tempfile.mkdtemp(prefix="build-", dir=executor.work_dir))
    try:
        env_dir, work = req / "env" / "tree", req / "work"
        env_dir.parent.mkdir(mode=0o755)
        (req / "env" / "empty").mkdir(mode=0o755)  # sandbox_mounts hides site-packages with it
        with executor.store.referenced(needed):
            for item in inp.environment:
                _copy(executor.store.open_blob(item.digest), env_dir / item.path, 0o444)
            work.mkdir(mode=0o755)
            for item in inp.inputs:
                mode = 0o755 if item.executable else 0o644
                _copy(executor.store.open_blob(item.digest), work / item.path, mode)
        for d in [env_dir, *(p for p in env_dir.rglob("*") if p.is_dir())]:
            d.chmod(0o755)
        for prefix in _output_dirs(inp.outputs):  # where the outputs go exists, as in a checkout
            (work / prefix).mkdir(parents=True, exist_ok=True, mode=0o755)
        policy = _policy(executor, work)
        capture = OutputCapture()
        spec = ContainerSpec(
            argv=inp.argv,
            mounts=(
                *sandbox_mounts(executor.bare, env_dir),
                Mount(str(work), BUILD, read_only=False),
            ),
            env=_env(executor, inp.source_roots),
            workdir=BUILD,
            labels={**executor.labels, "patchgate.build": inp.request_id[:128]},
            output=capture,
        )
        with executor.slot(cancel):
            done = run_container(
                executor.runtime, spec, policy, clock_bound_s=float(inp.timeout_s), cancel=cancel
            )
        out, err, _, _ = capture.tails()
        kept, ignored = _collect(work, inp, done)
        yield BuildOutcome(
            exit=done,
            files=kept,
            ignored=ignored,
            stdout_tail=printable(out),
            stderr_tail=printable(err),
        )
    finally:
        shutil.rmtree(req, ignore_errors=True)


def _output_dirs(patterns: tuple[str, ...]) -> set[str]:
    """Each pattern's directory before its first wildcard (``src/p/*.json`` → ``src/p``)."""
    out: set[str] = set()
    for pattern in patterns:
        parts = pattern.split("/")[:-1]
        literal = []
        for part in parts:
            if any(c in part for c in "*?["):
                break
            literal.append(part)
        if literal:
            out.add(validate_path("/".join(literal)))
    return out


def _policy(executor: Executor, work: Path) -> SandboxPolicy:
    """The run policy; the working directory writable by its user (root executor: chown to the
    sandbox user; else the sandbox runs as the executor's own uid, so it can clean up)."""
    policy = executor.policy
    if os.geteuid() == 0:
        uid, gid = (int(x) for x in policy.user.split(":"))
        for p in [work, *work.rglob("*")]:
            os.chown(p, uid, gid, follow_symlinks=False)
        return policy
    return dataclasses.replace(policy, user=f"{os.getuid()}:{os.getgid()}")


def _env(executor: Executor, roots: tuple[str, ...]) -> dict[str, str]:
    path = ":".join([*executor.bare.path_dirs, *executor.base_path])
    py = [ENV, *(BUILD if r in {"", "."} else f"{BUILD}/{r}" for r in roots)]
    return {
        "PATH": path,
        "LANG": "C.UTF-8",
        "HOME": _TMP,
        "TMPDIR": _TMP,
        "PYTHONPATH": ":".join(py),
        "PYTHONDONTWRITEBYTECODE": "1",
        "SOURCE_DATE_EPOCH": "0",
    }


def _collect(
    work: Path, inp: BuildInput, done: ContainerExit
) -> tuple[tuple[tuple[str, Path], ...], int]:
    """The regular files under ``work`` that match an output pattern and are not inputs."""
    if done.timed_out or done.oom_killed or done.exit_code != 0:
        return (), 0
    given = {i.path for i in inp.inputs}
    kept: list[tuple[str, Path]] = []
    ignored = 0
    total = 0
    for dirpath, dirnames, filenames in os.walk(work):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(work).as_posix()
            if rel in given or not any(matches(p, rel) for p in inp.outputs):
                ignored += rel not in given
                continue
            st = full.lstat()
            if not stat.S_ISREG(st.st_mode):
                raise SandboxError("internal", f"build output {rel} is not a regular file")
            try:
                validate_path(rel)
            except UnsafePathError as exc:
                raise SandboxError("internal", f"build output: {exc}") from exc
            total += st.st_size
            kept.append((rel, full))
            if len(kept) > MAX_OUTPUT_FILES or total > MAX_OUTPUT_BYTES:
                raise SandboxError(
                    "internal",
                    f"build outputs over the cap ({MAX_OUTPUT_FILES} files, "
                    f"{MAX_OUTPUT_BYTES >> 20} MiB)",
                )
    return tuple(kept), ignored


def _copy(blob: Path, dest: Path, mode: int) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    if dest.is_dir():
        raise FailedPrecondition(f"build paths conflict at {dest.name!r}")
    try:
        shutil.copyfile(blob, dest)
    except (IsADirectoryError, NotADirectoryError) as exc:
        raise FailedPrecondition(f"build paths conflict at {dest.name!r}") from exc
    dest.chmod(mode)
