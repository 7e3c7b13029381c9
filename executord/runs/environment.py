"""The suite's signed environment: checked, materialized, re-digested, mounted.

The contract: docs/reference/pins.md and docs/executor.md.

A request whose signed manifest names an ``environment_digest`` must carry the environment tree
(by content, like the workspace); one that names none must carry no tree and runs with the
executor's own Python (``environment: "executor"`` in the report). The digest is recomputed from
the bytes placed in the tree that is mounted, before any container exists; a difference is
FAILED_PRECONDITION. With an environment the sandbox gets the base interpreter alone (no executor
venv, its site-packages hidden behind an empty directory), the tree read-only at :data:`ENV`, and
``PYTHONPATH`` = reporter, environment, the workspace's source roots. A tree that carries build
outputs (``patchgate-overlay/``, made by the base's build step in a sandbox) has them laid onto the
workspace at their repository paths before it is mounted (under the fixture root: beside the
pinned fixture files, which the fixture digest still covers alone); a workspace or fixture tree
that already has a file there is FAILED_PRECONDITION (the client refuses such a patch as R7 first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from executord.errors import FailedPrecondition, InvalidArgument
from executord.runs.request import ExecuteInput, TreeItem
from executord.sandbox.container import Mount
from executord.store.blobstore import is_digest
from patchgate.digest import Manifest, hash_files, validate_path
from patchgate.environment import environment_digest, overlay_files, read_info, tree_files
from patchgate.errors import EnvironmentBuildError, UnsafePathError

__all__ = [
    "ENV",
    "EXECUTOR_ENVIRONMENT",
    "MAX_ENVIRONMENT_FILES",
    "Bare",
    "apply_overlay",
    "check_environment",
    "materialize_environment",
    "python_path",
    "sandbox_mounts",
]

ENV = "/patchgate/env"
EXECUTOR_ENVIRONMENT = "executor"
MAX_ENVIRONMENT_FILES = 50_000
_HIDDEN = "empty"  # an empty directory of the request, mounted over the base's site-packages


@dataclass(frozen=True, kw_only=True)
class Bare:
    """The base interpreter without the executor's venv (``executord.sandbox.image``)."""

    mounts: tuple[Mount, ...] = ()
    path_dirs: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()


def check_environment(inp: ExecuteInput, manifest: Manifest) -> None:
    """Tree shape (INVALID_ARGUMENT); agreement with the signed manifest (FAILED_PRECONDITION)."""
    if manifest.environment_digest is None:
        if inp.environment:
            raise FailedPrecondition(
                "an environment tree was sent but the signed manifest names no environment"
            )
        return
    if not inp.environment:
        raise FailedPrecondition(
            f"the signed manifest names environment {manifest.environment_digest[:16]} "
            "but the request carries no environment tree"
        )
    if len(inp.environment) > MAX_ENVIRONMENT_FILES:
        raise InvalidArgument(f"environment: more than {MAX_ENVIRONMENT_FILES} files")
    seen: set[str] = set()
    for item in inp.environment:
        try:
            validate_path(item.path)
        except UnsafePathError as exc:
            raise InvalidArgument(f"environment: {exc}") from exc
        if item.path in seen or not is_digest(item.digest):
            raise InvalidArgument(f"environment entry {item.path!r}: repeated path or bad digest")
        seen.add(item.path)


def materialize_environment(
    items: tuple[TreeItem, ...],
    dest: Path,
    place: Callable[[TreeItem, Path], None],
    signed: str,
) -> tuple[str, ...]:
    """Place the tree, recompute its digest from the placed bytes; its source roots.

    FailedPrecondition when the digest differs from ``signed`` or the tree is not one
    ``patchgate env build`` makes.
    """
    dest.mkdir(mode=0o755)
    (dest.parent / _HIDDEN).mkdir(mode=0o755)
    for item in items:
        place(item, dest / item.path)
    try:
        observed = environment_digest(hash_files(tree_files(dest)))
        if observed != signed:
            raise FailedPrecondition(
                f"environment digest of the mounted bytes {observed[:16]} != signed {signed[:16]}"
            )
        roots = read_info(dest)
    except (OSError, EnvironmentBuildError, UnsafePathError) as exc:
        raise FailedPrecondition(f"environment tree refused: {exc}") from exc
    for d in dest.rglob("*"):
        if d.is_dir():
            d.chmod(0o755)
    return roots


def apply_overlay(
    env_dir: Path,
    workspace: Path,
    fixtures: tuple[str, Path],
    place: Callable[[Path, Path], None],
) -> int:
    """Lay the tree's build outputs onto the materialized workspace (those under the fixture
    root, ``fixtures`` = (root, its directory), into the fixture tree beside the pinned files,
    which they may not replace); how many there were."""
    files = overlay_files(env_dir)
    root, fixture_dir = fixtures
    prefix = root.strip("/") + "/"
    for path in sorted(files):
        dest = fixture_dir / path[len(prefix) :] if path.startswith(prefix) else workspace / path
        if dest.exists() or dest.is_symlink():
            raise FailedPrecondition(
                f"the patched workspace has {path}, which the signed environment's build makes"
            )
        place(files[path], dest)
    return len(files)


def sandbox_mounts(bare: Bare, env_dir: Path) -> tuple[Mount, ...]:
    """The base interpreter, its site-packages hidden, and the environment tree, all read-only."""
    empty = str(env_dir.parent / _HIDDEN)
    return (
        *bare.mounts,
        *(Mount(empty, site) for site in bare.hidden),
        Mount(str(env_dir), ENV),
    )


def python_path(reporter: str, workspace: str, roots: tuple[str, ...]) -> str:
    """``PYTHONPATH`` of an environment run: the reporter, the environment, the source roots."""
    return ":".join([reporter, ENV, *(f"{workspace}/{r}" if r else workspace for r in roots)])
