"""The reset helper (``executord/inside/reset.py``): what the helper's uid owns in a reset
directory is removed, links are removed and never followed, and it says 0 only when clean."""

from __future__ import annotations

import os
from pathlib import Path

from tests.unit._inside_helpers import load

reset = load("reset")


def test_the_reset_removes_what_the_uid_owns_and_never_follows_a_link(tmp_path: Path) -> None:
    """A file, a nested directory and a link of the uid go; the link's target outside stays."""
    area, outside = tmp_path / "area", tmp_path / "outside"
    area.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("mine, not the reset's")
    (area / "left.txt").write_text("x")
    (area / "dir" / "deeper").mkdir(parents=True)
    (area / "dir" / "deeper" / "f").write_text("y")
    (area / "dir").chmod(0o500)  # a directory the uid made unwritable is its own to open again
    (area / "link").symlink_to(outside)
    assert reset.reset_needed([str(area)], os.geteuid(), ipc=False)
    assert reset.reset_main(["reset", str(area)]) == 0
    assert list(area.iterdir()) == []
    assert (outside / "keep.txt").read_text() == "mine, not the reset's"
    assert not reset.reset_needed([str(area)], os.geteuid(), ipc=False)


def test_leftovers_name_what_is_still_there(tmp_path: Path) -> None:
    """What the uid still owns is named (the helper's exit 1 lines); another uid's is not."""
    (tmp_path / "a").write_text("x")
    assert reset.leftovers([str(tmp_path)], os.geteuid(), ipc=False) == [str(tmp_path / "a")]
    assert reset.leftovers([str(tmp_path)], os.geteuid() + 12345, ipc=False) == []
