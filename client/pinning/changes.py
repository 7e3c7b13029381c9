"""What a rewrite of a pin file changed (keys added, removed, changed); where pins may go."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from client.errors import EXIT_CONFIG, CommandRefused

__all__ = ["Changes", "diff_maps", "no_link_on_the_way"]


@dataclass(frozen=True, kw_only=True)
class Changes:
    """Keys (fixture paths or property ids) added, removed and changed, each sorted."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Nothing changed."""
        return not (self.added or self.removed or self.changed)

    def lines(self) -> list[str]:
        """One line per key: ``added KEY``, ``removed KEY``, ``changed KEY``."""
        return [
            *(f"added {k}" for k in self.added),
            *(f"removed {k}" for k in self.removed),
            *(f"changed {k}" for k in self.changed),
        ]

    def summary(self) -> str:
        """``1 added, 0 removed, 2 changed``."""
        return f"{len(self.added)} added, {len(self.removed)} removed, {len(self.changed)} changed"

    def to_json(self) -> dict[str, list[str]]:
        """The three lists as JSON."""
        return {"added": [*self.added], "removed": [*self.removed], "changed": [*self.changed]}


def diff_maps(old: Mapping[str, object], new: Mapping[str, object]) -> Changes:
    """The keys ``new`` adds to ``old``, removes from it, and maps to a different value."""
    return Changes(
        added=tuple(sorted(set(new) - set(old))),
        removed=tuple(sorted(set(old) - set(new))),
        changed=tuple(sorted(k for k in set(old) & set(new) if old[k] != new[k])),
    )


def no_link_on_the_way(repo: Path, rel: str) -> None:
    """Refuse (exit 78) to write ``repo/rel`` when it or a directory on its way is a symlink: a
    pin is written inside the repository or not at all (a linked ``pins/`` would send it
    elsewhere, and ``git`` stores a link, not the file it points to)."""
    path = repo
    for part in rel.split("/"):
        path = path / part
        if path.is_symlink():
            raise CommandRefused(
                f"{repo / rel}: {path} is a symlink; pins are written only as regular files "
                "inside the repository",
                EXIT_CONFIG,
            )
