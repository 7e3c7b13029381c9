"""The trees ``pin check`` reads, and their names: the same ``check`` accepts in its base."""

from __future__ import annotations

from pathlib import Path

from client.analysis.patch.roles import layout_of
from client.analysis.patch.touched import base_symbols
from client.pinning.names import tree_symbols
from client.pinning.tree import RevTree, WorkTree, python_files
from patchgate.pins import DirSource, load_pins
from tests.unit._pinning_helpers import git, make_library, prop, write, write_pins


def test_python_files_are_the_projects_own_regular_files(tmp_path: Path) -> None:
    write(
        tmp_path,
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
    (tmp_path / "src" / "pkg" / "link.py").symlink_to(tmp_path / "src" / "pkg" / "mod.py")
    assert python_files(tmp_path) == ["src/pkg/mod.py"]


def test_rev_tree_is_the_commit_not_the_working_tree(tmp_path: Path) -> None:
    write(tmp_path, {"src/pkg/mod.py": "def f(): pass\n"})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    write(tmp_path, {"src/pkg/mod.py": "changed\n", "src/pkg/new.py": ""})
    tree = RevTree(tmp_path, "HEAD")
    with tree.checkout() as root:
        assert python_files(root) == ["src/pkg/mod.py"]
        assert (root / "src/pkg/mod.py").read_bytes() == b"def f(): pass\n"
    assert not root.exists()  # removed on exit
    assert tree.pins.describe("pins/x.json") == "HEAD:pins/x.json"
    with WorkTree(tmp_path).checkout() as same:
        assert same == tmp_path


def test_names_are_those_check_accepts_in_its_base(tmp_path: Path) -> None:
    """The generated library, plus a property file and a plugin under src/: the same set as the
    gate's own ``base_symbols`` (a property's file is harness, never production)."""
    root = make_library(tmp_path)
    write(root, {"src/textkit/props.py": "def check(): pass\n", "src/textkit/extra.py": "X = 1\n"})
    write_pins(root, [prop("p.a", ["textkit"], "src/textkit/props.py::check")])
    pins = load_pins(DirSource(root))
    ours = tree_symbols(root, pins.config, pins).names
    assert ours == base_symbols(layout_of(root, pins), root)
    assert "textkit.extra" in ours
    assert "textkit.props" not in ours
