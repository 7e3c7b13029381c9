"""Which imported modules of a test are the code under test, read from the checkout.

A dotted module is production when it resolves, under one of the checkout's source roots (its
``[tool.patchgate] source_roots``, else ``src/`` when it exists, else the root), to a regular
``.py`` file or package ``__init__.py`` that is neither a test module (``test_*.py``,
``*_test.py``), a ``conftest.py``, nor under an oracle path (default ``tests/``, ``properties/``,
``pins/``). A checkout whose configuration does not load falls back to the defaults (the pin
checks report it; this reader never raises). Nothing is imported or executed.
"""

from __future__ import annotations

import fnmatch
import functools
import stat
from collections.abc import Callable
from pathlib import Path

from patchgate.errors import PatchgateError
from patchgate.pins import DirSource, ProjectConfig, load_config

__all__ = ["production_in"]


def production_in(repo_dir: Path) -> Callable[[str], bool]:
    """A predicate on dotted module names: production code of the checkout ``repo_dir``."""
    try:
        config = load_config(DirSource(repo_dir))
    except (PatchgateError, OSError, ValueError):
        config = ProjectConfig()
    src = repo_dir / "src"
    roots = config.roots(has_src=src.is_dir() and not src.is_symlink())
    oracle = tuple(p.rstrip("/") + "/" for p in config.oracle_paths)

    @functools.lru_cache(maxsize=256)
    def production(module: str) -> bool:
        parts = module.split(".")
        if not all(p.isidentifier() for p in parts):
            return False
        for root in roots:
            prefix = f"{root.rstrip('/')}/" if root else ""
            for rel in (f"{prefix}{'/'.join(parts)}.py", f"{prefix}{'/'.join(parts)}/__init__.py"):
                if _regular(repo_dir / rel) and not _harness(rel, oracle):
                    return True
        return False

    return production


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _harness(rel: str, oracle: tuple[str, ...]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if name == "conftest.py" or any(fnmatch.fnmatch(name, p) for p in ("test_*.py", "*_test.py")):
        return True
    return rel.startswith(oracle)
