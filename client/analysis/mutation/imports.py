"""Which files a property's runs can import, read statically: where an introspection marker counts
(issue 20 item 6). Never from the subject's tracer: it reports what it likes.

A property's run is its batch (:mod:`patchgate.batching`): one invocation of every property of the
suite that shares its command prefix. The judge loads the test files the node ids name and the
``conftest.py`` of every directory from the root down to each (the pinned property files and the
harness come from the base tree), plus the plugins the layout knows (``-p``, ``addopts``,
``pytest_plugins``) and any ``sitecustomize``/``usercustomize``; the subject loads the production
modules they import. The closure is those files and everything they import statically,
transitively, each file read in the base **and** the patched tree (more is safe):

* ``import a.b`` / ``from a.b import c``: ``a/__init__.py``, ``a/b/__init__.py`` or ``a/b.py``,
  and ``a/b/c.py`` (or that package) when there is one, looked up in the repo root and every source
  root, and for a file that is not production code (a test's helper) also in every directory above
  it (pytest puts a test's base directory on ``sys.path``); every match counts;
* a relative import resolves from the file's directory; ``from a import *`` counts every module of
  the package ``a``; every file counts the ``__init__.py`` of each directory above it;
* ``importlib.import_module``/``__import__``/``pytest.importorskip`` with a constant name, and the
  constants of ``pytest_plugins``, are imports of those names.

The closure is **open** (the runs may import every file) when any file of it loads code by a name
or path a reader cannot see: a non-constant or relative name given to one of those calls, one of
them under another name or not called, a loader (``spec_from_file_location``,
``module_from_spec``, ``exec_module``, ``SourceFileLoader``, ``runpy``, ``entry_points``,
``walk_packages``, …), ``eval``/``exec``/``compile``, ``sys.path``/``meta_path``/``path_hooks`` or a
package's ``__path__``, a fresh interpreter (``subprocess``, ``multiprocessing``, ``os.system``, …);
and when a file of it does not parse or is (or is reached through) a link, a node id names no
file of the trees, or a command names no node id at all. No file is imported or executed.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from client.analysis.patch.roles import Layout
from patchgate.batching import node_arguments

__all__ = ["Closure", "ImportGraph"]

_BY_NAME = frozenset({"import_module", "__import__", "importorskip"})
_LOADERS = frozenset({
    "spec_from_file_location", "spec_from_loader", "module_from_spec", "exec_module",
    "load_module", "SourceFileLoader", "SourcelessFileLoader", "ExtensionFileLoader", "FileFinder",
    "run_path", "run_module", "load_source", "load_compiled", "load_package", "walk_packages",
    "resolve_name", "entry_points", "zipimporter", "path_hooks", "meta_path", "__path__",
    "ProcessPoolExecutor", "create_subprocess_exec", "create_subprocess_shell", "get_code",
})  # fmt: skip
_RUNTIME = frozenset({"eval", "exec", "compile"})
_SPAWN_MODULES = frozenset(
    {"runpy", "imp", "zipimport", "subprocess", "_posixsubprocess", "multiprocessing", "pty"}
)
_OS_SPAWN = frozenset({
    "system", "popen", "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp",
    "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
    "spawnvpe", "posix_spawn", "posix_spawnp",
})  # fmt: skip
_ALWAYS = ("sitecustomize.py", "usercustomize.py")


@dataclass(frozen=True)
class Closure:
    """The files a batch's runs can import; ``open`` (non-empty) says why they may import any."""

    files: frozenset[str]
    open: str = ""

    def reaches(self, path: str) -> bool:
        """Whether a run of the batch can import the file ``path``."""
        return bool(self.open) or path in self.files


@dataclass(frozen=True)
class _Import:
    module: str  # dotted, without the leading dots
    level: int  # 0: absolute
    names: tuple[str, ...]  # what ``from module import ...`` names ("*" for a star)


@dataclass(frozen=True)
class _Scan:
    imports: tuple[_Import, ...]
    dynamic: str  # "" or "line N what"


