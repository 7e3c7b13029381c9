"""Source, harness, oracle: what each path of a target repository is to the gate.

Roles, in the order they are decided (first match wins):

``compiled``  ``.pyc``, ``.pyo``, ``.so`` (``.so.N``), ``.pyd``, ``.dll``, ``.dylib``, ``.whl``,
              ``.egg``, ``.zip`` or anything under a ``__pycache__/`` directory: unreviewable code
              in a patch (``reject_provenance``).
``pin``       under the pins directory, or a ``patchgate.toml`` (the gate's own configuration):
              a patch that touches one mutates a pin (``R8``). ``[tool.patchgate]`` of a
              ``pyproject.toml`` is judged by content (:func:`pyproject_roles`).
``oracle``    under a configured oracle path (default ``tests/``, ``properties/``, ``pins/``).
``harness``   what Python or the test runner may load besides production code: ``conftest.py``
              at any depth, test modules (``test_*.py``, ``*_test.py``, the base's
              ``python_files`` patterns, every file a pinned property's command names),
              ``pytest.ini``/``.pytest.ini``/``pytest.toml``/``.pytest.toml``, ``tox.ini``,
              ``setup.cfg``, ``setup.py``, ``*.pth``, ``sitecustomize.py``, ``usercustomize.py``,
              anything under ``*.dist-info/`` or ``*.egg-info/``, ``*.egg-link``, the modules of
              plugins named by ``-p`` (property commands, ``addopts``) or ``pytest_plugins``,
              and every ``.py`` outside the source roots (the runner's working directory is on
              ``sys.path``: a root ``textkit/`` would shadow ``src/textkit``).
``pyproject`` a ``pyproject.toml``: judged by which tables changed (:func:`pyproject_roles`).
``excluded``  a configured ``exclude`` entry.
``source``    a ``.py`` under a source root: production code, its symbols are scored.
``data``      everything else (docs, data files, ``.pyi`` stubs): listed, never scored.

Harness and oracle paths together are the oracle: a patch touching either moved it (``R7``). The
layout is read from the **base** tree only; a patch cannot change how its own paths are judged.
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import fnmatch
import posixpath
import re
import shlex
import sys
import tomllib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchgate.pins import PinSet, ProjectConfig, node_id_of

__all__ = [
    "HARNESS_NAMES",
    "INERT_PYPROJECT_TABLES",
    "ROLES",
    "Layout",
    "layout_of",
    "plugin_names",
    "pyproject_roles",
]

ROLES = ("compiled", "pin", "oracle", "harness", "pyproject", "excluded", "source", "data")
HARNESS_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        ".pytest.toml",
        "tox.ini",
        "setup.cfg",
        "setup.py",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
#: ``[tool.X]`` tables of a pyproject.toml that neither Python nor pytest reads; any other change
#: of the file (``[project]``, ``[build-system]``, ``[tool.pytest*]``, unknown tools) is harness.
INERT_PYPROJECT_TABLES = frozenset(
    {"ruff", "black", "isort", "mypy", "pyright", "pylint", "codespell", "towncrier", "bumpversion"}
)
_COMPILED = re.compile(r"\.(?:pyc|pyo|pyd|dll|dylib|whl|egg|zip|so(?:\.\d+)*)$", re.IGNORECASE)
_TEST_FILES = ("test_*.py", "*_test.py")
_RUNNER = frozenset(
    {
        "pytest",
        "_pytest",
        "pluggy",
        "py",
        "iniconfig",
        "packaging",
        "hypothesis",
        "_hypothesis_pytestplugin",
        "coverage",
        "pytest_cov",
        "xdist",
        "execnet",
    }
)


def _under(path: str, prefix: str) -> bool:
    root = prefix.strip("/")
    return not root or path == root or path.startswith(root + "/")


@dataclass(frozen=True, kw_only=True)
class Layout:
    """How the base revision's configuration and pins judge a path (see the module docstring)."""

    source_roots: tuple[str, ...]
    oracle_paths: tuple[str, ...]
    pins_dir: str
    exclude: tuple[str, ...] = ()
    #: Pins outside the pins directory: the environment's lock file (a patch editing it is R8).
    pin_files: frozenset[str] = frozenset()
    #: The CI files the base's ``ci_files`` names (a directory ends with ``/``): pins too (R8).
    ci_files: tuple[str, ...] = ()
    test_files: tuple[str, ...] = _TEST_FILES
    property_files: frozenset[str] = frozenset()
    plugins: frozenset[str] = frozenset()
    #: Top-level import names the base tree already provides (from the root and each source root).
    base_top_names: frozenset[str] = frozenset()

    def role(self, path: str) -> str:
        """The role of ``path`` (one of :data:`ROLES`)."""
        parts = path.split("/")
        name = parts[-1]
        if _COMPILED.search(name) or "__pycache__" in parts[:-1] or name == "__pycache__":
            return "compiled"
        if name == "patchgate.toml" or _under(path, self.pins_dir) or path in self.pin_files:
            return "pin"
        if any(_under(path, ci) for ci in self.ci_files if ci.strip("/")):
            return "pin"
        if any(_under(path, o) for o in self.oracle_paths if o.strip("/")):
            return "oracle"
        if self._harness(path, parts):
            return "harness"
        if name == "pyproject.toml":
            return "pyproject"
        if any(_excluded(path, pattern) for pattern in self.exclude):
            return "excluded"
        if name.endswith(".py"):
            return "source" if self.root_of(path) is not None else "harness"
        return "data"

    def _harness(self, path: str, parts: list[str]) -> bool:
        name = parts[-1]
        if name in HARNESS_NAMES or name.endswith((".pth", ".egg-link")):
            return True
        if any(p.endswith((".dist-info", ".egg-info")) for p in parts[:-1]):
            return True
        if path in self.property_files:
            return True
        if name.endswith(".py") and any(fnmatch.fnmatchcase(name, p) for p in self.test_files):
            return True
        if not name.endswith(".py"):
            return False
        modules = list(self._module_names(path))
        if any(_plugin_hit(module, self.plugins) for module in modules):
            return True
        return any(_shadows(module.split(".")[0], self.base_top_names) for module in modules)

    def _module_names(self, path: str) -> Iterator[str]:
        """Every dotted name ``path`` is importable as: from the repo root and each source root."""
        for root in {"", *self.source_roots}:
            if _under(path, root):
                yield _dotted(path[len(root.strip("/")) :].lstrip("/"))

    def root_of(self, path: str) -> str | None:
        """The longest source root ``path`` lies under (``""``: the repo root), or None."""
        roots = [r.strip("/") for r in self.source_roots if _under(path, r)]
        return max(roots, key=len) if roots else None

    def module(self, path: str) -> str:
        """The dotted module of a source path, named from its source root.

        ``src/textkit/core.py`` → ``textkit.core``; ``pkg/__init__.py`` → ``pkg``; a source root's
        own ``__init__.py`` → ``__init__``.
        """
        root = self.root_of(path)
        rel = path if not root else path[len(root) + 1 :]
        return _dotted(rel)


