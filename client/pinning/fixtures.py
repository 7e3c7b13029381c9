"""``pin fixtures``: the ``files`` map of ``fixtures.json`` rehashed from the fixture tree.

Only ``files`` changes: ``pin_id``, ``seed``, ``clock_bound_ms``, ``allowed_commands`` and any other
key stay as they are. The tree is scanned like ``patchgate digest`` scans it: a symlink that
leaves the fixture tree, a linked directory, a non-regular file or an unsafe name refuses the
whole rewrite (exit 2, nothing written). A fixture root that does not exist pins no file (the
receipt's ``not_applicable``). A file git ignores or does not track is refused (exit 78), or left
out and listed with ``--skip-untracked`` (:mod:`client.pinning.tracked`). The new pin must parse
before it replaces the old one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from client.errors import EXIT_CONFIG, CommandRefused, ConfigError
from client.pinning.changes import Changes, diff_maps, no_link_on_the_way
from client.pinning.tracked import split_untracked, untracked_refusal
from patchgate.atomicfile import atomic_write_bytes, json_bytes
from patchgate.digest import hash_files, scan_fixture_tree, validate_path
from patchgate.errors import FixtureScanError, PinError, PinErrors, UnsafePathError
from patchgate.pins import DirSource, load_config, parse_fixture_pin

__all__ = ["FixtureUpdate", "repin_fixtures", "scan_fixtures", "tracked_fixtures"]


def scan_fixtures(repo: Path, fixture_root: str, known: list[str] | None = None) -> dict[str, str]:
    """Path (relative to ``repo``) → sha256 of every file under ``fixture_root``.

    ``known``: the paths pinned now (only to scan once). FixtureScanError (exit 2) when the tree
    holds anything unsafe; missing and extra files are the point here, never an error.
    """
    safe_known: list[str] = []
    for path in known or []:
        try:
            safe_known.append(validate_path(path))
        except UnsafePathError:
            continue
    try:
        found = scan_fixture_tree(repo, fixture_root, safe_known)
    except FixtureScanError as exc:
        if exc.unsafe:
            raise FixtureScanError(unsafe=exc.unsafe) from None
        found = {p: str(repo / p) for p in (set(safe_known) | set(exc.extra)) - set(exc.missing)}
    live = hash_files(found, processes=min(8, os.cpu_count() or 1))
    return {path: entry.sha256 for path, entry in sorted(live.items())}


def tracked_fixtures(
    repo: Path, fixture_root: str, files: dict[str, str], *, skip_untracked: bool
) -> tuple[dict[str, str], tuple[str, ...]]:
    """``files`` without what git does not track, and those left out; refused (78, every file
    named) unless ``skip_untracked`` (:mod:`client.pinning.tracked`)."""
    untracked = split_untracked(repo, fixture_root, files)
    if untracked.paths and not skip_untracked:
        raise untracked_refusal(untracked)
    kept = {p: h for p, h in files.items() if p not in set(untracked.paths)}
    return kept, untracked.paths


def config_error(exc: PinError) -> ConfigError:
    """A PinError (one or several) as the CLI's configuration error: one line each."""
    found = exc.errors if isinstance(exc, PinErrors) else (exc,)
    return ConfigError([str(e) for e in found])


@dataclass(frozen=True, kw_only=True)
class FixtureUpdate:
    """What ``pin fixtures`` did: the pin file, the changes, and how many files it pins now."""

    path: Path
    changes: Changes
    files: int
    skipped: tuple[str, ...] = ()


def repin_fixtures(repo: Path, *, skip_untracked: bool = False) -> FixtureUpdate:
    """Rewrite the ``files`` of ``repo``'s fixture pin from its tree (written only if changed).

    A file git ignores or does not track refuses the rewrite (78), or with ``skip_untracked`` is
    left out and listed in ``skipped``."""
    source = DirSource(repo)
    try:
        config = load_config(source)
    except PinError as exc:
        raise config_error(exc) from None
    rel = config.pin_paths[0]
    no_link_on_the_way(repo, rel)
    where = source.describe(rel)
    raw = source.read(rel)
    if raw is None:
        raise CommandRefused(f"{where}: missing; run 'patchgate init' first", EXIT_CONFIG)
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError([f"{where}: not valid JSON: {exc}"]) from None
    if not isinstance(obj, dict):
        raise ConfigError([f"{where}: expected a JSON object at the top level"])
    pinned = obj.get("files")
    old: dict[str, object] = pinned if isinstance(pinned, dict) else {}
    new = scan_fixtures(repo, config.fixture_root, [str(p) for p in old])
    new, skipped = tracked_fixtures(repo, config.fixture_root, new, skip_untracked=skip_untracked)
    data = json_bytes({**obj, "files": new})
    try:
        parse_fixture_pin(data, where, config.fixture_root)
    except PinError as exc:
        raise config_error(exc) from None
    changes = diff_maps(old, new)
    if not changes.empty:  # an unchanged pin is left as written, formatting included
        atomic_write_bytes(repo / rel, data)
    return FixtureUpdate(path=repo / rel, changes=changes, files=len(new), skipped=skipped)
