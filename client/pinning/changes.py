"""What a rewrite of a pin file changed: keys added, removed and changed, for a person to read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Changes", "diff_maps"]


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
