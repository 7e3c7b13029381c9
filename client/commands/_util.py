"""Small helpers shared by the client's commands: ``--repo``, output paths, the review clock, JSON
output."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from client.outpaths import guard_output
from patchgate.errors import UsageError

__all__ = ["add_repo_option", "check_out_dir", "parse_clock", "print_json", "resolve_out"]


def add_repo_option(parser: argparse.ArgumentParser, what: str = "the repository") -> None:
    """``--repo DIR``, the repository a command works in: the current directory by default."""
    parser.add_argument(
        "--repo", type=Path, default=Path("."), metavar="DIR", help=f"{what} (default: .)"
    )


def resolve_out(out: Path, default_name: str, **guard: Any) -> Path:
    """The file to write for ``--out``: ``out``, or ``out/default_name`` if ``out`` is a directory.

    The file passes :func:`client.outpaths.guard_output` (``guard``: its keyword arguments): a
    path where the command reads, onto one of its inputs, or that cannot be written is refused
    (UsageError, exit 64) before anything is read or written.
    """
    target = Path(out)
    if target.is_dir():
        target = target / default_name
    guard_output(target, **guard)
    return target


def check_out_dir(out: Path, **guard: Any) -> None:
    """Refuse (UsageError) an ``--out`` directory that cannot be one, before anything is written.

    Refused: an existing path that is not a directory (a regular file, a dangling link), a path
    below an existing non-directory, and whatever :func:`client.outpaths.guard_output` refuses.
    """
    target = Path(out)
    if target.is_symlink() and not target.exists():
        raise UsageError(f"--out {out}: a symbolic link to nothing")
    guard_output(target, directory=True, **guard)
    if target.exists() and not target.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")


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
