"""Every package docstring of the client and the shared library names each of its modules and
sub-packages (the map a reader opens first stays true when a module is added)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _packages() -> list[Path]:
    found = [*(ROOT / "client").rglob("__init__.py"), *(ROOT / "patchgate").rglob("__init__.py")]
    return sorted(p.parent for p in found if not p.parent.is_relative_to(ROOT / "patchgate" / "v1"))


def unnamed(package: Path) -> list[str]:
    """The modules and sub-packages of ``package`` its docstring does not name (``__main__``
    and private modules, ``_x``, need not be named)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    names = [p.stem for p in package.glob("*.py")]
    names += [d.name for d in package.iterdir() if (d / "__init__.py").is_file()]
    return sorted(n for n in names if not n.startswith("_") and f"``{n}" not in doc
                  and f":mod:`{package.name}.{n}" not in doc and f".{n}`" not in doc
                  and f"``{n}/``" not in doc)  # fmt: skip


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_package_docstring_names_its_modules(package: Path) -> None:
    assert unnamed(package) == []


def test_a_module_left_out_is_found(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text('"""``a`` does A."""\n')
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    (tmp_path / "_c.py").write_text("")
    assert unnamed(tmp_path) == ["b"]
