"""A request verified and materialized: every refusal before a container exists (envelope,
role, request checks, missing blobs), the workspace, fixture, environment and inside trees
placed as copies, and the fixture digest recomputed from the bytes that get mounted.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from executord.errors import FailedPrecondition
from executord.inside import FILES, REPORTER_DIR
from executord.runs.checks import check_request
from executord.runs.environment import apply_overlay, materialize_environment
from executord.runs.request import ExecuteInput
from executord.store.blobstore import BlobStore
from patchgate.digest import FileEntry, Manifest, fixture_digest, hash_files
from patchgate.envelope import FixtureStatement, verify_fixture_envelope
from patchgate.errors import EnvelopeError
from patchgate.keys import Keyring

__all__ = ["Prepared", "cleanup", "observed_digest", "prepare"]


@dataclass
class Prepared:
    """A verified, materialized request, ready to run."""

    inp: ExecuteInput
    statement: FixtureStatement
    observed_digest: str
    req_dir: Path
    timings: dict[str, int] = field(default_factory=dict)
    #: The source roots the signed environment names (None: no environment, the executor's own).
    source_roots: tuple[str, ...] | None = None

    @property
    def workspace_dir(self) -> Path:
        return self.req_dir / "workspace"

    @property
    def fixture_dir(self) -> Path:
        return self.req_dir / "fixtures"

    @property
    def inside_dir(self) -> Path:
        return self.req_dir / "inside"

    @property
    def environment_dir(self) -> Path:
        return self.req_dir / "env" / "tree"


def prepare(inp: ExecuteInput, *, keyring: Keyring, store: BlobStore, work_dir: Path) -> Prepared:
    """Verify and materialize; FailedPrecondition / InvalidArgument when anything is off."""
    t0 = time.monotonic()
    try:
        statement = verify_fixture_envelope(inp.envelope, keyring)
    except EnvelopeError as exc:
        raise FailedPrecondition(f"fixture envelope refused: {exc}") from exc
    manifest = statement.manifest
    check_request(inp, manifest)
    needed = [e.digest for e in inp.workspace] + [f.sha256 for f in manifest.files.values()]
    needed += [e.digest for e in inp.environment]
    missing = store.missing(needed)
    if missing:
        raise FailedPrecondition(f"{len(missing)} blob(s) not in the store, e.g. {missing[0][:16]}")
    req_dir = Path(tempfile.mkdtemp(prefix="req-", dir=work_dir))
    prepared = Prepared(inp=inp, statement=statement, observed_digest="", req_dir=req_dir)
    try:
        with store.referenced(needed):
            _materialize(prepared, store)
        observed = observed_digest(prepared)
        if observed != statement.digest:
            raise FailedPrecondition(
                f"fixture digest of the mounted bytes {observed[:16]} "
                f"!= signed {statement.digest[:16]}"
            )
    except BaseException:
        cleanup(prepared)
        raise
    prepared.observed_digest = observed
    prepared.timings["materialize_ms"] = int((time.monotonic() - t0) * 1000)
    prepared.timings["upload_ms"] = store.upload_ms(needed)
    return prepared


def _materialize(prepared: Prepared, store: BlobStore) -> None:
    inp, manifest = prepared.inp, prepared.statement.manifest
    ws, fx = prepared.workspace_dir, prepared.fixture_dir
    ws.mkdir(mode=0o755)
    fx.mkdir(mode=0o755)
    for item in inp.workspace:
        _place(
            store.open_blob(item.digest),
            ws / item.path,
            0o755 if item.executable else 0o644,
        )
    prefix = inp.fixture_root + "/"
    for path, entry in manifest.files.items():
        _place(store.open_blob(entry.sha256), fx / path[len(prefix) :], 0o444)
    if manifest.environment_digest is not None:
        prepared.environment_dir.parent.mkdir(mode=0o755)
        prepared.source_roots = materialize_environment(
            inp.environment,
            prepared.environment_dir,
            lambda item, dest: _place(store.open_blob(item.digest), dest, 0o444),
            manifest.environment_digest,
        )
        apply_overlay(
            prepared.environment_dir,
            ws,
            (inp.fixture_root, fx),
            lambda src, dest: _place(src, dest, 0o444),
        )
    mountpoint = ws / inp.fixture_root
    mountpoint.mkdir(parents=True, exist_ok=True, mode=0o755)
    # A copy beside the request, so that its path means the same to the engine wherever the
    # executor itself runs (in compose, only the state directory is shared with the host).
    prepared.inside_dir.mkdir(mode=0o755)
    # every module of executord/inside/ (the reporter's FILES, the supervisor, the subject,
    # the judge plugin, the wire), never its __init__: nothing there imports the package
    names = {*FILES, *(p.name for p in REPORTER_DIR.glob("*.py") if p.name != "__init__.py")}
    for name in sorted(names):
        _place(REPORTER_DIR / name, prepared.inside_dir / name, 0o444)


def observed_digest(prepared: Prepared) -> str:
    """The digest v1 of the fixture bytes as they sit in the tree that gets mounted."""
    m = prepared.statement.manifest
    prefix = prepared.inp.fixture_root + "/"
    try:
        files = hash_files({p: prepared.fixture_dir / p[len(prefix) :] for p in m.files})
    except OSError:
        return "unreadable"
    return fixture_digest(_with_files(m, files))


def cleanup(prepared: Prepared) -> None:
    """Remove the materialized trees and results."""
    shutil.rmtree(prepared.req_dir, ignore_errors=True)


def _with_files(m: Manifest, files: dict[str, FileEntry]) -> Manifest:
    return Manifest(
        pin_id=m.pin_id,
        algorithm=m.algorithm,
        files=files,
        seed=m.seed,
        clock_bound_ms=m.clock_bound_ms,
        allowed_commands=m.allowed_commands,
    )


def _place(blob: Path, dest: Path, mode: int) -> None:
    """Copy one blob into the tree (a copy, so eviction or tampering in the store cannot follow)."""
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    with contextlib.suppress(FileNotFoundError):
        if dest.is_dir():
            raise FailedPrecondition(f"workspace path {dest.name!r} is both a file and a directory")
    try:
        shutil.copyfile(blob, dest)
    except (IsADirectoryError, NotADirectoryError) as exc:
        raise FailedPrecondition(f"workspace paths conflict at {dest.name!r}") from exc
    dest.chmod(mode)
