"""Code that can watch itself being mutated: what a patch adds that would let the changed code tell
a mutant run from a control run.

Mutation v2 (docs/mutation.md): a mutant is served to the subject **from memory** (the files on disk
stay the patched ones), hidden **controls** (the unmutated code, served through the same in-memory
loader) run at random positions and a control that does not pass voids the evidence, every variant
gets the same environment, argv and files, the subject's writable places are reset between
variants, and a raise, exit or crash of the subject is never a kill. So what a variant can read
from outside itself is the same for a mutant and a control, and telling them apart pays only when
the mutant can then make the property's own predicate fail. What still tells them apart, and is a
marker here:

* **code objects and frames**: ``__code__`` and every ``co_*`` attribute, ``_getframe``,
  ``_current_frames``, ``currentframe`` and the other frame readers, ``f_*``, ``gi_``/``cr_``/
  ``ag_`` frames and code, a traceback's ``tb_frame``/``tb_lasti``/``tb_lineno``/``tb_next``, a
  task's ``get_stack``/``print_stack``, and the modules that reach them (``inspect``, ``dis``,
  ``marshal``, ``gc``, ``traceback`` — its formatted lines carry the code's column positions —,
  ``faulthandler``, ``ctypes``, ``tracemalloc``, ``_testcapi``); ``sys.getrefcount`` (a changed
  constant changes a count); a string ``"/proc/"`` (``/proc/self/mem`` is the process's memory);
* **tracing**: ``settrace``/``setprofile`` (and the getters), ``sys.monitoring``,
  ``addaudithook`` (an audit hook sees the loader's ``compile``), ``pdb``/``bdb``/``trace``/
  ``cProfile``/``profile``, ``breakpoint``;
* **code built at run time**: ``eval``, ``exec``, ``compile``, ``code``/``codeop``, and the
  namespaces and attribute readers through which a computed name reaches those builtins or a code
  object: ``globals``/``vars``/``locals``, ``__globals__``, ``__builtins__``, ``builtins``,
  ``__getattribute__``, ``__subclasses__``, ``getattr``/``setattr``/``delattr``/``hasattr``/
  ``attrgetter``/``methodcaller`` with a computed name or passed as a value, a type's
  ``__dict__`` (``type(f).__dict__``: the code descriptor by a computed key), a string equal to a
  marker name;
* **the import system and the loader**: ``__import__``, ``__loader__``/``__spec__`` (the same
  in-memory loader serves mutant and control; it keeps no source after loading, but it is the one
  object that knows which variant it served, so its handle stays a marker), ``sys.modules``/
  ``meta_path``/``path_hooks``/``path_importer_cache``, a loader's ``get_code``/``get_source``/
  ``exec_module``/``load_module``, ``module_from_spec``, ``spec_from_file_location``/
  ``spec_from_loader``, ``SourceFileLoader``/``SourcelessFileLoader``/``FileFinder``/
  ``PathFinder``, ``importlib.reload``, ``runpy``, ``zipimport``, ``imp``: each loads a second copy
  of a module, and a copy loaded from disk is the control beside the mutant;
* **a fresh interpreter**: ``subprocess``, ``multiprocessing``, ``pty``, ``ProcessPoolExecutor``,
  ``asyncio``'s ``create_subprocess_*``, ``os.system``/``popen``/``exec*``/``spawn*``/
  ``posix_spawn*``: a child Python imports the files on disk, i.e. the control, so the mutant can
  compare itself with it.

No longer markers (they read what a mutant and a control share): the own file (``open``,
``__file__``, ``__cached__``, a string naming a ``.py`` file, ``linecache``,
``tokenize``, ``ast`` of it) reads the patched bytes on disk in both; the environment
(``os.environ``, ``getenv``), ``sys.argv``/``orig_argv``, ``PYTEST_CURRENT_TEST`` and the gate's
names are the same for every variant; ``importlib`` (by names it resolves through the same
loader), ``pkgutil``, ``sysconfig``, ``site``, ``pytest`` (the judge's runner, not the subject's)
and ``signal`` (a handler's frame is read only through the frame markers above) tell nothing;
``__closure__`` hands out cell values, the same for both (reading a nested function's code needs
``__code__``). A patch that adds ``os.environ.get("DEBUG")`` keeps its mutation evidence.

This is a deny-list of the direct ways in, not a proof: a descriptor reached through an object
that is not visibly a type (``vars`` is a marker, ``mro()[0].__dict__`` is not), or timing, is
not caught here (see docs/mutation.md). Where a marker counts (only against symbols whose
covering properties' runs import its file) is :mod:`client.analysis.mutation.imports`. Pure
``ast`` work, no I/O.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass

__all__ = ["Marker", "introspection_added", "markers_of"]

_CODE = frozenset({
    "__code__", "co_argcount", "co_cellvars", "co_code", "co_consts", "co_exceptiontable",
    "co_filename", "co_firstlineno", "co_flags", "co_freevars", "co_kwonlyargcount", "co_lines",
    "co_linetable", "co_lnotab", "co_name", "co_names", "co_nlocals", "co_positions",
    "co_posonlyargcount", "co_qualname", "co_stacksize", "co_varnames", "_co_code_adaptive",
})  # fmt: skip
_FRAMES = frozenset({
    "_getframe", "_current_frames", "_getframemodulename", "currentframe", "getouterframes",
    "getinnerframes", "getframeinfo", "f_code", "f_back", "f_globals", "f_locals", "f_builtins",
    "f_lineno", "f_lasti", "f_trace", "f_trace_lines", "f_trace_opcodes", "gi_frame", "gi_code",
    "cr_frame", "cr_code", "ag_frame", "ag_code", "tb_frame", "tb_lasti", "tb_lineno", "tb_next",
    "get_stack", "print_stack", "getrefcount",
})  # fmt: skip
_TRACING = frozenset({
    "settrace", "gettrace", "setprofile", "getprofile", "settrace_all_threads",
    "setprofile_all_threads", "call_tracing", "monitoring", "addaudithook",
})  # fmt: skip
_IMPORT_SYSTEM = frozenset({
    "__loader__", "__spec__", "__builtins__", "__globals__", "__subclasses__", "__getattribute__",
    "__import__", "get_code", "get_source", "exec_module", "load_module", "module_from_spec",
    "spec_from_file_location", "spec_from_loader", "SourceFileLoader", "SourcelessFileLoader",
    "FileFinder", "PathFinder", "ProcessPoolExecutor", "create_subprocess_exec",
    "create_subprocess_shell",
})  # fmt: skip
#: Names and attributes that reach code objects, frames, tracers, or the import system's loaders.
_NAMES = _CODE | _FRAMES | _TRACING | _IMPORT_SYSTEM
#: Builtins that run code built at run time or hand out namespaces a computed key reads (as plain
#: names only: ``re.compile`` is fine).
_BUILTINS = frozenset({"eval", "exec", "compile", "globals", "vars", "locals", "breakpoint"})
#: Modules whose import alone reaches code, frames, tracing, a second copy of a module or a fresh
#: interpreter.
_MODULES = frozenset({
    "inspect", "dis", "marshal", "ctypes", "_ctypes", "cffi", "gc", "faulthandler", "traceback",
    "tracemalloc", "pdb", "bdb", "code", "codeop", "builtins", "runpy", "zipimport", "imp",
    "trace", "cProfile", "profile", "_lsprof", "_testcapi", "_testinternalcapi", "subprocess",
    "_posixsubprocess", "multiprocessing", "pty", "_xxsubinterpreters", "_interpreters",
})  # fmt: skip
_OS_SPAWN = frozenset({
    "system", "popen", "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp",
    "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
    "spawnvpe", "posix_spawn", "posix_spawnp",
})  # fmt: skip
#: Attributes that are markers only of the named module (``sys.modules``; ``cfg.reload`` is fine).
_MODULE_ATTRS: dict[str, frozenset[str]] = {
    "sys": frozenset({"modules", "meta_path", "path_hooks", "path_importer_cache"}),
    "os": _OS_SPAWN,
    "importlib": frozenset({"reload"}),
}
_DYNAMIC_ATTR = frozenset(
    {"getattr", "setattr", "delattr", "hasattr", "attrgetter", "methodcaller"}
)
#: Types whose ``__dict__`` holds the descriptors of code, frames and tracebacks.
_CODE_TYPES = frozenset({
    "FunctionType", "LambdaType", "MethodType", "CodeType", "FrameType", "GeneratorType",
    "CoroutineType", "AsyncGeneratorType", "TracebackType",
})  # fmt: skip


@dataclass(frozen=True)
class Marker:
    """One construct of a file: ``what`` (e.g. ``name __code__``) at ``line``."""

    what: str
    line: int


def markers_of(source: bytes) -> list[Marker] | None:
    """Every introspection marker of a Python source, by line; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    aliases = _module_aliases(tree)
    called = {
        id(node.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _called(node) in _DYNAMIC_ATTR
    }
    found = [
        Marker(what, getattr(node, "lineno", 0))
        for node in ast.walk(tree)
        for what in _marks(node, aliases, called)
    ]
    return sorted(found, key=lambda m: m.line)  # in source order, for the reason a person reads


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> module, for the modules of :data:`_MODULE_ATTRS` (``import sys as s``)."""
    out = {name: name for name in _MODULE_ATTRS}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in _MODULE_ATTRS:
                    out[alias.asname or alias.name] = alias.name
    return out


def _marks(node: ast.AST, aliases: dict[str, str], called: set[int]) -> list[str]:
    if isinstance(node, ast.Name) and (node.id in _NAMES or node.id in _BUILTINS):
        return [f"name {node.id}"]
    if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in called:
        word = node.id if isinstance(node, ast.Name) else node.attr
        if word in _DYNAMIC_ATTR:  # ``reduce(getattr, parts, f)``: a name no reader sees
            return [f"{word} used as a value"]
    if isinstance(node, ast.Attribute):
        return _attribute_marks(node, aliases)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import_marks(node)
    if isinstance(node, ast.Call) and _called(node) in _DYNAMIC_ATTR:
        return _dynamic_attr_marks(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _string_marks(node.value)
    return []


def _dynamic_attr_marks(call: ast.Call) -> list[str]:
    """``getattr(x, name)``, ``attrgetter(name)``, ``methodcaller(name)``: a marker unless the
    name is a string constant (a constant that is a marker name is one as a string)."""
    args = call.args
    if _called(call) == "methodcaller" or len(args) < 2:
        name = args[0] if args else None
    else:
        name = args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return []
    return [f"call {_called(call)} with a computed name"]


def _attribute_marks(node: ast.Attribute, aliases: dict[str, str]) -> list[str]:
    if node.attr in _NAMES:
        return [f"attribute .{node.attr}"]
    value = node.value
    if node.attr == "__dict__" and _is_a_type(value):
        return ["attribute __dict__ of a type"]  # ``type(f).__dict__[k].__get__(f)``
    module = None
    if isinstance(value, ast.Name):
        module = aliases.get(value.id)
    elif isinstance(value, ast.Attribute) and value.attr in _MODULE_ATTRS:
        module = value.attr  # ``dataclasses.sys.modules``: a module reached through another
    if module is not None and node.attr in _MODULE_ATTRS[module]:
        return [f"attribute {module}.{node.attr}"]
    return []


def _is_a_type(node: ast.expr) -> bool:
    """``type(x)``, ``x.__class__`` or a code, frame or function type (``types.FunctionType``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "type"
    if isinstance(node, ast.Attribute):
        return node.attr == "__class__" or node.attr in _CODE_TYPES
    return isinstance(node, ast.Name) and node.id in _CODE_TYPES


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
    if isinstance(node, ast.ImportFrom) and node.module is not None:
        attrs = _MODULE_ATTRS.get(node.module, frozenset())
        star = bool(attrs) and any(a.name == "*" for a in node.names)
        out.extend(
            f"import {node.module}.{a.name}"
            for a in node.names
            if a.name in attrs or a.name in _NAMES or (star and a.name == "*")
        )
    return out


def _string_marks(text: str) -> list[str]:
    if text in _NAMES:
        return [f"string {text!r}"]
    if "/proc/" in text:
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