class ImportGraph:
    """The import closures of one check's batches, over the base and the patched tree (each file
    read and parsed once, however many batches reach it)."""

    def __init__(self, layout: Layout, base: Path, patched: Path) -> None:
        self._layout = layout
        self._trees = (base, patched)
        self._scans: dict[str, _Scan | str] = {}
        self._roots = tuple(dict.fromkeys(["", *(r.strip("/") for r in layout.source_roots)]))

    def closure(
        self, commands: Iterable[Sequence[str]], allowed: Sequence[Sequence[str]]
    ) -> Closure:
        """The closure of one batch: the argv of each of its properties, under the signed allowed
        command prefixes."""
        start: list[str] = []
        for argv in commands:
            found = self._command_files(argv, allowed)
            if isinstance(found, str):
                return Closure(frozenset(), found)
            start.extend(found)
        for root in self._roots:
            start.extend(self._existing(posixpath.join(root, n) if root else n) for n in _ALWAYS)
        for plugin in sorted(self._layout.plugins):
            start.extend(self._module_files(plugin, self._roots))
        return self._walk([p for p in start if p])

    def _command_files(
        self, argv: Sequence[str], allowed: Sequence[Sequence[str]]
    ) -> list[str] | str:
        nodes = node_arguments(argv, allowed)
        if not nodes:
            return f"the command {' '.join(argv)!r} names no test file"
        files: list[str] = []
        for node in nodes:
            rel = posixpath.normpath(node.split("::", 1)[0].split("[", 1)[0])
            if rel.startswith(("/", "../")) or rel == "..":
                return f"the node id {node!r} names a file outside the tree"
            if rel != "." and self._is_file(rel):
                files.append(rel)
            elif rel == "." or self._is_dir(rel):
                files.extend(self._python_under("" if rel == "." else rel))
            else:
                return f"the node id {node!r} names no file of the tree"
            files.extend(self._conftests(rel))
        return files

    def _walk(self, start: list[str]) -> Closure:
        seen: set[str] = set()
        todo = list(start)
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            scan = self._scan(path)
            if isinstance(scan, str):
                return Closure(frozenset(seen), scan)
            if scan.dynamic:
                return Closure(frozenset(seen), f"{path}:{scan.dynamic}")
            todo.extend(self._inits_above(path))
            for imp in scan.imports:
                todo.extend(self._resolve(path, imp))
        return Closure(frozenset(seen))

    # -- reading the trees ------------------------------------------------------------------

    def _is_file(self, rel: str) -> bool:
        return any((t / rel).is_file() or (t / rel).is_symlink() for t in self._trees)

    def _is_dir(self, rel: str) -> bool:
        return any((t / rel).is_dir() for t in self._trees)

    def _existing(self, rel: str) -> str:
        return rel if self._is_file(rel) else ""

    def _python_under(self, rel: str) -> Iterator[str]:
        for tree in self._trees:
            top = tree / rel if rel else tree
            for path in sorted(top.rglob("*.py")):
                yield path.relative_to(tree).as_posix()

    def _scan(self, rel: str) -> _Scan | str:
        if rel not in self._scans:
            self._scans[rel] = self._read_scan(rel)
        return self._scans[rel]

    def _read_scan(self, rel: str) -> _Scan | str:
        imports: list[_Import] = []
        for tree in self._trees:
            path = tree / rel
            if path.is_symlink() or path.resolve() != tree.resolve() / rel:
                return f"{rel} is a link or reached through one"
            if not path.exists():
                continue
            if not path.is_file():
                return f"{rel} is not a regular file"
            try:
                parsed = ast.parse(path.read_bytes())
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                return f"{rel} does not parse"
            found = _scan_tree(parsed)
            if found.dynamic:
                return _Scan((), found.dynamic)
            imports.extend(found.imports)
        return _Scan(tuple(imports), "")

    # -- resolving ----------------------------------------------------------------------------

    def _conftests(self, rel: str) -> Iterator[str]:
        """``conftest.py`` of every directory from the root down to ``rel`` (a file or dir)."""
        parts = rel.split("/") if rel not in ("", ".") else []
        if parts and self._is_file(rel):
            parts = parts[:-1]
        for i in range(len(parts) + 1):
            found = self._existing(posixpath.join(*parts[:i], "conftest.py"))
            if found:
                yield found

    def _inits_above(self, rel: str) -> Iterator[str]:
        parts = rel.split("/")[:-1]
        for i in range(len(parts), 0, -1):
            found = self._existing(posixpath.join(*parts[:i], "__init__.py"))
            if found:
                yield found

    def _search(self, rel: str) -> tuple[str, ...]:
        if self._layout.role(rel) in ("source", "excluded"):
            return self._roots
        parts = rel.split("/")[:-1]
        above = ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]
        return tuple(dict.fromkeys([*above, *self._roots]))

    def _resolve(self, rel: str, imp: _Import) -> list[str]:
        if imp.level:
            parts = rel.split("/")[:-1]
            if imp.level - 1 > len(parts):
                return []
            package = "/".join(parts[: len(parts) - (imp.level - 1)])
            dirs: tuple[str, ...] = (package,)
            if not imp.module:
                return self._from_names(package, imp.names)
        else:
            dirs = self._search(rel)
        out: list[str] = []
        for d in dirs:
            found = list(self._in_dir(d, imp.module))
            out.extend(found)
            if found and imp.names:
                target = posixpath.join(d, *imp.module.split("."))
                out.extend(self._from_names(target, imp.names))
        return out

    def _module_files(self, module: str, dirs: Iterable[str]) -> list[str]:
        return [f for d in dirs for f in self._in_dir(d, module)]

    def _in_dir(self, d: str, module: str) -> Iterator[str]:
        """The files importing ``module`` runs when ``d`` is on ``sys.path``."""
        parts = [p for p in module.split(".") if p]
        for i in range(1, len(parts) + 1):
            stem = posixpath.join(d, *parts[:i]) if d else posixpath.join(*parts[:i])
            init, plain = self._existing(stem + "/__init__.py"), self._existing(stem + ".py")
            if init:
                yield init
            if plain and i == len(parts):
                yield plain
            if not init and not self._is_dir(stem):
                return

    def _from_names(self, package: str, names: tuple[str, ...]) -> list[str]:
        """``from package import names``: each name that is a module of the directory."""
        out: list[str] = []
        if "*" in names:
            for tree in self._trees:
                top = tree / package if package else tree
                if top.is_dir():
                    out.extend(
                        p.relative_to(tree).as_posix()
                        for p in sorted(top.glob("*.py")) + sorted(top.glob("*/__init__.py"))
                    )
        for name in names:
            if name != "*":
                out.extend(self._in_dir(package, name))
        init = self._existing(posixpath.join(package, "__init__.py") if package else "__init__.py")
        return [*out, *([init] if init else [])]


