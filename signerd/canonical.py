"""Checks that a manifest sent for signing is canonical and within the documented limits.

The request arrives as a ``RawManifest`` (lists, exactly as sent, duplicates and all) so that
nothing is lost before it is checked; ``validate`` returns the ``patchgate.digest.Manifest`` the
signer then digests itself. Every refusal is an ``InvalidArgument`` naming the field and why.
No grpc here: the service converts the proto message into a ``RawManifest``.

Lengths and counts come first (``check_bounds``): a 3.9 MB path is refused for its length before
anything looks inside it. A reason shows at most 256 bytes of an offending value and its length
(``signerd.excerpt``), so what is written about a request stays small whatever it carries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from patchgate.digest import SHA256_HEX, FileEntry, Manifest, command_text, validate_path
from patchgate.errors import UnsafePathError
from signerd.errors import InvalidArgument
from signerd.excerpt import excerpt

__all__ = ["LIMITS", "Limits", "RawFile", "RawManifest", "check_bounds", "validate"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Documented bounds (docs/signer.md); a manifest over any of them is refused."""

    max_files: int = 10_000
    max_path_bytes: int = 1_024
    max_file_size: int = 1 << 40  # 1 TiB per fixture file
    max_commands: int = 64
    max_argv: int = 256  # arguments in one command
    max_arg_bytes: int = 4_096  # UTF-8 bytes of one argument
    max_pin_id_bytes: int = 256
    max_algorithm_bytes: int = 32
    max_total_bytes: int = 4 << 20  # UTF-8 bytes of every string of the manifest together
    max_seed: int = (1 << 32) - 1  # the seed becomes PYTHONHASHSEED: 0..4294967295
    min_clock_bound_ms: int = 1
    max_clock_bound_ms: int = 24 * 3600 * 1000


LIMITS = Limits()


@dataclass(frozen=True)
class RawFile:
    """One fixture entry as sent."""

    path: str
    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class RawManifest:
    """A manifest exactly as sent, before any check."""

    pin_id: str
    algorithm: str
    files: Sequence[RawFile]
    seed: int
    clock_bound_ms: int
    allowed_commands: Sequence[Sequence[str]]
    environment_digest: str = ""  # "" (the proto3 default): the base configures no environment


def validate(raw: RawManifest, limits: Limits = LIMITS) -> Manifest:
    """Return the canonical ``Manifest`` of ``raw`` or raise ``InvalidArgument`` with the reason."""
    check_bounds(raw, limits)
    _check_pin_id(raw.pin_id)
    if raw.algorithm != "sha256":
        raise InvalidArgument(f"algorithm: {excerpt(raw.algorithm)} is not 'sha256'")
    files = _check_files(raw.files, limits)
    if not limits.max_seed >= raw.seed >= 0:
        raise InvalidArgument(f"seed: {raw.seed} is outside 0..{limits.max_seed}")
    if not limits.max_clock_bound_ms >= raw.clock_bound_ms >= limits.min_clock_bound_ms:
        raise InvalidArgument(
            f"clock_bound_ms: {raw.clock_bound_ms} is outside "
            f"{limits.min_clock_bound_ms}..{limits.max_clock_bound_ms}"
        )
    commands = _check_commands(raw.allowed_commands)
    env = raw.environment_digest
    if env and not SHA256_HEX.fullmatch(env):
        raise InvalidArgument("environment_digest: not 64 lowercase hex characters (or empty)")
    return Manifest(
        pin_id=raw.pin_id,
        algorithm="sha256",
        files=files,
        seed=raw.seed,
        clock_bound_ms=raw.clock_bound_ms,
        allowed_commands=commands,
        environment_digest=env or None,
    )


def check_bounds(raw: RawManifest, limits: Limits = LIMITS) -> None:
    """Every length and count limit, before any other check of the manifest (counts first)."""
    if len(raw.files) > limits.max_files:
        raise InvalidArgument(f"files: {len(raw.files)} entries, limit {limits.max_files}")
    if len(raw.allowed_commands) > limits.max_commands:
        raise InvalidArgument(
            f"allowed_commands: {len(raw.allowed_commands)} commands, limit {limits.max_commands}"
        )
    total = _bounded("pin_id", raw.pin_id, limits.max_pin_id_bytes)
    total += _bounded("algorithm", raw.algorithm, limits.max_algorithm_bytes)
    total += _bounded("environment_digest", raw.environment_digest, 64)
    for i, f in enumerate(raw.files):
        total += _bounded(f"files[{i}].path", f.path, limits.max_path_bytes)
        total += _bounded(f"files[{i}].sha256", f.sha256, 64)
    for i, argv in enumerate(raw.allowed_commands):
        if len(argv) > limits.max_argv:
            raise InvalidArgument(
                f"allowed_commands[{i}]: {len(argv)} arguments, limit {limits.max_argv}"
            )
        for j, arg in enumerate(argv):
            total += _bounded(f"allowed_commands[{i}][{j}]", arg, limits.max_arg_bytes)
    if total > limits.max_total_bytes:
        raise InvalidArgument(f"manifest: {total} bytes of text, limit {limits.max_total_bytes}")


def _bounded(where: str, value: str, limit: int) -> int:
    """The UTF-8 length of ``value``; InvalidArgument when it is over ``limit``."""
    size = len(value) if len(value) > limit else len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise InvalidArgument(f"{where}: longer than {limit} bytes: {excerpt(value)}")
    return size


def _check_pin_id(pin_id: str) -> None:
    if not pin_id:
        raise InvalidArgument("pin_id: empty")
    if _CONTROL.search(pin_id) or pin_id != pin_id.strip():
        raise InvalidArgument("pin_id: contains control characters or surrounding spaces")


def _check_files(raw_files: Sequence[RawFile], limits: Limits) -> dict[str, FileEntry]:
    files: dict[str, FileEntry] = {}
    for i, f in enumerate(raw_files):
        where = f"files[{i}]"
        try:
            validate_path(f.path)
        except UnsafePathError as exc:
            raise InvalidArgument(
                f"{where}.path: unsafe path {excerpt(f.path)}: {exc.why}"
            ) from None
        if _CONTROL.search(f.path):
            raise InvalidArgument(f"{where}.path: {excerpt(f.path)} contains a control character")
        if f.path in files:
            raise InvalidArgument(f"{where}.path: {excerpt(f.path)} is listed twice")
        if not SHA256_HEX.fullmatch(f.sha256):
            raise InvalidArgument(f"{where}.sha256: not 64 lowercase hex characters")
        if not limits.max_file_size >= f.size >= 0:
            raise InvalidArgument(f"{where}.size: {f.size} is outside 0..{limits.max_file_size}")
        files[f.path] = FileEntry(sha256=f.sha256, size=f.size)
    return files


def _check_commands(raw_commands: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
    if not raw_commands:
        raise InvalidArgument("allowed_commands: empty; a pin must allow at least one command")
    seen: set[str] = set()
    out: list[tuple[str, ...]] = []
    for i, argv in enumerate(raw_commands):
        where = f"allowed_commands[{i}]"
        if not argv:
            raise InvalidArgument(f"{where}: empty argv")
        if not argv[0]:
            raise InvalidArgument(f"{where}[0]: empty program name")
        for j, arg in enumerate(argv):
            if "\x00" in arg:
                raise InvalidArgument(f"{where}[{j}]: contains NUL")
        text = command_text(argv)
        if text in seen:
            raise InvalidArgument(f"{where}: listed twice")
        seen.add(text)
        out.append(tuple(argv))
    return tuple(out)
