"""Code that can watch itself being mutated: what a patch adds that would let the changed code tell
a mutant run from a normal one.

A mutant is the patched tree with one site of one symbol changed, run with the same properties in
a fresh sandbox. Code that reads its own source or code object, its process (argv, environment,
tracer, frames, loaded modules) or runs code it builds at run time can notice the change and
raise — and a raise in a mutant run counts as a kill, so a property that checks nothing would
earn credit. No reading of a test can rule that out, so the gate refuses the mutation evidence of
a patch that adds any of these to a Python file (the markers below, counted per file: a marker
the base file already had as often is not "added"); credit then needs a person.

This is a deny-list of the direct ways in, not a proof: code that hashes every file under its
package through plain ``open``/``os.walk`` calls with computed names is not caught here (see
docs/mutation.md). Pure ``ast`` work, no I/O.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass

__all__ = ["Marker", "introspection_added", "markers_of"]

#: Names and attributes that read code, frames, the process or the import system.
_NAMES = frozenset({
    "__code__", "co_code", "co_lines", "co_positions", "co_consts", "__file__", "__spec__",
    "__loader__", "__cached__", "__globals__", "__builtins__", "__subclasses__", "__closure__",
    "__getattribute__", "__import__", "_getframe", "f_code", "f_back", "f_globals", "f_locals",
    "f_lineno", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "tb_frame", "settrace",
    "gettrace", "setprofile", "getprofile", "monitoring", "argv", "orig_argv", "environ",
    "environb", "getenv", "getsource", "getsourcelines", "getsourcefile", "getfile",
    "currentframe", "addaudithook", "PYTEST_CURRENT_TEST",
})  # fmt: skip
#: Builtins that run or expose code built at run time (as plain names only: ``re.compile`` is fine).
_BUILTINS = frozenset({"eval", "exec", "compile", "globals", "vars", "locals", "breakpoint"})
#: Modules whose import alone gives code or process introspection.
_MODULES = frozenset({
    "inspect", "dis", "marshal", "linecache", "ctypes", "gc", "importlib", "pytest", "_pytest",
    "tracemalloc", "tokenize", "ast", "faulthandler", "traceback", "pdb", "bdb", "code", "codeop",
    "builtins", "sysconfig", "site", "zipimport", "pkgutil", "runpy", "trace", "cProfile",
    "profile", "_testcapi", "signal",
})  # fmt: skip
_SYS_ATTRS = frozenset({"modules", "meta_path", "path_hooks", "path_importer_cache"})
_DYNAMIC_ATTR = frozenset({"getattr", "setattr", "delattr", "hasattr", "attrgetter"})


@dataclass(frozen=True)
class Marker:
    """One construct of a file: ``what`` (e.g. ``name __file__``) at ``line``."""

    what: str
    line: int


def markers_of(source: bytes) -> list[Marker] | None:
    """Every introspection marker of a Python source, by line; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    sys_names = {"sys"} | {
        alias.asname or "sys"
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "sys"
    }
    found = [
        Marker(what, getattr(node, "lineno", 0))
        for node in ast.walk(tree)
        for what in _marks(node, sys_names)
    ]
    return sorted(found, key=lambda m: m.line)  # in source order, for the reason a person reads


def _marks(node: ast.AST, sys_names: set[str]) -> list[str]:
    if isinstance(node, ast.Name) and (node.id in _NAMES or node.id in _BUILTINS):
        return [f"name {node.id}"]
    if isinstance(node, ast.Attribute):
        if node.attr in _NAMES:
            return [f"attribute .{node.attr}"]
        value = node.value
        if node.attr in _SYS_ATTRS and isinstance(value, ast.Name) and value.id in sys_names:
            return [f"attribute sys.{node.attr}"]
        return []
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import_marks(node)
    if isinstance(node, ast.Call) and _called(node) in _DYNAMIC_ATTR:
        name = node.args[1] if len(node.args) > 1 else (node.args[0] if node.args else None)
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return [f"call {_called(node)} with a computed name"]
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _string_marks(node.value)
    return []


def _called(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _import_marks(node: ast.Import | ast.ImportFrom) -> list[str]:
    out: list[str] = []
    if isinstance(node, ast.ImportFrom) and node.level:
        return []  # a module of the package itself, not the standard library
    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    for module in modules:
        if module.split(".", 1)[0] in _MODULES:
            out.append(f"import {module}")
    if isinstance(node, ast.ImportFrom) and node.module == "sys":
        out.extend(f"import sys.{a.name}" for a in node.names if a.name in _NAMES | _SYS_ATTRS)
    return out


def _string_marks(text: str) -> list[str]:
    low = text.lower()
    if text in _NAMES or text in _SYS_ATTRS:
        return [f"string {text!r}"]
    if "patchgate" in low or "/proc/" in low or "__pycache__" in low:
        return [f"string {text[:40]!r}"]
    if low.endswith((".py", ".pyc", ".pyo")):
        return [f"string {text[:40]!r}"]
    return []


def introspection_added(base: bytes | None, patched: bytes) -> list[Marker]:
    """The markers of ``patched`` beyond what ``base`` (None: a new file) already had, by kind;
    a patched file that does not parse is one marker (nothing can be said of it)."""
    after = markers_of(patched)
    if after is None:
        return [Marker("a file that does not parse", 1)]
    before = Counter(m.what for m in (markers_of(base) or [])) if base is not None else Counter()
    out: list[Marker] = []
    seen: Counter[str] = Counter()
    for marker in after:
        seen[marker.what] += 1
        if seen[marker.what] > before[marker.what]:
            out.append(marker)
    return out
