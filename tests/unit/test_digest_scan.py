"""scan_fixture_tree: missing, extra (unpinned), unsafe and symlinked fixture files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchgate.digest import scan_fixture_tree
from patchgate.errors import FixtureScanError


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repo root with fixtures/a.json and fixtures/sub/b.txt."""
    (tmp_path / "fixtures" / "sub").mkdir(parents=True)
    (tmp_path / "fixtures" / "a.json").write_text("{}")
    (tmp_path / "fixtures" / "sub" / "b.txt").write_text("b")
    return tmp_path


PINNED = ["fixtures/a.json", "fixtures/sub/b.txt"]


def test_matching_tree_returns_every_pinned_file(tree: Path) -> None:
    """Every pinned file is found, keyed by its repo-relative path."""
    found = scan_fixture_tree(tree, "fixtures", PINNED)
    assert found == {p: str(tree / p) for p in PINNED}


def test_missing_file_refused(tree: Path) -> None:
    """A pinned file that does not exist is listed as missing."""
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(tree, "fixtures", [*PINNED, "fixtures/gone.json"])
    assert err.value.missing == ["fixtures/gone.json"]
    assert not err.value.extra
    assert not err.value.unsafe


def test_extra_file_refused(tree: Path) -> None:
    """A file under the fixture root that is not pinned is listed as extra."""
    (tree / "fixtures" / "new.json").write_text("x")
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(tree, "fixtures", PINNED)
    assert err.value.extra == ["fixtures/new.json"]


def test_symlink_leaving_the_tree_refused(tree: Path) -> None:
    """A symlink pointing outside the fixture root is unsafe, even when pinned."""
    (tree / "secret").write_text("s")
    os.symlink(tree / "secret", tree / "fixtures" / "link.json")
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(tree, "fixtures", [*PINNED, "fixtures/link.json"])
    assert err.value.unsafe == ["fixtures/link.json"]


def test_relative_symlink_escaping_refused(tree: Path) -> None:
    """A relative ``../`` symlink out of the tree is unsafe."""
    os.symlink("../../etc_passwd", tree / "fixtures" / "sub" / "esc")
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(tree, "fixtures", [*PINNED, "fixtures/sub/esc"])
    assert "fixtures/sub/esc" in err.value.unsafe


def test_symlinked_directory_refused(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A symlinked directory inside the fixture root is not walked; it is unsafe."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "x").write_text("x")
    os.symlink(outside, tree / "fixtures" / "linkdir")
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(tree, "fixtures", PINNED)
    assert err.value.unsafe == ["fixtures/linkdir"]


def test_symlinked_fixture_root_refused(tmp_path: Path, tree: Path) -> None:
    """A fixture root that is itself a symlink is unsafe."""
    other = tmp_path / "repo2"
    other.mkdir()
    os.symlink(tree / "fixtures", other / "fixtures")
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(other, "fixtures", PINNED)
    assert "fixtures" in err.value.unsafe


def test_dangling_symlink_refused(tree: Path) -> None:
    """A dangling symlink inside the tree is unsafe."""
    os.symlink(tree / "fixtures" / "nowhere", tree / "fixtures" / "dangling")
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(tree, "fixtures", [*PINNED, "fixtures/dangling"])
    assert err.value.unsafe == ["fixtures/dangling"]


def test_fifo_refused(tree: Path) -> None:
    """A non-regular file (a FIFO) is unsafe."""
    os.mkfifo(tree / "fixtures" / "pipe")
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(tree, "fixtures", [*PINNED, "fixtures/pipe"])
    assert err.value.unsafe == ["fixtures/pipe"]


def test_symlink_inside_the_tree_allowed(tree: Path) -> None:
    """A symlink to another file inside the fixture root is followed."""
    os.symlink("a.json", tree / "fixtures" / "alias.json")
    found = scan_fixture_tree(tree, "fixtures", [*PINNED, "fixtures/alias.json"])
    assert set(found) == {*PINNED, "fixtures/alias.json"}


def test_unsafe_pinned_path_refused(tree: Path) -> None:
    """A pinned path that is not a safe relative path is listed as unsafe."""
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(tree, "fixtures", [*PINNED, "fixtures/../x"])
    assert err.value.unsafe == ["fixtures/../x"]


def test_all_problems_listed_together(tree: Path) -> None:
    """Missing, extra and unsafe files are reported in one error."""
    (tree / "fixtures" / "new.json").write_text("x")
    os.symlink("/", tree / "fixtures" / "root")
    with pytest.raises(FixtureScanError) as err:
        scan_fixture_tree(tree, "fixtures", [*PINNED, "fixtures/gone"])
    e = err.value
    assert (e.missing, e.extra, e.unsafe) == (
        ["fixtures/gone"],
        ["fixtures/new.json"],
        ["fixtures/root"],
    )
    for label in ("missing", "unpinned (extra)", "unsafe"):
        assert label in str(e)
