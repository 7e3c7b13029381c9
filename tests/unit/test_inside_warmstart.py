"""The judge's warm start (``executord/inside/warmstart.py``): what a run forked after the
collection checks of the files it imported, and which plugins the run's pytest will not load.
(The zygote's configure and collect-once run end to end in ``test_inside_configured.py``.)"""

from __future__ import annotations

import os
from pathlib import Path

from tests.unit._inside_helpers import load

warmstart = load("warmstart")


def test_a_changed_or_missing_test_module_is_seen_after_the_collection(tmp_path: Path) -> None:
    """The same bytes compare equal; rewritten (a new inode or size) or gone, they do not: the
    run is then a fresh pytest, never the zygote's collection."""
    mod = tmp_path / "test_m.py"
    mod.write_text("def test_a(): pass\n")
    before = warmstart._files_of([str(mod)])
    assert warmstart._files_of([str(mod)]) == before
    mod.write_text("def test_a(): assert 0\n  # longer\n")
    assert warmstart._files_of([str(mod)]) != before
    os.unlink(mod)
    assert warmstart._files_of([str(mod)]) == {str(mod): (-1, -1, -1)}


def test_only_the_plugins_the_argv_blocks_are_left_out() -> None:
    """``-p no:NAME`` in either spelling; the marker plugin only when the reporter is loaded."""
    assert warmstart._blocked(["-q", "-p", "cacheprovider"]) == set()
    assert warmstart._blocked(["-pno:x", "-p", "no:y", "-p", "patchgate_reporter"]) == {
        "x",
        "y",
        "patchgate",
    }
