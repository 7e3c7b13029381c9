"""The parameter list of a parametrized property: part of its predicate (issue 24).

A property may name a parametrized test function; its cases are the property. What each case
checks is the test's body *and* its parameters, so the predicate hash covers both. The function's
own decorators are already in its source text; what lies outside it is collected here, as source
text, in a fixed order:

* the ``@pytest.mark.parametrize`` decorators of its classes, and every ``pytestmark = ...``
  assignment of the module and of its classes that mentions ``parametrize``;
* the module-level (or class-level) statements that bind a name those parametrize calls use
  (``CASES = [...]``, ``def cases(): ...``, ``from data import CASES``), followed transitively
  (``CASES = BASE + [...]`` brings ``BASE``'s statement too), innermost scope first.

A name imported from another module is pinned by its import line only: that module is oracle
(under an oracle path) or production source, and either is judged as such when a patch touches
it. Indirect parametrization through ``@pytest.fixture(params=...)`` is not followed (the
fixture's module is harness: a ``conftest.py`` moved by a patch is ``R7`` already).

Fixture data reaching the test through its parameters is judged by the classifier as fixture
content (``fixture_flow.parametrized_names``): an equality against it stays ``fixture_eq``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from client.analysis.classify.astwalk import dotted

__all__ = ["node_text", "parameter_nodes"]

_MAX_STATEMENTS = 256  # a parameter list that pulls in more is hashed with what it pulled so far
_Func = ast.FunctionDef | ast.AsyncFunctionDef


def _is_parametrize(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and dotted(n.func).endswith("parametrize") for n in ast.walk(node)
    )


def _marks(scope: ast.AST) -> list[ast.AST]:
    """A class's parametrize decorators; a scope's ``pytestmark`` assignments that parametrize."""
    found: list[ast.AST] = []
    if isinstance(scope, ast.ClassDef):
        found += [d for d in scope.decorator_list if _is_parametrize(d)]
    for stmt in getattr(scope, "body", []):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if isinstance(stmt, ast.AnnAssign):
            targets = [stmt.target]
        if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets) and (
            _is_parametrize(stmt)
        ):
            found.append(stmt)
    return found


def _bound(stmt: ast.stmt) -> Iterable[str]:
    """The names a top-level statement binds."""
    if isinstance(stmt, _Func | ast.ClassDef):
        yield stmt.name
    elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            yield from (n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    elif isinstance(stmt, ast.Import | ast.ImportFrom):
        for alias in stmt.names:
            yield (alias.asname or alias.name).split(".", 1)[0]


def _used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _arguments_use(node: ast.AST) -> set[str]:
    """The names the arguments of every parametrize call in ``node`` use (not the callee: the
    ``pytest`` of ``pytest.mark.parametrize`` is no parameter)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and dotted(n.func).endswith("parametrize"):
            for arg in [*n.args, *(k.value for k in n.keywords)]:
                out |= _used(arg)
    return out


def _statement_uses(stmt: ast.stmt) -> set[str]:
    """The names a kept statement's value depends on (an import depends on nothing here)."""
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return set()
    if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        return _used(stmt.value) if stmt.value is not None else set()
    return _used(stmt) - set(_bound(stmt))


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def parameter_nodes(tree: ast.Module, func: _Func, scopes: Sequence[ast.AST]) -> list[ast.AST]:
    """The nodes outside ``func`` that make its parameter list (see the module docstring), in
    source order per kind; empty when ``func`` is not parametrized from outside its own text."""
    marks = [m for scope in scopes for m in _marks(scope)]
    calls = [d for d in func.decorator_list if _is_parametrize(d)] + marks
    if not calls:
        return []
    where: list[dict[str, list[ast.stmt]]] = []
    for scope in reversed(scopes):  # innermost first
        table: dict[str, list[ast.stmt]] = {}
        for stmt in getattr(scope, "body", []):
            if stmt is func:
                continue
            for name in _bound(stmt):
                table.setdefault(name, []).append(stmt)
        where.append(table)
    wanted = set().union(*(_arguments_use(c) for c in calls))
    kept: dict[int, ast.stmt] = {}
    seen: set[str] = set()
    while wanted - seen and len(kept) < _MAX_STATEMENTS:
        name = sorted(wanted - seen)[0]
        seen.add(name)
        for table in where:
            if name in table:
                for stmt in table[name]:
                    if id(stmt) not in kept:
                        wanted |= _statement_uses(stmt)
                    kept[id(stmt)] = stmt
                break
    return [*marks, *sorted(kept.values(), key=_position)]


def node_text(with_ends: Sequence[str], node: ast.AST) -> str:
    """The exact source text of a statement or expression node, as ``ast.get_source_segment``
    gives it, from the file's lines with their ends kept."""
    first = getattr(node, "lineno", 1) - 1
    last = (getattr(node, "end_lineno", None) or first + 1) - 1
    col, end = getattr(node, "col_offset", 0), getattr(node, "end_col_offset", None) or 0
    if first == last:
        return with_ends[first].encode()[col:end].decode()
    head = with_ends[first].encode()[col:].decode()
    return "".join([head, *with_ends[first + 1 : last], with_ends[last].encode()[:end].decode()])
