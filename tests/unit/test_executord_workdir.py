"""Work directories (issue 12, debris): locked by their living owner, swept once it is dead."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from executord.store.workdir import LOCK_NAME, WorkDir, WorkDirError, sweep_work_dirs

HOST = socket.gethostname()
HOLDER = """
import sys, time
from pathlib import Path
from executord.store.workdir import WorkDir
w = WorkDir.claim(Path(sys.argv[1]), sys.argv[2])
(w.path / "req-x").mkdir()
(w.path / "req-x" / "big").write_bytes(b"x" * 1024)
print("claimed", flush=True)
time.sleep(60)
"""


def _dead_pid() -> int:
    """The pid of a process that has just ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _holder(root: Path, name: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), name], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "claimed"
    return proc


def _locked_elsewhere(path: Path) -> bool:
    fd = os.open(path / LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_claim_locks_and_release_removes(tmp_path: Path) -> None:
    """The owner holds the lock while it lives; release removes the whole directory."""
    work = WorkDir.claim(tmp_path, f"{HOST}-{os.getpid()}")
    (work.path / "req-a").mkdir()
    assert _locked_elsewhere(work.path)
    work.release()
    assert not work.path.exists()


def test_living_owner_is_never_swept_and_dead_one_is(tmp_path: Path) -> None:
    """Another process's directory stays while it lives; after kill -9 the sweep removes it."""
    proc = _holder(tmp_path, f"{HOST}-{os.getpid() + 1}")
    try:
        assert sweep_work_dirs(tmp_path, own="me", host=HOST) == []
        assert (tmp_path / f"{HOST}-{os.getpid() + 1}" / "req-x" / "big").exists()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert sweep_work_dirs(tmp_path, own="me", host=HOST) == [f"{HOST}-{os.getpid() + 1}"]
        assert list(tmp_path.iterdir()) == []
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_reused_name_of_a_dead_owner_is_taken_over_and_cleared(tmp_path: Path) -> None:
    """A new process with a dead owner's name (pid reuse, a restarted container's pid 1) gets
    the lock and starts empty."""
    name = f"{HOST}-1"
    proc = _holder(tmp_path, name)
    proc.kill()
    proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()
    work = WorkDir.claim(tmp_path, name)
    assert sorted(p.name for p in work.path.iterdir()) == [LOCK_NAME]
    work.release()


def test_claim_refuses_a_directory_whose_lock_stays_held(tmp_path: Path) -> None:
    """Two living claimants of one name: the second one fails (never shares a directory)."""
    proc = _holder(tmp_path, "h-1")
    try:
        with pytest.raises(WorkDirError, match="locked"):
            WorkDir.claim(tmp_path, "h-1", wait_s=0.2)
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_sweep_skips_its_own_directory(tmp_path: Path) -> None:
    """The sweeping process's own directory is not its business to sweep."""
    (tmp_path / "own").mkdir()
    assert sweep_work_dirs(tmp_path, own="own", host=HOST) == []
    assert (tmp_path / "own").is_dir()


def test_lockless_directory_goes_by_host_and_pid(tmp_path: Path) -> None:
    """Without a lock file (an older executor's): removed only for this host and a dead pid."""
    dead, alive, other = (
        f"{HOST}-{_dead_pid()}",
        f"{HOST}-{os.getpid()}",
        f"elsewhere-{_dead_pid()}",
    )
    for name in (dead, alive, other):
        (tmp_path / name / "req-1").mkdir(parents=True)
    assert sweep_work_dirs(tmp_path, own="me", host=HOST) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive, other])


def test_links_are_never_followed(tmp_path: Path) -> None:
    """A symlinked entry or lock file is left alone, and nothing behind it is removed."""
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    root = tmp_path / "work"
    root.mkdir()
    (root / f"{HOST}-{_dead_pid()}").symlink_to(outside)
    linked = root / f"{HOST}-{_dead_pid()}x"
    linked.mkdir()
    (linked / LOCK_NAME).symlink_to(outside / "keep")
    assert sweep_work_dirs(root, own="me", host=HOST) == []
    assert (outside / "keep").is_dir()
    assert linked.is_dir()


@pytest.mark.parametrize("grace", ["0", "-1", "0.1", "3601", "nan"])
def test_shutdown_grace_out_of_range_is_a_usage_error(
    grace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--shutdown-grace outside 0.5..3600 s: exit 64, one line, nothing started or created."""
    from executord import cli  # noqa: PLC0415 - only this test needs the entry point

    code = cli.main(
        ["serve", "--operator-keyring", str(tmp_path / "none.json"), "--listen",
         f"unix:{tmp_path}/x.sock", "--state-dir", str(tmp_path / "state"),
         "--shutdown-grace", grace]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 64
    assert len(err.strip().splitlines()) == 1
    assert "--shutdown-grace" in err
    assert not (tmp_path / "state").exists()
