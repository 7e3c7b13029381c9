"""The symbol names of a tree that a ``covers`` entry may use, and the nearest one to a typo.

The same names ``patchgate check`` accepts in its base tree
(:func:`client.analysis.patch.touched.base_symbols`): a tree's production modules are the paths its
layout judges ``source`` (:func:`client.analysis.patch.roles.layout_of`: ``.py`` files under a
source root that are not tests, ``conftest.py``, a property's file, a plugin, oracle, pins or
excluded), each named from its source root (``src/textkit/core.py`` → ``textkit.core``). Its names
are the module itself and ``module.qualname`` of every function and class defined in it, at any
depth. A module whose source does not parse has only its own name, and is remembered so that a
message can say why. When the pins themselves are invalid, the layout comes from the configuration
alone.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from client.analysis.patch.roles import Layout, layout_of
from client.analysis.patch.symbols import symbol_table
from client.pinning.tree import python_files
from patchgate.pins import PinSet, ProjectConfig

__all__ = ["SymbolNames", "tree_symbols"]


@dataclass(frozen=True)
class SymbolNames:
    """Every name a ``covers`` entry may use in one tree; ``unparsable``: module → its path."""

    names: frozenset[str]
    unparsable: dict[str, str] = field(default_factory=dict)
    #: names that mean two things (a module ``pkg/f.py`` and a function ``f`` of ``pkg``): a
    #: ``covers`` entry must name one thing of the base (``check`` refuses them too)
    ambiguous: frozenset[str] = frozenset()

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def suggest(self, entry: str) -> str | None:
        """The name closest to ``entry`` (difflib), or None when nothing is close."""
        close = difflib.get_close_matches(entry, sorted(self.names), n=1, cutoff=0.6)
        return close[0] if close else None

    def unparsable_module_of(self, entry: str) -> str | None:
        """The path of an unparsable module that ``entry`` would name a symbol of."""
        for module, path in self.unparsable.items():
            if entry.startswith(module + "."):
                return path
        return None


def _layout(root: Path, config: ProjectConfig, pins: PinSet | None) -> Layout:
    if pins is not None:
        return layout_of(root, pins)
    src = root / "src"
    return Layout(
        source_roots=config.roots(has_src=src.is_dir() and not src.is_symlink()),
        oracle_paths=config.oracle_paths,
        pins_dir=config.pins_dir,
        exclude=config.exclude,
    )


def tree_symbols(root: Path, config: ProjectConfig, pins: PinSet | None = None) -> SymbolNames:
    """Every symbol name of the production modules of the tree at ``root``."""
    layout = _layout(root, config, pins)
    meaning: dict[str, set[tuple[str, str]]] = {}
    unparsable: dict[str, str] = {}
    for path in python_files(root):
        if layout.role(path) != "source":
            continue
        try:
            source = (root / path).read_bytes()
        except OSError:
            continue
        module = layout.module(path)
        meaning.setdefault(module, set()).add((module, ""))
        table = symbol_table(source)
        if table is None:
            unparsable[module] = path
            continue
        for qualname in table:
            if qualname:
                meaning.setdefault(f"{module}.{qualname}", set()).add((module, qualname))
    ambiguous = frozenset(name for name, found in meaning.items() if len(found) > 1)
    return SymbolNames(frozenset(meaning), unparsable, ambiguous)
