"""Small helpers shared by the client's commands: output paths, the review clock, JSON output."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from patchgate.errors import UsageError

__all__ = ["check_out_dir", "parse_clock", "print_json", "resolve_out"]


def resolve_out(out: Path, default_name: str, forbidden: Iterable[tuple[Path, str]] = ()) -> Path:
    """The file to write for ``--out``: ``out``, or ``out/default_name`` if ``out`` is a directory.

    Refuses (UsageError) a path inside any ``forbidden`` directory (the pins directory above all:
    patchgate never writes into ``pins/``) and a path that is one of the ``forbidden`` files.
    """
    target = Path(out)
    if target.is_dir():
        target = target / default_name
    resolved = target.resolve()
    for place, what in forbidden:
        place_resolved = Path(place).resolve()
        if resolved == place_resolved or resolved.is_relative_to(place_resolved):
            raise UsageError(f"--out {out}: inside {what} {place}; patchgate never writes there")
    return target


def check_out_dir(out: Path, forbidden: Iterable[tuple[Path, str]] = ()) -> None:
    """Refuse (UsageError) an ``--out`` directory that cannot be one, before anything is written.

    Refused: an existing path that is not a directory (a regular file, a dangling link), a path
    below an existing non-directory, and a path inside (or equal to) any ``forbidden`` directory,
    symbolic links followed.
    """
    target = Path(out)
    if target.is_symlink() and not target.exists():
        raise UsageError(f"--out {out}: a symbolic link to nothing")
    if target.exists() and not target.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    above = next((p for p in target.absolute().parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise UsageError(f"--out {out}: {above} is not a directory")
    resolved = target.resolve()
    for place, what in forbidden:
        place_resolved = Path(place).resolve()
        if resolved == place_resolved or resolved.is_relative_to(place_resolved):
            raise UsageError(f"--out {out}: inside {what} {place}; patchgate never writes there")


def parse_clock(text: str | None) -> dt.datetime:
    """The review clock: ``text`` (ISO 8601 with an explicit UTC offset or ``Z``) or now in UTC."""
    if text is None:
        return dt.datetime.now(dt.UTC)
    try:
        clock = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--clock {text!r}: not an ISO 8601 date-time") from None
    if clock.tzinfo is None or clock.utcoffset() is None:
        raise UsageError(f"--clock {text!r}: needs an explicit offset (e.g. Z or +02:00)")
    return clock.astimezone(dt.UTC)


def print_json(obj: object) -> None:
    """Stable JSON on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
