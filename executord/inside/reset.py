"""The reset between two variants: what a role's uid left in the writable places, and its SysV
IPC objects, removed by a helper running as that uid.

Standard library only. Forked by a zygote, or started as ``python -I zygote.py reset [--ipc]
DIR...``; the supervisor asks ``reset_needed`` first. Exit 0 when the uid owns nothing there any
more, else 1 with one line per leftover (docs/reference/inside-wire.md, "Zygotes").
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
import sys

__all__ = [
    "ipc_objects",
    "leftovers",
    "remove_ipc",
    "remove_owned",
    "reset_main",
    "reset_needed",
]

IPC_RMID = 0
_TABLES = {  # /proc/sysvipc table: (id column, owner uid column, creator uid column)
    "shm": (1, 7, 9),
    "sem": (1, 4, 6),
    "msg": (1, 7, 9),
}


def _owned(dirpath: str, uid: int) -> list[str]:
    out: list[str] = []
    try:
        entries = list(os.scandir(dirpath))
    except OSError:
        return out
    for e in entries:
        with contextlib.suppress(OSError):
            if e.stat(follow_symlinks=False).st_uid == uid:
                out.append(e.path)
    return out


def _chmod_and_retry(func: object, path: str, _exc: object) -> None:
    """rmtree's error hook: a directory the uid made unwritable is its own to open again."""
    with contextlib.suppress(OSError):
        os.chmod(os.path.dirname(path), stat.S_IRWXU)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, stat.S_IRWXU)
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def remove_owned(dirpath: str, uid: int) -> None:
    """Remove every entry of ``dirpath`` that ``uid`` owns (links not followed)."""
    for path in _owned(dirpath, uid):
        with contextlib.suppress(OSError):
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                os.chmod(path, stat.S_IRWXU)
                shutil.rmtree(path, onerror=_chmod_and_retry)
            else:
                os.unlink(path)


def ipc_objects(uid: int) -> list[tuple[str, int]]:
    """(table, id) of every SysV IPC object ``uid`` owns or created (a table that cannot be
    opened, or a row that does not parse, is passed over)."""
    return _ipc_scan(uid, strict=False) or []


def _ipc_scan(uid: int, *, strict: bool) -> list[tuple[str, int]] | None:
    """``ipc_objects``; with ``strict``, None as soon as a table cannot be read or a row parsed
    (nothing is then known)."""
    found = []
    for table, (col_id, col_uid, col_cuid) in _TABLES.items():
        try:
            with open(f"/proc/sysvipc/{table}", encoding="ascii") as fh:
                lines = fh.read().splitlines()[1:]
        except (OSError, ValueError) as exc:
            if strict:
                return None
            if not isinstance(exc, OSError):
                raise
            continue
        for line in lines:
            cols = line.split()
            try:
                if uid in (int(cols[col_uid]), int(cols[col_cuid])):
                    found.append((table, int(cols[col_id])))
            except (IndexError, ValueError):
                if strict:
                    return None
    return found


def remove_ipc(uid: int) -> None:
    """``IPC_RMID`` every SysV IPC object of ``uid``."""
    objects = ipc_objects(uid)
    if not objects:
        return
    libc = ctypes.CDLL(None, use_errno=True)  # the libc the interpreter already links
    for table, ident in objects:
        if table == "shm":
            libc.shmctl(ctypes.c_int(ident), ctypes.c_int(IPC_RMID), None)
        elif table == "sem":
            libc.semctl(ctypes.c_int(ident), ctypes.c_int(0), ctypes.c_int(IPC_RMID))
        else:
            libc.msgctl(ctypes.c_int(ident), ctypes.c_int(IPC_RMID), None)


def leftovers(dirs: list[str], uid: int, *, ipc: bool) -> list[str]:
    """What ``uid`` still owns in ``dirs`` (and SysV IPC, with ``ipc``)."""
    left = [p for d in dirs for p in _owned(d, uid)]
    if ipc:
        left += [f"sysv {t} {i}" for t, i in ipc_objects(uid)]
    return left


#: An empty tmpfs: its root directory is its one inode in use, and its size is two of tmpfs's
#: 20-byte "bogus" entries (the size grows by one per entry).
_EMPTY_TMPFS_INODES = 1
_EMPTY_TMPFS_DIR_SIZE = 40


def reset_needed(dirs: list[str], uid: int, *, ipc: bool) -> bool:
    """Whether the reset helper run as ``uid`` could find anything to remove: False only when it
    is certain it could not, i.e. every directory was read (every entry ``lstat``-ed, no link
    followed) or proved an empty tmpfs, and none holds an entry of ``uid``; and, with ``ipc``,
    every SysV table was read and holds no object ``uid`` owns or created. Whatever could not
    be read, or read as expected, counts as something to remove (the helper then runs).

    The supervisor asks this of each role after that role's processes were killed (only its
    zygotes, which import no code under test, remain), so nothing of the uid runs between this
    answer and the next variant's start."""
    for d in dirs:
        try:
            with os.scandir(d) as entries:
                for e in entries:
                    if e.stat(follow_symlinks=False).st_uid == uid:
                        return True
        except FileNotFoundError:
            if os.path.lexists(d):  # the directory is there: an entry vanished while read
                return True
        except PermissionError:  # a role's own 0700 tmpfs, read by the supervisor
            if not _empty_tmpfs(d):
                return True
        except OSError:
            return True
    return ipc and _ipc_scan(uid, strict=True) != []


def _empty_tmpfs(path: str) -> bool:
    """``path`` is the root of a filesystem with nothing in it but that root (told by its inode
    count and the directory's size, which need no permission on the directory itself)."""
    try:
        st = os.lstat(path)
        up = os.lstat(os.path.dirname(path.rstrip("/")) or "/")
        fs = os.statvfs(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_dev != up.st_dev
        and st.st_nlink == 2  # "." and its entry in the parent: no subdirectory
        and st.st_size == _EMPTY_TMPFS_DIR_SIZE
        and fs.f_files > 0
        and fs.f_files - fs.f_ffree == _EMPTY_TMPFS_INODES
    )


def reset_main(argv: list[str]) -> int:
    """``zygote.py reset [--ipc] DIR...`` (``argv`` from ``reset``): 0 when clean, else 1
    (leftovers on stderr)."""
    ipc = "--ipc" in argv[1:]
    dirs = [a for a in argv[1:] if a != "--ipc"]
    uid = os.geteuid()
    for d in dirs:
        remove_owned(d, uid)
    if ipc:
        remove_ipc(uid)
    left = leftovers(dirs, uid, ipc=ipc)
    for item in left[:20]:
        print(f"reset: left behind: {item}", file=sys.stderr)
    return 1 if left else 0
