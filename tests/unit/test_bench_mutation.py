"""bench_mutation's generated target is well-formed: calc/gen.py imports, its tests pass with plain
pytest, each patch applies (``git apply --check``) and changes exactly N functions, keeping
behaviour. No Docker, no daemons: bench/_calcgen.py is loaded from its path."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_calcgen", ROOT / "bench" / "_calcgen.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_calcgen"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


gen = _load()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gen.make_repo(tmp_path_factory.mktemp("calc"))


def _pytest(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", gen.TESTS],
        cwd=cwd, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def _functions(source: str) -> dict[str, str]:
    tree = ast.parse(source)
    return {n.name: ast.dump(n) for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_module_imports_and_defines_twenty_functions(repo: Path) -> None:
    namespace: dict[str, object] = {}
    exec(compile((repo / gen.MODULE).read_text(), gen.MODULE, "exec"), namespace)  # noqa: S102
    names = [f.name for f in gen.FUNCS]
    assert len(names) == len(set(names)) == 20
    assert all(callable(namespace[n]) for n in names)
    assert sorted(_functions(gen.module(0))) == sorted(names)


def test_base_is_committed_clean_with_one_pinned_property_per_function(repo: Path) -> None:
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], check=True,
                            capture_output=True, text=True).stdout  # fmt: skip
    assert status == ""
    props = json.loads((repo / "pins" / "properties.json").read_text())["properties"]
    assert [p["covers"] for p in props] == [[f"calc.gen.{f.name}"] for f in gen.FUNCS]
    assert all(
        p["command"][-1] == f"{gen.TESTS}::test_{f.name}"
        for p, f in zip(props, gen.FUNCS, strict=True)
    )
    assert "allow_unmutated = true" in (repo / "pyproject.toml").read_text()


def test_tests_pass_with_plain_pytest(repo: Path) -> None:
    proc = _pytest(repo)
    assert proc.returncode == 0, proc.stdout
    assert "20 passed" in proc.stdout


def test_tests_fail_on_a_changed_value(tmp_path: Path) -> None:
    """The tests are strong: one helper returning a different value at one boundary fails."""
    broken = gen.make_repo(tmp_path)
    path = broken / gen.MODULE
    path.write_text(path.read_text().replace("return 'mid'", "return 'middle'", 1))
    proc = _pytest(broken)
    assert proc.returncode == 1
    assert "1 failed, 19 passed" in proc.stdout


@pytest.mark.parametrize("n", [1, 5, 20])
def test_patch_applies_and_changes_exactly_n_functions(repo: Path, tmp_path: Path, n: int) -> None:
    patch = gen.write_patch(repo, n, tmp_path / f"calc-{n}.patch")
    base = (repo / gen.MODULE).read_text()
    assert base == gen.module(0)  # the work tree is left at HEAD
    subprocess.run(["git", "-C", str(repo), "apply", "--check", str(patch)], check=True)
    patched_dir = tmp_path / "patched"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(patched_dir)],
                   check=True)  # fmt: skip
    try:
        subprocess.run(["git", "-C", str(patched_dir), "apply", str(patch)], check=True)
        before, after = _functions(base), _functions((patched_dir / gen.MODULE).read_text())
        assert sorted(before) == sorted(after)
        changed = [name for name in before if before[name] != after[name]]
        assert changed == [f.name for f in gen.FUNCS[:n]]
        proc = _pytest(patched_dir)  # behaviour kept: the same exact values
        assert proc.returncode == 0, proc.stdout
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(patched_dir)],
                       check=True)  # fmt: skip
