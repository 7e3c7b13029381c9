"""The judge mode of a check's runs (DESIGN §6.7): what every ``Execute`` says about it.

``--judge on`` (the default): each sandbox run holds a supervisor, the judge (pytest, the pinned
properties, the executor's reporter) and the subject (the patched production code) as two uids;
the executor needs the source roots and the top-level production names, whose imports in the
judge become proxies of the subject's modules. ``--judge off``: the old single-process run, for
properties that cannot be judged; such a check is scored but never admitted unless the base's
reviewed configuration says ``allow_judge_off = true`` (docs/gate.md, "The judge").

The production names are read from the PATCHED tree (the code the subject serves, a module the
patch adds included): each source root's ``.py`` modules and packages (a directory with a regular
``__init__.py``) that are neither test modules, ``conftest.py``, nor under an oracle path.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["JUDGE_MODES", "JudgeMode", "production_names"]

JUDGE_MODES = ("on", "off")
_TESTS = ("test_*.py", "*_test.py", "conftest.py")


@dataclass(frozen=True, kw_only=True)
class JudgeMode:
    """The judge mode every Execute of a check sends."""

    judge: str = "on"
    source_roots: tuple[str, ...] = ()
    production: tuple[str, ...] = ()

    def kwargs(self) -> dict[str, Any]:
        """The ``ExecutorClient.execute`` keywords."""
        return {
            "judge": self.judge,
            "source_roots": self.source_roots,
            "production": self.production,
        }


def production_names(
    tree: Path, roots: tuple[str, ...], oracle_paths: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(source roots as the executor takes them, ``.`` for the root; top-level production names)."""
    oracle = tuple(p.strip("/") + "/" for p in oracle_paths if p.strip("/"))
    names: set[str] = set()
    sent: list[str] = []
    for root in roots:
        rel = root.strip("/")
        sent.append(rel or ".")
        base = tree / rel if rel else tree
        try:
            entries = sorted(base.iterdir())
        except OSError:
            continue
        for entry in entries:
            where = f"{rel}/{entry.name}" if rel else entry.name
            if (where + "/").startswith(oracle) or where.startswith(oracle):
                continue
            name = _module_name(entry, namespaces=bool(rel))
            if name is not None:
                names.add(name)
    return tuple(sent), tuple(sorted(names))


def _module_name(entry: Path, *, namespaces: bool) -> str | None:
    """The top-level module ``entry`` is: a ``.py`` file (not a test), a package, or — under a
    source root of its own (``src``), where every directory is code — a namespace package (no
    ``__init__.py``; PEP 420) holding a ``.py`` file: its modules are production code too, and
    were they not named here they would run in the judge. At the repository root (``.``) a
    directory without ``__init__.py`` is not taken for one: ``tests/``, ``docs/``, ``scripts/``."""
    try:
        mode = entry.lstat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) and entry.suffix == ".py":
        if any(fnmatch.fnmatch(entry.name, p) for p in _TESTS) or not entry.stem.isidentifier():
            return None
        return entry.stem
    if stat.S_ISDIR(mode) and entry.name.isidentifier():
        init = entry / "__init__.py"
        try:
            if stat.S_ISREG(init.lstat().st_mode):
                return entry.name
        except OSError:
            pass
        if namespaces and _holds_python(entry):
            return entry.name
    return None


def _holds_python(top: Path) -> bool:
    """A ``.py`` file somewhere below ``top`` (links not followed)."""
    for _dirpath, _dirs, files in os.walk(top, followlinks=False):
        if any(f.endswith(".py") for f in files):
            return True
    return False