def _dotted(rel: str) -> str:
    stem = rel[:-3] if rel.endswith(".py") else rel
    parts = stem.split("/")
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _shadows(top: str, base_top_names: frozenset[str]) -> bool:
    """A top-level name the patch introduces that hides the standard library or the runner's own
    packages (``pytest.py`` in the working directory runs instead of pytest)."""
    return top not in base_top_names and (top in sys.stdlib_module_names or top in _RUNNER)


def _plugin_hit(module: str, plugins: Iterable[str]) -> bool:
    """``module`` is a plugin, a package on its import path, or inside a plugin package."""
    return any(
        module == p or p.startswith(module + ".") or module.startswith(p + ".") for p in plugins
    )


def _excluded(path: str, pattern: str) -> bool:
    """A configured exclusion: a directory prefix (``gen/``), an exact path, or a glob."""
    if pattern.endswith("/"):
        return bool(pattern.strip("/")) and _under(path, pattern)
    return path == pattern or fnmatch.fnmatchcase(path, pattern) or _under(path, pattern)


# -- reading the base tree ---------------------------------------------------------------------


def plugin_names(argv: Sequence[str]) -> set[str]:
    """Modules loaded by ``-p NAME`` / ``-pNAME`` in an argv (``no:`` disables, not loads)."""
    names: set[str] = set()
    args = list(argv)
    for i, arg in enumerate(args):
        value = None
        if arg == "-p" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("-p") and not arg.startswith("--") and len(arg) > 2:
            value = arg[2:].lstrip("=")
        if value and not value.startswith("no:"):
            names.add(value)
    return names


