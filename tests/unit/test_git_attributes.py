"""The tree scored is the tree merged (issue 22, item 4): git metadata in a patch is refused, and
a base whose attributes change a file's checkout or export bytes is a configuration error.

Git runs here (real repositories and trees); no sockets, no Docker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from client.analysis.patch.diffparse import gitlinks
from client.gate.attributes import base_attribute_problems, byte_changing, patch_git_metadata
from client.gate.workspace import materialize
from patchgate.pins import ProjectConfig
from tests.attacks.repos import CORPUS, build, git

PATCHES = CORPUS / "patches"


def _repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


CODE = {
    "pkg/__init__.py": 'V = "$Format:%H$"\n',
    "pkg/mod.py": "X = 1\n",
    "pkg/words.txt": "w\n",
    "README.md": "r\n",
    "tests/notes.md": "n\n",
    "fixtures/a.json": "{}\n",
    "docs/conf.py": "x = 1\n",
    "docs/make.bat": "@echo off\n",
    "CHANGES.rst": "c\n",
    "pyproject.toml": "[project]\nname = 'x'\n",
}


def _problems(repo: Path) -> tuple[str, ...]:
    return base_attribute_problems(repo, "HEAD", ProjectConfig())


@pytest.mark.parametrize(
    ("line", "wanted"),
    [
        ("pkg/__init__.py export-subst", ["pkg/__init__.py: ", "export-subst"]),
        ("*.py ident", ["pkg/__init__.py", "pkg/mod.py", "ident"]),
        ("*.py filter=lfs", ["filter=lfs"]),
        ("*.md working-tree-encoding=latin1", ["tests/notes.md", "working-tree-encoding=latin1"]),
        ("*.py text eol=crlf", ["eol=crlf"]),
        ("*.md eol=crlf", ["tests/notes.md", "eol=crlf"]),
        ("*.txt eol=crlf", ["pkg/words.txt", "eol=crlf"]),  # package data: production reads it
        ("*.json eol=crlf", ["fixtures/a.json", "eol=crlf"]),  # the suite's input bytes
        ("pyproject.toml eol=crlf", ["pyproject.toml", "eol=crlf"]),
        ("pkg/** export-ignore", ["pkg/mod.py", "export-ignore"]),
        ("[attr]sneaky export-subst\n*.py sneaky", ["export-subst"]),
    ],
)
def test_byte_changing_base_attributes_name_the_file_and_attribute(
    tmp_path: Path, line: str, wanted: list[str]
) -> None:
    repo = _repo(tmp_path / "r", {**CODE, ".gitattributes": line + "\n"})
    problems = _problems(repo)
    assert problems, line
    text = "\n".join(problems)
    for word in wanted:
        assert word in text, text
    assert ".gitattributes (line " in text


@pytest.mark.parametrize(
    "line",
    [
        "* text=auto",
        "*.py text eol=lf",
        "*.png binary",
        "*.py diff=python",
        "*.py -text",
        "*.py export-subst\n*.py -export-subst",  # a later line unsets it
        "*.cfg export-subst",  # matches no file of the base
        # real libraries, second round: a changelog's and the docs' *.bat line endings change
        # no byte the gate scores, so they do not refuse the base
        "CHANGES.rst eol=crlf\n*.bat text eol=crlf\nREADME.md export-subst",
        "*.py filter=lfs\n*.py -filter",
    ],
)
def test_attributes_that_change_nothing_on_linux_are_fine(tmp_path: Path, line: str) -> None:
    repo = _repo(tmp_path / "r", {**CODE, ".gitattributes": line + "\n"})
    assert _problems(repo) == ()


def test_a_deeper_attributes_file_overrides_and_is_read_from_the_commit(tmp_path: Path) -> None:
    files = {
        **CODE,
        ".gitattributes": "*.py export-subst\n",
        "pkg/.gitattributes": "mod.py -export-subst\n",
    }
    repo = _repo(tmp_path / "r", files)
    problems = _problems(repo)
    assert [p.split(":")[0] for p in problems] == ["docs/conf.py", "pkg/__init__.py"], problems
    # an attributes file that exports itself away is still read (from the objects, not a tree)
    repo2 = _repo(
        tmp_path / "r2", {**CODE, ".gitattributes": ".gitattributes export-ignore\n*.py ident\n"}
    )
    assert any("ident" in p for p in _problems(repo2))
    assert _problems(_repo(tmp_path / "r3", CODE)) == ()


def test_byte_changing_states() -> None:
    assert byte_changing("export-subst", True)
    assert not byte_changing("export-subst", False)
    assert byte_changing("filter", "x")
    assert not byte_changing("filter", False)
    assert byte_changing("eol", "CRLF")
    assert not byte_changing("eol", "lf")
    assert not byte_changing("text", True)
    assert not byte_changing("text", "auto")


# -- in the patch ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def billing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build("billing", tmp_path_factory.mktemp("attrs") / "billing")


def _reasons(repo: Path, patch: bytes) -> tuple[str, ...]:
    with materialize(repo, "HEAD", patch) as ws:
        return patch_git_metadata(ws.changes(), patch, ws.base_dir, ws.patched_dir)


def test_a_patch_adding_gitattributes_is_refused(billing: Path) -> None:
    reasons = _reasons(billing, (PATCHES / "gitattributes_export_subst.patch").read_bytes())
    assert len(reasons) == 1
    assert reasons[0].startswith("the patch adds git metadata .gitattributes: ")


def test_a_gitlink_is_found_from_the_header_and_from_the_tree(billing: Path) -> None:
    patch = (PATCHES / "submodule_gitlink.patch").read_bytes()
    assert gitlinks(patch) == ("vendor/lib",)
    reasons = _reasons(billing, patch)
    assert reasons[0].startswith("the patch adds git metadata .gitmodules")
    assert "gitlink (submodule, mode 160000) at vendor/lib" in reasons[1]
    assert len(reasons) == 2  # the empty directory is that gitlink: one reason for it
    # the tree alone: what git apply wrote is an empty directory (the header not consulted)
    with materialize(billing, "HEAD", patch) as ws:
        assert (ws.patched_dir / "vendor/lib").is_dir()
        assert "vendor/lib" not in {c.path for c in ws.changes()}  # no file, no tree change
        tree_only = patch_git_metadata(ws.changes(), b"", ws.base_dir, ws.patched_dir)
    assert any("new empty directory vendor/lib" in r for r in tree_only), tree_only


def test_an_ordinary_patch_has_no_git_metadata(billing: Path) -> None:
    assert _reasons(billing, (PATCHES / "control_billing_refactor.patch").read_bytes()) == ()


def test_a_src_layout_s_namespace_package_data_is_scored(tmp_path: Path) -> None:
    """Under src/ every file is shipped, a namespace package's data too (no __init__.py there);
    the root's changelog beside it still changes nothing the gate reads."""
    files = {"src/nspkg/table.txt": "a\n", "src/nspkg/mod.py": "x = 1\n", "CHANGES.rst": "c\n"}
    repo = _repo(tmp_path / "r", {**files, ".gitattributes": "*.txt eol=crlf\n*.rst eol=crlf\n"})
    problems = _problems(repo)
    assert [p.split(":")[0] for p in problems] == ["src/nspkg/table.txt"], problems
