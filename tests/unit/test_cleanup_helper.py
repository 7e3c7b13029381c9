"""The integration fixtures' last resort (issue 24): what a failed test left running under its own
directory is stopped by pid before the directory goes (an orphan ``patchgate-executord`` was left
when a fixture removed a lane's state first)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.integration.fixtures_executor import stop_everything_under


def test_a_process_left_under_the_directory_is_stopped(tmp_path: Path) -> None:
    mine = tmp_path / "lane"
    mine.mkdir()
    (mine / "lane.json").write_text("{}")  # a lane whose down cannot stop it (no pids)
    left = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)", str(mine / "executor.sock")]
    )
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        stop_everything_under(tmp_path)
        assert left.wait(30) == -9
        assert other.poll() is None  # only what names the test's own directory
    finally:
        for proc in (left, other):
            proc.kill()
            proc.wait(10)
