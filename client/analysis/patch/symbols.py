"""Changed symbols of one module, from the ASTs of its base and patched files.

A symbol is a function, method or class named by its qualified name under the file's module
(``billing.prorate``, ``billing.orders.Order.total``, ``pkg.mod.outer.<locals>.inner``), or
``module:<module>`` for a module's own statements (everything outside defs and classes); the
module is the file's dotted path from its source root
(:meth:`client.analysis.patch.roles.Layout.module`).

Each symbol is compared by its *own* normalized AST: ``ast.dump`` without positions (so comments
and formatting never count, docstrings do), with nested defs and classes left out — they are
symbols of their own. Decorators belong to the node they decorate, so a symbol's range starts at
its first decorator. A class is changed when its own body statements, bases, keywords or
decorators change, not when only one of its methods does.

When the bytes of a module differ but no symbol's AST does (a comment, blank lines, a mode
change), the change is attributed to the innermost symbols whose lines (decorators included)
hold the changed lines, else to ``module:<module>``: a changed production file always names at
least one changed symbol. Unparsable Python on either side fails closed: ``module:<module>``.
"""

from __future__ import annotations

import ast
import copy
import difflib
from collections.abc import Iterator, Sequence

from patchgate.symbols import Symbol

__all__ = ["compare_module", "defined_names", "definitions", "symbol_table"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_MODULE_KEY = ""  # the module's own statements in a symbol table


def symbol_table(source: bytes | None) -> dict[str, tuple[str, ...]] | None:
    """Local qualified name → normalized dumps of every definition with that name (``""``: module).

    ``None`` source is an absent file (an empty module); unparsable source returns ``None``.
    """
    table: dict[str, list[str]] = {}
    if source is None:
        return {_MODULE_KEY: (_own_dump([]),)}
    try:
        tree = ast.parse(source)
        table[_MODULE_KEY] = [_own_dump(tree.body)]
        for qualname, node in definitions(tree.body, ""):
            table.setdefault(qualname, []).append(_own_dump(node))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # too deep to compare is unparsable too: the caller fails closed
    return {name: tuple(dumps) for name, dumps in table.items()}


def definitions(body: Sequence[ast.stmt], prefix: str = "") -> Iterator[tuple[str, _Def]]:
    """Every def/class under ``body`` (also inside if/try/except/with/for/while/match), with its
    qualname: the one walker that names symbols, so the gate's other readers agree with it."""
    for stmt in body:
        if isinstance(stmt, _DEFS):
            qualname = prefix + stmt.name
            yield qualname, stmt
            inner = qualname + (".<locals>." if not isinstance(stmt, ast.ClassDef) else ".")
            yield from definitions(stmt.body, inner)
        else:
            for block in _blocks(stmt):
                yield from definitions(block, prefix)


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists nested in a compound statement (not defs)."""
    for field in ("body", "orelse", "finalbody"):
        value = getattr(stmt, field, None)
        if isinstance(value, list):
            yield value
    for handler in getattr(stmt, "handlers", []):
        yield handler.body
    for case in getattr(stmt, "cases", []):
        yield case.body


class _StripDefs(ast.NodeTransformer):
    """Replace nested defs/classes by nothing: they are symbols of their own."""

    def _drop(self, node: ast.AST) -> None:
        return None

    visit_FunctionDef = _drop
    visit_AsyncFunctionDef = _drop
    visit_ClassDef = _drop


def _own_dump(node: _Def | list[ast.stmt]) -> str:
    """``ast.dump`` (no positions) of a node or statement list, nested defs and classes removed."""
    stripper = _StripDefs()
    if isinstance(node, list):
        kept = [stripper.visit(copy.deepcopy(s)) for s in node]
        return ast.dump(ast.Module(body=[s for s in kept if s is not None], type_ignores=[]))
    clone = copy.deepcopy(node)
    kept = [stripper.visit(s) for s in clone.body]
    clone.body = [s for s in kept if s is not None]
    return ast.dump(clone)


def defined_names(source: bytes | None) -> frozenset[str] | None:
    """Qualified names defined in ``source`` (``""``: the module's own code); None if unparsable."""
    table = symbol_table(source)
    return None if table is None else frozenset(table)


def compare_module(module: str, before: bytes | None, after: bytes | None) -> set[Symbol]:
    """The changed symbols of ``module`` between two versions of its file (None: absent).

    Never empty when the bytes differ or a side is absent (see the module docstring).
    """
    old, new = symbol_table(before), symbol_table(after)
    if old is None or new is None:
        return {Symbol.make(module, "")}
    changed = {
        Symbol.make(module, name)
        for name in set(old) | set(new)
        if old.get(name, ()) != new.get(name, ())
    }
    if changed:
        return changed
    return _by_lines(module, before or b"", after or b"") or {Symbol.make(module, "")}


def _by_lines(module: str, before: bytes, after: bytes) -> set[Symbol]:
    """Innermost symbols of ``after`` whose lines hold a line that differs from ``before``."""
    old, new = before.splitlines(), after.splitlines()
    lines: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            lines.update(range(j1 + 1, j2 + 1) if j2 > j1 else (j1, j1 + 1))
    try:
        tree = ast.parse(after)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    spans = [
        (min([n.lineno, *(d.lineno for d in n.decorator_list)]), n.end_lineno or n.lineno, name)
        for name, n in definitions(tree.body, "")
    ]
    found: set[Symbol] = set()
    for line in lines:
        inside = [(end - start, name) for start, end, name in spans if start <= line <= end]
        found.add(Symbol.make(module, min(inside)[1] if inside else ""))
    return found
