"""``covers`` entries resolved once in the base tree, by kind (docs/reference/pins.md).

Each entry names, in the base tree's production source, a module (``billing.orders``), a class
(``billing.Line``) or a function or method (``billing.prorate``, ``billing.Line.net``), and
becomes a :class:`patchgate.symbols.Cover` that knows which: it then matches only symbols of that
module and, for a class or function, of that qualified name (nested definitions included). A
module a patch adds under a function's name (``billing/prorate.py`` beside the function
``billing.prorate``) is another module: the entry does not cover it.

An entry that names nothing in the base, or names two things there (a module ``pkg/f.py`` and a
function ``f`` of ``pkg/__init__.py``), is a pin error: ``check`` and ``pin check`` exit 78 with
the entry and the nearest name. Pure but for reading the base tree.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path

from client.analysis.patch.roles import Layout
from client.analysis.patch.symbols import definitions
from client.analysis.patch.treediff import scan_tree
from patchgate.pins import PropertyPin
from patchgate.symbols import Cover

__all__ = ["base_names", "nearest", "resolve_covers"]

Names = Mapping[str, tuple[Cover, ...]]


def _add(names: dict[str, list[Cover]], cover: Cover) -> None:
    found = names.setdefault(str(cover), [])
    key = (cover.kind, cover.module, cover.qualname)
    if all((c.kind, c.module, c.qualname) != key for c in found):
        found.append(cover)


def base_names(layout: Layout, base: Path) -> dict[str, tuple[Cover, ...]]:
    """Every name a ``covers`` entry may use in the base tree -> what it names there (one
    :class:`Cover` each; two when the name is ambiguous). An unparsable module names itself only."""
    names: dict[str, list[Cover]] = {}
    for path, entry in sorted(scan_tree(base).items()):
        if entry.kind != "file" or layout.role(path) != "source":
            continue
        module = layout.module(path)
        _add(names, Cover(module, "module", module))
        try:
            tree = ast.parse((base / path).read_bytes())
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for qualname, node in definitions(tree.body, ""):
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            _add(names, Cover(f"{module}.{qualname}", kind, module, qualname))
    return {name: tuple(found) for name, found in names.items()}


def nearest(entry: str, names: Mapping[str, object]) -> str | None:
    """The name of ``names`` closest to ``entry`` (difflib), or None when nothing is close."""
    close = difflib.get_close_matches(entry, sorted(names), n=1, cutoff=0.6)
    return close[0] if close else None


def _problem(prop: PropertyPin, entry: str, found: Sequence[Cover], names: Names) -> str:
    if not found:
        near = nearest(entry, names)
        hint = f"; did you mean {near}?" if near else ""
        return f"{prop.id}: covers entry {entry!r} names no symbol of the base tree{hint}"
    what = " and ".join(f"{c.kind} {c.qualname or c.module} of module {c.module}" for c in found)
    return f"{prop.id}: covers entry {entry!r} is ambiguous in the base tree: it names {what}"


def resolve_covers(
    properties: Sequence[PropertyPin], names: Names
) -> tuple[tuple[PropertyPin, ...], tuple[str, ...]]:
    """The properties with every ``covers`` entry resolved (:class:`Cover`), and one problem line
    per entry that names nothing or two things in the base (empty: all resolved)."""
    resolved: list[PropertyPin] = []
    problems: list[str] = []
    for prop in properties:
        covers: list[str] = []
        for entry in prop.covers:
            found = names.get(entry, ())
            if len(found) == 1:
                covers.append(found[0])
            else:
                problems.append(_problem(prop, entry, found, names))
        resolved.append(dataclasses.replace(prop, covers=tuple(covers)))
    return tuple(resolved), tuple(problems)
