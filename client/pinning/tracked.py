"""Which fixture files git tracks: a pin may hold only what a commit can hold.

``check`` reads its base from a commit, so a fixture file that git ignores (a compiled catalog,
a generated file) or has not been told about (never ``git add``-ed) is absent from every revision
the gate will score: pinning it makes every later check ``R2``. ``init`` and ``pin fixtures``
therefore refuse such files (exit 78, every one named, nothing written), or, with
``--skip-untracked``, leave them out of the pin and list them.

Tracked means in git's index (``git ls-files``): ``git add`` is enough, a commit is not needed.
A directory that is not inside a git work tree has nothing to compare with: the rule does not
apply there (``check`` needs a git repository anyway, and ``pin check --rev`` names every pinned
file a revision lacks).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from client.errors import EXIT_CONFIG, CommandRefused
from patchgate import git
from patchgate.errors import PatchgateError

__all__ = ["Untracked", "split_untracked", "untracked_refusal"]

_TIMEOUT_S = 60


@dataclass(frozen=True, kw_only=True)
class Untracked:
    """The fixture files git would not commit: ignored ones, and the others not in the index."""

    ignored: tuple[str, ...] = ()
    not_added: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        """Every such file, sorted."""
        return tuple(sorted((*self.ignored, *self.not_added)))

    def lines(self) -> list[str]:
        """One line per file, saying which kind it is."""
        kind = dict.fromkeys(self.not_added, "not tracked by git (git add it, or skip it)")
        kind.update(dict.fromkeys(self.ignored, "ignored by git"))
        return [f"{p}: {kind[p]}" for p in self.paths]


def _git_paths(repo: Path, *args: str) -> set[str] | None:
    """NUL-separated paths git prints (relative to ``repo``); None when ``repo`` is no work tree."""
    try:
        proc = git.run(repo, *args, timeout=_TIMEOUT_S)
    except PatchgateError:
        return None
    if proc.returncode != 0:
        return None
    return {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}


def split_untracked(repo: Path, fixture_root: str, paths: Iterable[str]) -> Untracked:
    """Which of ``paths`` (relative to ``repo``, under ``fixture_root``) git does not track."""
    wanted = sorted(set(paths))
    if not wanted:
        return Untracked()
    inside = _git_paths(repo, "rev-parse", "--is-inside-work-tree")
    if inside is None:
        return Untracked()  # not a git work tree: nothing to compare with (module docstring)
    tracked = _git_paths(repo, "ls-files", "-z", "--", fixture_root)
    ignored = _git_paths(
        repo, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--", fixture_root
    )
    if tracked is None or ignored is None:
        raise CommandRefused(f"{repo}: git cannot list the files it tracks", EXIT_CONFIG)
    missing = [p for p in wanted if p not in tracked]
    return Untracked(
        ignored=tuple(p for p in missing if p in ignored),
        not_added=tuple(p for p in missing if p not in ignored),
    )


def untracked_refusal(untracked: Untracked) -> CommandRefused:
    """The refusal (78) naming every untracked fixture file, on one line."""
    n = len(untracked.paths)
    listed = "; ".join(untracked.lines())
    return CommandRefused(
        f"{n} fixture file{'s' if n != 1 else ''} would be pinned but cannot be committed "
        f"({listed}); a check reads its base from a commit, where they are absent (R2). "
        "git add them, or pass --skip-untracked to leave them out of the pin",
        EXIT_CONFIG,
    )
