"""Changed symbols of a patch, from the ASTs of the base and patched files (DESIGN §6 step 2).

A symbol is a function, method or class named by its qualified name under the file's module
(``billing.prorate``, ``billing.orders.Order.total``, ``pkg.mod.outer.<locals>.inner``), or
``module:<module>`` for a module's own statements (everything outside defs and classes).

Each symbol is compared by its *own* normalized AST: ``ast.dump`` without positions (so comments
and formatting never count, docstrings do), with nested defs and classes left out — they are
symbols of their own. Decorators belong to the node they decorate, so a symbol's range starts at
its first decorator. A class is changed when its own body statements, bases, keywords or
decorators change, not when only one of its methods does.

Test and oracle paths, non-``.py`` files and configured exclusions are not production code: they
are returned in ``excluded_paths`` (the receipt lists them; they are never hidden).
"""

from __future__ import annotations

import ast
import copy
import fnmatch
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from client.analysis.diffparse import FilePatch

__all__ = ["ChangedSymbols", "changed_symbols", "is_excluded", "module_name", "symbol_table"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_MODULE_KEY = ""  # the module's own statements in a symbol table


@dataclass(frozen=True)
class ChangedSymbols:
    """Changed production symbols, the changed paths not scored, and every touched path."""

    symbols: tuple[str, ...]
    excluded_paths: tuple[str, ...]
    touched_paths: tuple[str, ...]


def module_name(path: str) -> str:
    """The dotted module of a repo-relative ``.py`` path (``pkg/__init__.py`` → ``pkg``).

    A leading ``src/`` is kept: the module is the file's path from the repository root. A root
    ``__init__.py`` is the module ``__init__``.
    """
    stem = path[:-3] if path.endswith(".py") else path
    parts = stem.split("/")
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_excluded(path: str, *, oracle_paths: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a changed path is not production code (non-.py, test, oracle, or excluded)."""
    if not path.endswith(".py"):
        return True
    base = path.rsplit("/", 1)[-1]
    if base == "conftest.py" or base.startswith("test_") or base.endswith("_test.py"):
        return True
    return any(_under(path, prefix) for prefix in oracle_paths) or any(
        _matches(path, pattern) for pattern in exclude
    )


def _under(path: str, prefix: str) -> bool:
    root = prefix.rstrip("/")
    return bool(root) and (path == root or path.startswith(root + "/"))


def _matches(path: str, pattern: str) -> bool:
    """A configured exclusion: a directory prefix (``gen/``), an exact path, or a glob."""
    if pattern.endswith("/"):
        return _under(path, pattern)
    return path == pattern or fnmatch.fnmatchcase(path, pattern) or _under(path, pattern)


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
        for qualname, node in _definitions(tree.body, ""):
            table.setdefault(qualname, []).append(_own_dump(node))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # too deep to compare is unparsable too: the caller fails closed
    return {name: tuple(dumps) for name, dumps in table.items()}


def _definitions(body: Sequence[ast.stmt], prefix: str) -> Iterator[tuple[str, _Def]]:
    """Every def/class under ``body`` (also inside if/try/with/for/while), with its qualname."""
    for stmt in body:
        if isinstance(stmt, _DEFS):
            qualname = prefix + stmt.name
            yield qualname, stmt
            inner = qualname + (".<locals>." if not isinstance(stmt, ast.ClassDef) else ".")
            yield from _definitions(stmt.body, inner)
        else:
            for block in _blocks(stmt):
                yield from _definitions(block, prefix)


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


def changed_symbols(
    base_files: Mapping[str, bytes | None],
    patched_files: Mapping[str, bytes | None],
    patches: Sequence[FilePatch],
    *,
    oracle_paths: Sequence[str],
    exclude: Sequence[str],
) -> ChangedSymbols:
    """The changed production symbols of ``patches`` (see the module docstring for the rules).

    ``base_files``/``patched_files`` map each touched path to its bytes (``None``: absent). A side
    whose path is excluded counts as absent, so a file renamed into ``tests/`` removes the symbols
    of its old module. Unparsable Python on either side fails closed: ``module:<module>``.
    """
    changed: set[str] = set()
    excluded: set[str] = set()
    touched: set[str] = set()
    for patch in patches:
        sides: list[str | None] = []
        for path in (patch.old_path, patch.new_path):
            scored = path
            if path is not None:
                touched.add(path)
                if is_excluded(path, oracle_paths=oracle_paths, exclude=exclude):
                    excluded.add(path)
                    scored = None
            sides.append(scored)
        old, new = sides
        if old is None and new is None:
            continue
        changed.update(_compare(old, new, base_files, patched_files))
    return ChangedSymbols(
        symbols=tuple(sorted(changed)),
        excluded_paths=tuple(sorted(excluded)),
        touched_paths=tuple(sorted(touched)),
    )


def _compare(
    old: str | None,
    new: str | None,
    base_files: Mapping[str, bytes | None],
    patched_files: Mapping[str, bytes | None],
) -> set[str]:
    """Changed symbols between base file ``old`` and patched file ``new`` (either may be absent)."""
    before = symbol_table(base_files.get(old) if old is not None else None)
    after = symbol_table(patched_files.get(new) if new is not None else None)
    old_module = module_name(old) if old is not None else None
    new_module = module_name(new) if new is not None else None
    if before is None or after is None:
        return {f"module:{m}" for m in (old_module, new_module) if m is not None}
    changed: set[str] = set()
    for name in sorted(set(before) | set(after)):
        if before.get(name, ()) == after.get(name, ()):
            continue
        # Compared under the new module; a symbol gone from the patched file is reported where
        # it lived (the old module of a rename).
        module = new_module if name in after and new_module is not None else old_module
        if module is None:  # pragma: no cover - one side is always present
            continue
        changed.add(f"module:{module}" if name == _MODULE_KEY else f"{module}.{name}")
    return changed
