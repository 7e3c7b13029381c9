"""Request checks that refuse before anything is materialized or started (FailedPrecondition).

Shape (safe paths, ids, run count) is INVALID_ARGUMENT; anything the signed manifest forbids — a
command no allowed command prefixes, a fixture outside the fixture root, a workspace file inside
it — is FAILED_PRECONDITION.
"""

from __future__ import annotations

from executord.errors import FailedPrecondition, InvalidArgument
from executord.runs.environment import check_environment
from executord.runs.request import ExecuteInput
from executord.store.blobstore import is_digest
from patchgate.digest import Manifest, validate_path
from patchgate.errors import UnsafePathError
from patchgate.pins import command_allowed
from patchgate.symbols import MAX_TARGET_NAME, MAX_TARGETS

__all__ = [
    "ISOLATIONS",
    "JUDGE_MODES",
    "MAX_RUNS",
    "MAX_TARGETS",
    "MAX_VARIANTS",
    "MAX_VARIANT_BYTES",
    "check_request",
]

ISOLATIONS = ("run", "property")
JUDGE_MODES = ("on", "off")
MAX_SOURCE_ROOTS = 64

MAX_RUNS = 5
MAX_VARIANTS = 256
MAX_VARIANT_BYTES = 1 << 20
MAX_TARGET_LINE = 10_000_000


def check_request(inp: ExecuteInput, manifest: Manifest) -> None:
    """Request shape, allowed commands, workspace paths (FailedPrecondition, InvalidArgument)."""
    try:
        validate_path(inp.fixture_root)
    except UnsafePathError as exc:
        raise InvalidArgument(f"fixture_root: {exc}") from exc
    if not inp.properties:
        raise InvalidArgument("no property to run")
    if not 1 <= inp.runs <= MAX_RUNS:
        raise InvalidArgument(f"runs must be 1..{MAX_RUNS}")
    if inp.isolation not in ISOLATIONS:
        raise InvalidArgument(f"isolation must be one of {', '.join(ISOLATIONS)}")
    if inp.judge not in JUDGE_MODES:
        raise InvalidArgument(f"judge must be one of {', '.join(JUDGE_MODES)}")
    _check_source_roots(inp.source_roots)
    prefix = inp.fixture_root + "/"
    for path in manifest.files:
        if not path.startswith(prefix):
            raise FailedPrecondition(
                f"signed fixture {path!r} is not under the fixture root {inp.fixture_root!r}"
            )
    seen_ids: set[str] = set()
    for prop in inp.properties:
        if not prop.id or prop.id in seen_ids:
            raise InvalidArgument(f"property id {prop.id!r} empty or repeated")
        seen_ids.add(prop.id)
        if not command_allowed(prop.command, manifest.allowed_commands):
            raise FailedPrecondition(
                f"property {prop.id}: command {list(prop.command)!r} "
                "is not allowed by the signed allowed_commands"
            )
    _check_targets(inp)
    check_environment(inp, manifest)
    seen: set[str] = set()
    for item in inp.workspace:
        try:
            validate_path(item.path)
        except UnsafePathError as exc:
            raise InvalidArgument(f"workspace: {exc}") from exc
        if item.path == inp.fixture_root or item.path.startswith(prefix):
            raise FailedPrecondition(f"workspace path {item.path!r} is under the fixture root")
        if item.path in seen or not is_digest(item.digest):
            raise InvalidArgument(f"workspace entry {item.path!r}: repeated path or bad digest")
        seen.add(item.path)
    _check_variants(inp, seen)


def _check_targets(inp: ExecuteInput) -> None:
    """Target code ranges: few, safe paths, sane lines, short names (INVALID_ARGUMENT)."""
    if len(inp.targets) > MAX_TARGETS:
        raise InvalidArgument(f"more than {MAX_TARGETS} targets")
    for t in inp.targets:
        try:
            validate_path(t.path)
        except UnsafePathError as exc:
            raise InvalidArgument(f"target: {exc}") from exc
        if not 1 <= t.first_line <= t.last_line <= MAX_TARGET_LINE:
            raise InvalidArgument(f"target {t.path}: lines must satisfy 1 <= first <= last")
        if not t.name or len(t.name) > MAX_TARGET_NAME:
            raise InvalidArgument(f"target {t.path}: name empty or over {MAX_TARGET_NAME} chars")


def _check_variants(inp: ExecuteInput, workspace: set[str]) -> None:
    """Module variants (mutation v2): judge on, one run, few, each a production ``.py`` file of
    the workspace under a source root, each source capped (INVALID_ARGUMENT)."""
    if not inp.variants:
        if inp.variant_scope:
            raise InvalidArgument("variant_scope without variants")
        return
    ids = {p.id for p in inp.properties}
    if len(set(inp.variant_scope)) != len(inp.variant_scope):
        raise InvalidArgument("variant_scope names a property twice")
    unknown = sorted(set(inp.variant_scope) - ids)
    if unknown:
        raise InvalidArgument(f"variant_scope: {unknown[0]!r} is not a property of the request")
    if inp.runs != 1:
        raise InvalidArgument("variants need runs = 1")
    if inp.judge != "on":
        raise InvalidArgument("variants need judge on (they are served by the subject)")
    if len(inp.variants) > MAX_VARIANTS:
        raise InvalidArgument(f"more than {MAX_VARIANTS} variants")
    for n, v in enumerate(inp.variants, 1):
        try:
            validate_path(v.path)
        except UnsafePathError as exc:
            raise InvalidArgument(f"variant {n}: {exc}") from exc
        if not v.path.endswith(".py"):
            raise InvalidArgument(f"variant {n}: {v.path!r} is not a .py file")
        if v.path not in workspace:
            raise InvalidArgument(f"variant {n}: {v.path!r} is not a file of the workspace")
        if len(set(v.scope)) != len(v.scope):
            raise InvalidArgument(f"variant {n}: its scope names a property twice")
        stray = sorted(set(v.scope) - ids)
        if stray:
            raise InvalidArgument(
                f"variant {n}: scope {stray[0]!r} is not a property of the request"
            )
        if not any(r == "." or v.path.startswith(r.rstrip("/") + "/") for r in inp.source_roots):
            raise InvalidArgument(f"variant {n}: {v.path!r} is not under a source root")
        if len(v.source) > MAX_VARIANT_BYTES:
            raise InvalidArgument(f"variant {n}: source over {MAX_VARIANT_BYTES} bytes")


def _check_source_roots(roots: tuple[str, ...]) -> None:
    """Each source root is ``.`` or a safe relative path; a few at most."""
    if not roots or len(roots) > MAX_SOURCE_ROOTS:
        raise InvalidArgument(f"source_roots: 1 to {MAX_SOURCE_ROOTS} entries")
    for root in roots:
        if root == ".":
            continue
        try:
            validate_path(root)
        except UnsafePathError as exc:
            raise InvalidArgument(f"source_roots: {exc}") from exc
