"""Per-process work directories under ``<state>/work`` and the start-up sweep of dead ones.

Each executor process owns ``<state>/work/<host>-<pid>/`` (its requests' materialized trees and
results, ``req-*``) and holds an exclusive ``flock`` on the ``.lock`` file inside it for as long as
it lives. The kernel drops that lock when the process ends, however it ends (kill -9 included), so
a directory whose lock another process can take belongs to no living executor: the start-up sweep
removes it, holding the lock while it does. A held lock means a living owner (two executors may
share one state directory): never touched. A reused pid cannot fool this; the name only keeps
directories apart. A directory without a lock file (an older executor's) is removed only when its
name says this host and a pid that no longer runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import time
from pathlib import Path

import structlog

__all__ = ["LOCK_NAME", "WorkDir", "WorkDirError", "sweep_work_dirs"]

log = structlog.get_logger("executord.store.workdir")
LOCK_NAME = ".lock"
_OPEN_LOCK = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW


class WorkDirError(OSError):
    """The work directory cannot be claimed (its lock stays held by another process)."""


def _same_file(fd: int, path: Path) -> bool:
    """True when ``path`` is still the file open as ``fd`` (not removed, not replaced)."""
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


class WorkDir:
    """This process's work directory, locked for its lifetime; ``release`` removes it."""

    def __init__(self, path: Path, lock_fd: int) -> None:
        self.path = path
        self._fd: int | None = lock_fd

    @classmethod
    def claim(cls, root: Path, name: str, *, wait_s: float = 10.0) -> WorkDir:
        """Create (or take over from a dead owner) ``root/name`` and lock it."""
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = root / name
        deadline = time.monotonic() + wait_s
        while True:
            path.mkdir(exist_ok=True, mode=0o700)
            try:
                fd = os.open(path / LOCK_NAME, _OPEN_LOCK | os.O_CREAT, 0o600)
            except FileNotFoundError:
                continue  # a sweeper removed the directory between mkdir and open: again
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() > deadline:
                    raise WorkDirError(f"{path}: locked by another process") from None
                time.sleep(0.05)  # a sweeper is removing it: wait for that, then recreate
                continue
            if _same_file(fd, path / LOCK_NAME):
                break
            os.close(fd)  # we locked a lock file that was removed meanwhile: again
        work = cls(path, fd)
        stale = work.clear()  # a dead owner's leftovers under the same name (pid reused)
        if stale:
            log.info("removed a dead owner's leftovers", work_dir=str(path), entries=stale)
        return work

    def clear(self) -> int:
        """Remove everything in the directory but the lock; return how many entries."""
        with os.scandir(self.path) as it:
            stale = [Path(e.path) for e in it if e.name != LOCK_NAME]
        for path in stale:
            _remove(path)
        return len(stale)

    def release(self) -> None:
        """Remove the directory (lock still held while removing), then drop the lock."""
        if self._fd is None:
            return
        try:
            shutil.rmtree(self.path, onerror=_log_rmtree_error)
        finally:
            os.close(self._fd)
            self._fd = None


def sweep_work_dirs(root: Path, *, own: str, host: str) -> list[str]:
    """Remove the work directories under ``root`` whose owner is dead; return their names."""
    removed: list[str] = []
    try:
        with os.scandir(root) as it:
            dirs = sorted(e.name for e in it if e.is_dir(follow_symlinks=False) and e.name != own)
    except FileNotFoundError:
        return removed
    for name in dirs:
        if _remove_if_dead(root / name, host):
            removed.append(name)
    return removed


def _remove_if_dead(path: Path, host: str) -> bool:
    try:
        fd = os.open(path / LOCK_NAME, _OPEN_LOCK)
    except FileNotFoundError:
        if _dead_by_name(path.name, host):
            _remove(path)
            return True
        return False
    except OSError as exc:  # a link where the lock should be, or unreadable: not ours to judge
        log.warning("work dir left alone", work_dir=str(path), error=str(exc))
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its owner lives
        if not _same_file(fd, path / LOCK_NAME):
            return False  # removed or replaced meanwhile (another sweeper, a new owner)
        _remove(path)
        return True
    finally:
        os.close(fd)


def _dead_by_name(name: str, host: str) -> bool:
    """``<host>-<pid>`` of this host whose pid no longer runs (a directory without a lock)."""
    owner_host, _, pid = name.rpartition("-")
    if owner_host != host or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _remove(path: Path) -> None:
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path, onerror=_log_rmtree_error)  # never follows links inside
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _log_rmtree_error(
    func: object, path: str, exc_info: tuple[type, BaseException, object]
) -> None:
    if not isinstance(exc_info[1], FileNotFoundError):
        log.warning("could not remove", path=path, error=str(exc_info[1]))
