"""The symbol names of a tree that a ``covers`` entry may name, and the nearest one to a typo.

A tree's production modules are the paths the gate judges ``source`` (:class:`Layout` of
:mod:`client.analysis.roles`: ``.py`` files under a source root, neither tests, ``conftest.py``,
oracle, pins nor excluded), each named from its source root (``src/textkit/core.py`` →
``textkit.core``). Its names are the module itself and ``module.qualname`` of every function and
class defined in it, at any depth (:func:`client.analysis.symbols.symbol_table`). A module whose
source does not parse has only its own name, and is remembered so that a message can say why.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from client.analysis.roles import Layout
from client.analysis.symbols import symbol_table
from client.pinning.tree import SourceTree
from patchgate.pins import ProjectConfig

__all__ = ["SymbolNames", "layout_for", "tree_symbols"]


@dataclass(frozen=True)
class SymbolNames:
    """Every name a ``covers`` entry may use in one tree; ``unparsable``: module → its path."""

    names: frozenset[str]
    unparsable: dict[str, str] = field(default_factory=dict)

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


def layout_for(tree: SourceTree, config: ProjectConfig) -> Layout:
    """How the gate judges the paths of ``tree`` under ``config`` (source roots in effect)."""
    return Layout(
        source_roots=config.roots(has_src=tree.is_dir("src")),
        oracle_paths=config.oracle_paths,
        pins_dir=config.pins_dir,
        exclude=config.exclude,
    )


def tree_symbols(tree: SourceTree, config: ProjectConfig) -> SymbolNames:
    """Every symbol name of the production modules of ``tree``."""
    layout = layout_for(tree, config)
    paths = [p for p in tree.python_files() if layout.role(p) == "source"]
    names: set[str] = set()
    unparsable: dict[str, str] = {}
    for path, source in tree.read_all(paths).items():
        module = layout.module(path)
        names.add(module)
        table = symbol_table(source)
        if table is None:
            unparsable[module] = path
            continue
        names.update(f"{module}.{qualname}" for qualname in table if qualname)
    return SymbolNames(frozenset(names), unparsable)
