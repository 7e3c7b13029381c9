"""What a patch touched, judged: every changed path of the trees with its roles and symbols.

Input: the :class:`~client.analysis.patch.treediff.PathChange` list (base tree against the tree
``git apply`` produced) and the base's :class:`~client.analysis.patch.roles.Layout`. Output: one
:class:`Touched` in which every changed path is accounted for, as a changed symbol's file
(production source), an oracle move (harness or oracle, ``R7``), a pin mutation (pins or the
gate's configuration, ``R8``), compiled code (``reject_provenance``) or an excluded path (data,
configured exclusions). ``excluded_paths`` lists every changed path that is not production source,
so the receipt names every path a patch changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from client.analysis.patch.roles import Layout, pyproject_roles
from client.analysis.patch.symbols import compare_module, defined_names, symbol_table
from client.analysis.patch.treediff import PathChange, scan_tree
from patchgate.symbols import Symbol

__all__ = ["Touched", "base_symbols", "judge"]

Reader = Callable[[str], bytes | None]


@dataclass(frozen=True, kw_only=True)
class Touched:
    """Every changed path, its roles, and the changed production symbols."""

    roles: Mapping[str, tuple[str, ...]]
    symbols: tuple[Symbol, ...]
    files: Mapping[str, str]  # source path -> its module

    def paths_with(self, *roles: str) -> tuple[str, ...]:
        """Changed paths that have one of ``roles``, sorted."""
        return tuple(p for p, r in sorted(self.roles.items()) if set(r) & set(roles))

    @property
    def touched_paths(self) -> tuple[str, ...]:
        """Every path whose kind, mode or bytes differ between the trees."""
        return tuple(sorted(self.roles))

    @property
    def excluded_paths(self) -> tuple[str, ...]:
        """Changed paths that are not production source (listed in the receipt, never scored)."""
        return tuple(p for p, r in sorted(self.roles.items()) if "source" not in r)

    @property
    def oracle_moves(self) -> tuple[str, ...]:
        """Harness and oracle paths the patch touched (``R7``)."""
        return self.paths_with("oracle", "harness")

    @property
    def pin_mutations(self) -> tuple[str, ...]:
        """Pin files and the gate's configuration the patch touched (``R8``)."""
        return self.paths_with("pin")

    @property
    def compiled(self) -> tuple[str, ...]:
        """Compiled or binary code the patch added or changed (``reject_provenance``)."""
        return self.paths_with("compiled")


def judge(changes: Sequence[PathChange], layout: Layout, base: Reader, patched: Reader) -> Touched:
    """Roles and changed symbols of ``changes``; ``base``/``patched`` read a regular file's bytes
    (None: absent, a symlink or not a regular file)."""
    roles: dict[str, tuple[str, ...]] = {}
    symbols: dict[str, Symbol] = {}
    files: dict[str, str] = {}
    for change in changes:
        path = change.path
        role = layout.role(path)
        if role == "pyproject":
            regular = change.is_regular_pair
            kinds = pyproject_roles(base(path), patched(path)) if regular else {"harness"}
            roles[path] = tuple(sorted(kinds)) or ("data",)  # only inert tables or comments
            continue
        if role == "data" and not change.is_regular_pair:
            role = "harness"  # a symlink may make Python or pytest load what it points to
        roles[path] = (role,)
        if role != "source":
            continue
        module = layout.module(path)
        files[path] = module
        if change.is_regular_pair:
            found = compare_module(module, base(path), patched(path))
        else:  # a symlink or special file as a module: unreviewable, everything in it changed
            found = _everything(module, base(path)) | _everything(module, patched(path))
        for symbol in found:
            _add(symbols, symbol)
    return Touched(roles=roles, symbols=tuple(sorted(symbols.values())), files=files)


def _add(symbols: dict[str, Symbol], symbol: Symbol) -> None:
    """Keep ``symbol``; one name from two modules (``pkg.sub.f``: function ``f`` of
    ``pkg/sub.py`` and method ``f`` of class ``sub`` in ``pkg/__init__.py``) becomes one symbol
    of no module, which no ``covers`` entry covers: a change cannot hide behind its namesake."""
    known = symbols.get(str(symbol))
    if known is not None and known.module != symbol.module:
        symbol = Symbol(str(symbol), "")
    symbols[str(symbol)] = symbol


def _everything(module: str, source: bytes | None) -> set[Symbol]:
    table = symbol_table(source) if source is not None else None
    return {Symbol.make(module, name) for name in (table or {"": ()})}


def base_symbols(layout: Layout, base: Path) -> frozenset[str]:
    """Every name a ``covers`` entry may use in the base tree: each production module and each
    ``module.qualname`` defined in it (an unparsable module contributes its module name only)."""
    names: set[str] = set()
    for path, entry in scan_tree(base).items():
        if entry.kind != "file" or layout.role(path) != "source":
            continue
        module = layout.module(path)
        names.add(module)
        try:
            source = (base / path).read_bytes()
        except OSError:
            continue
        names.update(f"{module}.{q}" for q in defined_names(source) or () if q)
    return frozenset(names)
