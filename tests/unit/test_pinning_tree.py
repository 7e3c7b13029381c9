"""The trees ``pin check`` reads: a working tree and a git revision list the same modules."""

from __future__ import annotations

from pathlib import Path

from client.pinning.tree import RevTree, WorkTree
from tests.unit._pinning_helpers import git, write


def _tree(root: Path) -> None:
    write(
        root,
        {
            "src/pkg/mod.py": "def f(): pass\n",
            "src/pkg/data.txt": "x",
            ".venv/lib/site.py": "x = 1\n",
            "env/pyvenv.cfg": "",
            "env/lib/v.py": "x = 1\n",
            "build/x.egg-info/y.py": "",
            "src/pkg/__pycache__/c.py": "",
        },
    )
    (root / "src" / "pkg" / "link.py").symlink_to(root / "src" / "pkg" / "mod.py")


def test_work_tree_lists_the_projects_own_regular_python_files(tmp_path: Path) -> None:
    _tree(tmp_path)
    tree = WorkTree(tmp_path)
    assert tree.python_files() == ["src/pkg/mod.py"]
    assert tree.read_all(["src/pkg/mod.py", "nope.py"]) == {"src/pkg/mod.py": b"def f(): pass\n"}
    assert tree.is_dir("src")
    assert not tree.is_dir("src/pkg/mod.py")


def test_rev_tree_reads_the_commit_not_the_working_tree(tmp_path: Path) -> None:
    """Regular blobs only (a committed symlink is no module); bytes as committed."""
    _tree(tmp_path)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-f", "src")
    git(tmp_path, "commit", "-qm", "base")
    write(tmp_path, {"src/pkg/mod.py": "changed\n", "src/pkg/new.py": ""})
    tree = RevTree(tmp_path, "HEAD")
    assert tree.python_files() == ["src/pkg/__pycache__/c.py", "src/pkg/mod.py"]
    files = tree.read_all(["src/pkg/mod.py", "src/pkg/new.py", "src/pkg/__pycache__/c.py"])
    assert files == {"src/pkg/mod.py": b"def f(): pass\n", "src/pkg/__pycache__/c.py": b""}
    assert tree.is_dir("src")
    assert not tree.is_dir("tests")
