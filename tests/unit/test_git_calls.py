"""Every git call of the client and the shared library goes through ``patchgate.git.run``
(issue 25: one function makes every git call, so nothing a repository configures runs)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_SUBPROCESS = {"run", "Popen", "check_output", "check_call", "call"}


def _git_argv_calls(tree: ast.AST) -> list[int]:
    """Lines of subprocess calls whose argv is a list or tuple starting with the string "git"."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        argv = node.args[0]
        if (
            name in _SUBPROCESS
            and isinstance(argv, ast.List | ast.Tuple)
            and argv.elts
            and isinstance(argv.elts[0], ast.Constant)
            and argv.elts[0].value == "git"
        ):
            lines.append(node.lineno)
    return lines


def offenders(root: Path) -> list[str]:
    out = []
    for package in ("client", "patchgate", "signerd", "executord"):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == "patchgate/git.py" or "/v1/" in rel:
                continue
            for line in _git_argv_calls(ast.parse(path.read_text(encoding="utf-8"))):
                out.append(f"{rel}:{line}")
    return out


def test_no_module_but_patchgate_git_runs_git() -> None:
    assert offenders(ROOT) == []


def test_the_scan_sees_a_direct_git_call(tmp_path: Path) -> None:
    """The check can fail: a planted ``subprocess.run(["git", ...])`` is found."""
    planted = tmp_path / "client" / "x.py"
    planted.parent.mkdir(parents=True)
    planted.write_text('import subprocess\nsubprocess.run(["git", "archive", "HEAD"])\n')
    for package in ("patchgate", "signerd", "executord"):
        (tmp_path / package).mkdir()
    assert offenders(tmp_path) == ["client/x.py:2"]