def _scan_tree(tree: ast.Module) -> _Scan:
    imports: list[_Import] = []
    called: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _func_name(node) in _BY_NAME:
            called.add(id(node.func))
            found = _constant_import(node)
            if found is None:
                return _Scan((), f"{node.lineno} {_func_name(node)} of a name not written out")
            imports.append(found)
    for node in ast.walk(tree):
        why = _dynamic(node, called)
        if why:
            return _Scan((), f"{getattr(node, 'lineno', 0)} {why}")
        if isinstance(node, ast.Import):
            imports.extend(_Import(a.name, 0, ()) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names)
            imports.append(_Import(node.module or "", node.level, names))
        else:
            plugins = _pytest_plugins(node)
            if plugins is None:
                return _Scan((), f"{getattr(node, 'lineno', 0)} pytest_plugins not written out")
            imports.extend(_Import(p, 0, ()) for p in plugins)
    return _Scan(tuple(imports), "")


def _func_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _constant_import(call: ast.Call) -> _Import | None:
    """``import_module("a.b")``, ``__import__("a", fromlist=["b"])``: the import; None when the
    name is not a constant absolute name."""
    if not call.args or not isinstance(call.args[0], ast.Constant):
        return None
    name = call.args[0].value
    if not isinstance(name, str) or not name or name.startswith("."):
        return None
    fromlist: tuple[str, ...] = ()
    if _func_name(call) == "__import__":
        value = call.args[3] if len(call.args) > 3 else None
        value = next((k.value for k in call.keywords if k.arg == "fromlist"), value)
        if len(call.args) > 4 or any(k.arg in ("level", None) for k in call.keywords):
            return None
        if value is not None:
            names = _strings(value)
            if names is None:
                return None
            fromlist = tuple(names)
    return _Import(name, 0, fromlist)


def _strings(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out = [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
        return out if len(out) == len(node.elts) else None
    return None


def _pytest_plugins(node: ast.AST) -> list[str] | None:
    """The constants of a ``pytest_plugins = ...`` assignment ([] for any other node)."""
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return []
    if not any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets):
        return []
    return _strings(value)


def _dynamic(node: ast.AST, called: set[int]) -> str:
    """Why ``node`` can load code the reader cannot follow ("" when it cannot)."""
    if isinstance(node, ast.Name):
        if node.id in _BY_NAME and id(node) not in called:
            return f"{node.id} used as a value"
        if node.id in _RUNTIME or node.id in _LOADERS:
            return f"name {node.id}"
    elif isinstance(node, ast.Attribute):
        if node.attr in _BY_NAME and id(node) not in called:
            return f"{node.attr} used as a value"
        if node.attr in _LOADERS:
            return f"attribute .{node.attr}"
        owner = node.value.id if isinstance(node.value, ast.Name) else ""
        if (owner == "sys" and node.attr == "path") or (owner == "os" and node.attr in _OS_SPAWN):
            return f"attribute {owner}.{node.attr}"
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        return _dynamic_import(node)
    return ""


def _dynamic_import(node: ast.Import | ast.ImportFrom) -> str:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] in _SPAWN_MODULES or alias.name in (
                "importlib.util",
                "importlib.machinery",
            ):
                return f"import {alias.name}"
            if alias.name == "sys" and alias.asname:
                return "import sys under another name"
            if alias.name == "os" and alias.asname:
                return "import os under another name"
        return ""
    module = node.module or ""
    if not node.level and module.split(".")[0] in _SPAWN_MODULES:
        return f"import {module}"
    for alias in node.names:
        renamed = alias.asname and alias.asname != alias.name
        if alias.name in _BY_NAME and renamed:
            return f"import {alias.name} as {alias.asname}"
        if alias.name in _LOADERS or alias.name in _RUNTIME:
            return f"import {module}.{alias.name}"
        if module == "sys" and alias.name in ("path", "*"):
            return f"import sys.{alias.name}"
        if module == "os" and (alias.name in _OS_SPAWN or alias.name == "*"):
            return f"import os.{alias.name}"
    return ""
