"""The reset helper: between two variants, what one uid left behind is removed (DESIGN §6.9).

Standard library only; started by the supervisor AS the uid to reset (the subject's, then the
judge's), after every process of that uid was killed: ``python -I reset.py [--ipc] DIR...``.

* in each ``DIR``: every entry the helper's uid owns is removed (a directory with everything in
  it; links are removed, never followed). ``/tmp`` (shared through the group, sticky), ``/dev/shm``
  and ``/dev/mqueue`` hold other uids' entries too: those stay. A role's own ``HOME`` holds only
  its own;
* ``--ipc``: every SysV shared memory segment, semaphore set and message queue whose owner or
  creator is the helper's uid (``/proc/sysvipc/{shm,sem,msg}``) is removed with ``IPC_RMID``
  (``shmctl``/``semctl``/``msgctl`` through ``ctypes``).

Exit 0 when everything the uid owned is gone (checked again after removing), else 1 with one line
per leftover on stderr: the supervisor then ends the run rather than start a variant on dirty
state.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
import sys

__all__ = ["ipc_objects", "leftovers", "main", "remove_ipc", "remove_owned"]

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
    """(table, id) of every SysV IPC object ``uid`` owns or created."""
    found = []
    for table, (col_id, col_uid, col_cuid) in _TABLES.items():
        try:
            with open(f"/proc/sysvipc/{table}", encoding="ascii") as fh:
                lines = fh.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            with contextlib.suppress(IndexError, ValueError):
                if uid in (int(cols[col_uid]), int(cols[col_cuid])):
                    found.append((table, int(cols[col_id])))
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


def main(argv: list[str]) -> int:
    """``reset.py [--ipc] DIR...``: 0 when clean, else 1 (leftovers on stderr)."""
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


if __name__ == "__main__":
    sys.exit(main(sys.argv))