def _read(root: Path, rel: str) -> bytes | None:
    path = root / rel
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def _ini_options(root: Path) -> list[dict[str, str]]:
    """pytest's ini options from every config file of the base root it may read."""
    found: list[dict[str, str]] = []
    for name, section in (
        ("pytest.ini", "pytest"),
        (".pytest.ini", "pytest"),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        raw = _read(root, name)
        if raw is None:
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(raw.decode("utf-8", "replace"))
        except configparser.Error:
            continue
        if parser.has_section(section):
            found.append(dict(parser.items(section)))
    tables: list[object] = []
    for name in ("pytest.toml", ".pytest.toml"):
        tables.append(_toml(_read(root, name)).get("pytest"))
    tool = _toml(_read(root, "pyproject.toml")).get("tool")
    pytest_table = tool.get("pytest") if isinstance(tool, dict) else None
    if isinstance(pytest_table, dict):
        tables.extend([pytest_table, pytest_table.get("ini_options")])
    found.extend({k: _as_text(v) for k, v in t.items()} for t in tables if isinstance(t, dict))
    return found


def _words(text: str) -> list[str]:
    """An ini value as pytest splits it (a TOML list arrives shell-quoted, see :func:`_as_text`)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _as_text(value: object) -> str:
    if isinstance(value, list):
        return " ".join(shlex.quote(str(v)) for v in value)
    return str(value)


def _toml(raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _conftest_plugins(root: Path) -> set[str]:
    """Module names in ``pytest_plugins = ...`` of every conftest.py of the base tree."""
    names: set[str] = set()
    for path in root.rglob("conftest.py"):
        if path.is_symlink() or ".git" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
            if any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets):
                names.update(
                    n.value
                    for n in ast.walk(getattr(node, "value", None) or ast.Constant(None))
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                )
    return names


def layout_of(base: Path, pins: PinSet) -> Layout:
    """The layout of the base tree at ``base`` under its configuration and pins."""
    config: ProjectConfig = pins.config
    src = base / "src"
    has_src = src.is_dir() and not src.is_symlink()
    options = _ini_options(base)
    plugins: set[str] = set()
    test_files = list(_TEST_FILES)
    for argv in [*(p.command for p in pins.properties), *pins.fixtures.allowed_commands]:
        plugins |= plugin_names(argv)
    for opts in options:
        with contextlib.suppress(ValueError):  # unbalanced quotes: pytest fails on them too
            plugins |= plugin_names(shlex.split(opts.get("addopts", "")))
        test_files.extend(_words(opts.get("python_files", "")))
    plugins |= _conftest_plugins(base)
    files = {
        node.split("::", 1)[0]
        for p in pins.properties
        if (node := node_id_of(p.command)) is not None
    }
    for argv in [*(p.command for p in pins.properties), *pins.fixtures.allowed_commands]:
        files |= _named_paths(base, argv)
    roots = config.roots(has_src=has_src)
    return Layout(
        source_roots=roots,
        oracle_paths=config.oracle_paths,
        pins_dir=config.pins_dir,
        exclude=config.exclude,
        pin_files=frozenset([config.environment.requirements] if config.environment else []),
        ci_files=config.ci_files,
        test_files=tuple(dict.fromkeys(test_files)),
        property_files=frozenset(files),
        plugins=frozenset(plugins),
        base_top_names=_top_names(base, roots),
    )


def _named_paths(base: Path, argv: Sequence[str]) -> set[str]:
    """Files of the base tree that an argv names (``-c FILE``, ``--x=FILE``, test files, node
    ids): pytest reads them, so they are harness. Directories are not counted (``--cov src``
    would make all production code harness)."""
    found: set[str] = set()
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        value = posixpath.normpath(value.split("::", 1)[0]).lstrip("/") if value else ""
        if value in ("", ".") or value.startswith("../"):
            continue
        target = base / value
        if value.endswith(".py") or (target.is_file() and not target.is_symlink()):
            found.add(value)
    return found


def _top_names(base: Path, roots: Sequence[str]) -> frozenset[str]:
    names: set[str] = set()
    for root in {"", *roots}:
        directory = base / root if root else base
        if directory.is_dir():
            names.update(p.name.split(".")[0] for p in directory.iterdir())
    return frozenset(names)


# -- pyproject.toml ----------------------------------------------------------------------------


def pyproject_roles(before: bytes | None, after: bytes | None) -> set[str]:
    """What a change of a ``pyproject.toml`` is: ``pin`` when ``[tool.patchgate]`` differs,
    ``harness`` when anything else but an inert ``[tool.X]`` table differs (or a side is not
    valid TOML); empty when only inert tables, comments or formatting changed."""
    sides = [_toml_or_none(raw) for raw in (before, after)]
    if any(s is None for s in sides):
        return {"harness"}
    old, new = (s or {} for s in sides)
    roles: set[str] = set()
    old_tool, new_tool = (d.get("tool", {}) for d in (old, new))
    if not isinstance(old_tool, dict) or not isinstance(new_tool, dict):
        return {"harness"}
    if old_tool.get("patchgate") != new_tool.get("patchgate"):
        roles.add("pin")
    for key in set(old_tool) | set(new_tool):
        inert = key == "patchgate" or key in INERT_PYPROJECT_TABLES
        if not inert and old_tool.get(key) != new_tool.get(key):
            roles.add("harness")
    if {k: v for k, v in old.items() if k != "tool"} != {
        k: v for k, v in new.items() if k != "tool"
    }:
        roles.add("harness")
    return roles


def _toml_or_none(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return {}
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
