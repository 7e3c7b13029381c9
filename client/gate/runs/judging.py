"""The judge mode of a check's runs: what every ``Execute`` says about it (docs/executor.md,
"The judge apart").

``on`` (the default): the judge and the subject apart; the executor needs the source roots and
the top-level production names, read from the PATCHED tree, whose imports in the judge become
proxies of the subject's modules. ``off``: one process, scored but not admitted unless the base
allows it. Which names count as production (flat layouts, namespace packages, pytest's
``prepend`` directories): docs/gate.md, "Decisions the contract leaves open".
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from patchgate.request import ExecuteRequest
from patchgate.vocabulary import JUDGE_MODES as _JUDGE_MODES
from patchgate.vocabulary import JudgeName

__all__ = ["JUDGE_MODES", "JudgeMode", "production_names"]

JUDGE_MODES = _JUDGE_MODES  # the vocabulary's
_TESTS = ("test_*.py", "*_test.py", "conftest.py")


@dataclass(frozen=True, kw_only=True)
class JudgeMode:
    """The judge mode every Execute of a check sends."""

    judge: JudgeName = "on"
    source_roots: tuple[str, ...] = ()
    production: tuple[str, ...] = ()

    def apply(self, request: ExecuteRequest) -> ExecuteRequest:
        """``request`` with this judge mode."""
        return dataclasses.replace(
            request, judge=self.judge, source_roots=self.source_roots, production=self.production
        )


def production_names(
    tree: Path, roots: tuple[str, ...], oracle_paths: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(source roots as the executor takes them, ``.`` for the root; top-level production names)."""
    oracle = tuple(p.strip("/") + "/" for p in oracle_paths if p.strip("/"))
    names: set[str] = set()
    sent: list[str] = []
    for root in roots:
        rel = root.strip("/")
        rel = "" if rel == "." else rel  # the configuration reads "." as "" already
        sent.append(rel or ".")
        base = tree / rel if rel else tree
        names.update(_names_in(base, rel, oracle, at_root=not rel))
        for where in _test_dirs(base, rel, oracle):
            names.update(_names_in(tree / where, where, oracle, at_root=False))
    return tuple(sent), tuple(sorted(names))


def _names_in(base: Path, rel: str, oracle: tuple[str, ...], *, at_root: bool) -> set[str]:
    """The top-level module names a directory on ``sys.path`` offers (see the module docstring)."""
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return set()
    names: set[str] = set()
    for entry in entries:
        where = f"{rel}/{entry.name}" if rel else entry.name
        if (where + "/").startswith(oracle) or where.startswith(oracle):
            continue
        name = _module_name(entry)
        if name is not None and not (at_root and _stdlib_namespace(entry)):
            names.add(name)
    return names


def _stdlib_namespace(entry: Path) -> bool:
    """A root directory without ``__init__.py`` named after a standard-library module."""
    return entry.name in sys.stdlib_module_names and not (entry / "__init__.py").is_file()


def _test_dirs(base: Path, rel: str, oracle: tuple[str, ...]) -> list[str]:
    """Directories below ``base`` (not ``base``, not under an oracle path, links not followed)
    that pytest's ``prepend`` mode puts on ``sys.path``: they hold a test module or
    ``conftest.py`` and no ``__init__.py``. Relative to the tree, sorted."""
    found: list[str] = []
    for dirpath, dirs, files in os.walk(base, followlinks=False):
        here = Path(dirpath).relative_to(base).as_posix()
        where = rel if here == "." else (f"{rel}/{here}" if rel else here)
        dirs[:] = sorted(
            d for d in dirs
            if not ((f"{where}/{d}/" if where else f"{d}/").startswith(oracle))
            and d != "__pycache__" and not d.startswith(".")
        )  # fmt: skip
        if here == "." or "__init__.py" in files:
            continue
        if any(_is_test(f) for f in files):
            found.append(where)
    return found


def _is_test(filename: str) -> bool:
    """A test module or ``conftest.py`` by its name."""
    return any(fnmatch.fnmatch(filename, p) for p in _TESTS)


def _module_name(entry: Path) -> str | None:
    """The top-level module ``entry`` is: a ``.py`` file (not a test), a package, or a namespace
    package (no ``__init__.py``; PEP 420) holding a ``.py`` file that is not a test module: its
    modules are production code too, and were they not named here they would run in the judge.
    A directory of test modules only (``integration/``) or of data only is no package."""
    try:
        mode = entry.lstat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) and entry.suffix == ".py":
        if _is_test(entry.name) or not entry.stem.isidentifier():
            return None
        return entry.stem
    if stat.S_ISDIR(mode) and entry.name.isidentifier():
        init = entry / "__init__.py"
        try:
            if stat.S_ISREG(init.lstat().st_mode):
                return entry.name
        except OSError:
            pass
        if _holds_python(entry):
            return entry.name
    return None


def _holds_python(top: Path) -> bool:
    """A ``.py`` file that is not a test module somewhere below ``top`` (links not followed)."""
    for _dirpath, _dirs, files in os.walk(top, followlinks=False):
        if any(f.endswith(".py") and not _is_test(f) for f in files):
            return True
    return False
