"""The zygotes' fork server (mutation v2): one per role and batch, forking that role's processes.

Standard library only. The supervisor starts each zygote once, as its role's uid; per variant it
asks it over a control socket to fork the role's process (the judge, the subject, or a reset
helper), whose parent is the supervisor. What the judge's zygote prepares before it serves is
``warmstart.py``; the reset is ``reset.py``. Protocol: docs/reference/inside-wire.md, "Zygotes".
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib.util
import json
import os
import socket
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = [
    "ARGS_ENV",
    "BOOT",
    "FILE_ENV",
    "PRODUCTION_ENV",
    "RESET_ENV",
    "ZYGOTE_ENV",
    "Unfit",
    "check_clean",
    "control_socket",
    "environ",
    "ready",
    "reset_run",
    "resets_main",
    "send",
    "serve",
    "start",
    "subject_main",
    "unfit",
]

ZYGOTE_ENV = "PATCHGATE_ZYGOTE_FD"
ARGS_ENV = "PATCHGATE_ZYGOTE_ARGS"  # the judge's pytest arguments (JSON list)
PRODUCTION_ENV = "PATCHGATE_ZYGOTE_PRODUCTION"  # production top-level names (JSON list)
RESET_ENV = "PATCHGATE_ZYGOTE_RESET"  # the role's reset arguments ([--ipc] DIR..., JSON list)
_PR_SET_DUMPABLE = 4
_MAX_MSG = 1 << 20
_MAX_FDS = 8

FILE_ENV = "PATCHGATE_ZYGOTE_FILE"  # the judge zygote's program: ``warmstart.py``'s path
#: The judge zygote's ``-c`` program: ``sys.path[0]`` as ``-m`` sets it, then ``warmstart.py``.
BOOT = (
    "import os,sys,importlib.util as u;sys.path[0]=os.getcwd();"
    "s=u.spec_from_file_location('_patchgate_warmstart',os.environ['PATCHGATE_ZYGOTE_FILE']);"
    "m=u.module_from_spec(s);sys.modules[s.name]=m;s.loader.exec_module(m);m.judge_main()"
)


def _load(stem: str) -> ModuleType:
    """A sibling module of this file, by path, under a private name (never from sys.path)."""
    name = f"_patchgate_{stem}"
    mod = sys.modules.get(name)
    if mod is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{stem}.py")
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


if TYPE_CHECKING:
    from executord.inside import reset
else:
    reset = _load("reset")


class Unfit(RuntimeError):
    """The zygote cannot serve (the batch then runs fresh)."""


def _libc() -> ctypes.CDLL:
    """The C library: the one the interpreter already links (no search for it: a lean zygote
    starts in ~30 ms, and ``ctypes.util.find_library`` runs ``ldconfig``), else found by name."""
    libc = ctypes.CDLL(None, use_errno=True)
    if hasattr(libc, "prctl"):
        return libc
    from ctypes import util  # noqa: PLC0415 - only where the interpreter links no libc of its own

    return ctypes.CDLL(util.find_library("c") or "libc.so.6", use_errno=True)


def nondumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``; ``Unfit`` when it cannot be done."""
    try:
        libc = _libc()
        ok = libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError) as exc:
        raise Unfit(f"cannot make the zygote non-dumpable: {exc}") from exc
    if not ok:
        raise Unfit(f"cannot make the zygote non-dumpable: errno {ctypes.get_errno()}")


def check_clean(production: list[str] | None = None) -> None:
    """No thread but this one; no production module imported here (its proxies, which a
    collecting zygote's test modules hold, are not production code)."""
    if threading.active_count() != 1:
        raise Unfit("a thread is running in the zygote: it cannot fork")
    if production is None:
        production = json.loads(os.environ.get(PRODUCTION_ENV) or "[]")
    names = set(production)
    proxy = getattr(sys.modules.get("_patchgate_proxies"), "ProxyModule", None)
    real = sorted(
        n for n, m in sys.modules.items()
        if n.split(".")[0] in names and not (proxy is not None and isinstance(m, proxy))
    )  # fmt: skip
    if real:
        raise Unfit(f"production module {real[0]} was imported in the zygote")


def send(sock: socket.socket, doc: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        sock.send(json.dumps(doc).encode())


_Run = Callable[[dict[str, Any], list[int]], Callable[[], Any]]


def serve(
    sock: socket.socket, run: _Run, ops: tuple[str, ...] = ("fork", "reset")
) -> Callable[[], Any] | None:
    """Answer requests (of the ``ops`` kinds) until the socket ends (returns None, in the
    zygote); in a forked process returns what to run there (``run(request, fds)`` prepared
    it)."""
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MSG, _MAX_FDS)
        except OSError:
            return None
        if not msg:
            return None
        try:
            req = json.loads(msg)
            if not isinstance(req, dict) or req.get("op") not in ops:
                raise ValueError("unknown request")
        except ValueError as exc:
            for fd in fds:
                os.close(fd)
            send(sock, {"error": f"a malformed request: {exc}"})
            continue
        child = _fork(sock, req, fds, run)
        if child is not None:
            return child


#: ``clone`` with ``CLONE_PARENT``: the new process is the zygote's sibling, its parent the
#: supervisor's, from the start. The syscall's number by machine (its first argument, the flags,
#: is the same everywhere; the others are 0 as ``fork`` passes them).
_SYS_CLONE = {"x86_64": 56, "aarch64": 220}
_CLONE_PARENT = 0x00008000
_SIGCHLD = 17


def _clone_parent() -> int | None:
    """``clone(CLONE_PARENT | SIGCHLD)`` made as ``os.fork`` makes ``fork`` (the interpreter's
    own before/after hooks around it, the GIL held throughout): the child's pid in the zygote, 0
    in the child; None, nothing having happened, where it cannot be made (another machine, a
    runtime or filter that refuses it): the caller then forks twice."""
    number = _SYS_CLONE.get(os.uname().machine)
    if number is None or _CLONE_REFUSED:
        return None
    try:
        api = ctypes.pythonapi
        syscall = ctypes.PyDLL(None, use_errno=True).syscall  # PyDLL: the GIL stays held
        syscall.restype = ctypes.c_long
    except (OSError, AttributeError):
        return None
    args = [ctypes.c_long(a) for a in (number, _CLONE_PARENT | _SIGCHLD, 0, 0, 0, 0)]
    api.PyOS_BeforeFork()
    pid = int(syscall(*args))
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        _CLONE_REFUSED.append(ctypes.get_errno())
        return None
    return pid


_CLONE_REFUSED: list[int] = []  # the errno of a refused clone: this zygote forks twice since


def _fork(
    sock: socket.socket, req: dict[str, Any], fds: list[int], run: _Run
) -> Callable[[], Any] | None:
    """One process for ``req``, whose parent is the supervisor (it reaps it and reads its exit
    status from the kernel, not from a process of the role's uid): a clone with
    ``CLONE_PARENT`` where it can be made, else a fork twice (the middle process exits, so the
    process is re-parented). In that process returns what it runs; in the zygote sends its pid
    and returns None."""
    pid = _clone_parent()
    if pid == 0:
        os.setsid()
        sock.close()
        return run(req, fds)
    if pid is not None:
        for fd in fds:
            os.close(fd)
        send(sock, {"pid": pid})
        return None
    return _fork_twice(sock, req, fds, run)


def _fork_twice(
    sock: socket.socket, req: dict[str, Any], fds: list[int], run: _Run
) -> Callable[[], Any] | None:
    """Fork twice; in the grandchild return what it runs, in the zygote send its pid and None."""
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:
        for fd in (r, w, *fds):
            os.close(fd)
        send(sock, {"error": f"fork failed: {exc}"})
        return None
    if pid == 0:  # the middle process: fork the run's process, say its pid, exit
        os.close(r)
        try:
            grand = os.fork()
        except OSError:
            os._exit(1)
        if grand == 0:
            os.close(w)
            os.setsid()
            sock.close()
            return run(req, fds)
        with contextlib.suppress(OSError):
            os.write(w, str(grand).encode())
        os._exit(0)
    os.close(w)
    for fd in fds:
        os.close(fd)
    data = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(r, 64):
            data += chunk
    os.close(r)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    if data.isdigit():
        send(sock, {"pid": int(data)})
    else:
        send(sock, {"error": "the fork did not start"})
    return None


def environ(req: dict[str, Any], fds: list[int]) -> None:
    """The run's environment: the zygote's own (its own variables gone) plus the request's."""
    for name in (ZYGOTE_ENV, ARGS_ENV, PRODUCTION_ENV, RESET_ENV, FILE_ENV):
        os.environ.pop(name, None)
    env = {str(k): str(v) for k, v in (req.get("env") or {}).items()}
    for name, idx in (req.get("fdenv") or {}).items():
        env[str(name)] = ",".join(str(fds[int(i)]) for i in idx)
    os.environ.update(env)


def reset_run(req: dict[str, Any], fds: list[int]) -> Callable[[], Any]:
    def go() -> None:
        if fds:
            os.dup2(fds[0], 2)
            os.close(fds[0])
        code = 1
        try:
            code = reset.reset_main(["reset", *[str(a) for a in req.get("argv") or ()]])
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(code)

    return go


def control_socket() -> socket.socket:
    raw = os.environ.pop(ZYGOTE_ENV, "")
    if not raw.isdigit():
        raise Unfit("no zygote control fd")
    return socket.socket(fileno=int(raw))


def start(prepare: Callable[[], None]) -> socket.socket | None:
    """The control socket once the zygote is ready; None (having said why) when it is unfit."""
    sock = control_socket()
    return sock if ready(sock, prepare) else None


def unfit(sock: socket.socket, exc: BaseException) -> None:
    """Say why the zygote cannot serve (the supervisor then starts what it would have forked
    another way)."""
    send(sock, {"error": f"unfit: {type(exc).__name__}: {exc}"[:4000]})


def ready(sock: socket.socket, prepare: Callable[[], dict[str, Any] | None]) -> bool:
    """``prepare``, then made safe, checked clean and frozen, then ``ready`` (with ``prepare``'s
    notes) sent; False, having sent why, when any of it failed (the zygote is unfit)."""
    try:
        notes = prepare() or {}
        nondumpable()
        check_clean()
    except Exception as exc:  # any failure makes the zygote unfit, never a run
        unfit(sock, exc)
        return False
    _freeze()
    send(sock, {**notes, "ready": True})
    return True


def _freeze() -> None:
    """Everything the zygote made goes to the garbage collector's permanent generation
    (``gc.freeze``): a forked run's collections then walk only what the run made. pytest's
    unraisable-exception plugin collects at every run's end; over the zygote's pytest, plugins
    and Hypothesis that was ~35 ms a variant. (It also keeps the forks' copy-on-write pages
    shared.) Nothing the zygote made is garbage a run would have had collected: it made it
    before the run began."""
    gc.collect()
    gc.freeze()


def subject_main(main: Callable[[], int]) -> int:
    """The subject zygote (``subject.py`` with ``PATCHGATE_ZYGOTE_FD``); a forked subject runs
    ``main`` and returns its status, the zygote returns 0 when the batch ends (3 unfit)."""
    sock = start(lambda: None)
    if sock is None:
        return 3

    def run(req: dict[str, Any], fds: list[int]) -> Callable[[], Any]:
        if req["op"] == "reset":
            return reset_run(req, fds)

        def go() -> int:
            environ(req, fds)
            return main()

        return go

    child = serve(sock, run)
    return 0 if child is None else int(child())


def resets_main() -> int:
    """``python -I -S zygote.py resets`` (``PATCHGATE_ZYGOTE_FD`` set): a lean zygote, one per
    role, that forks only that role's reset helpers. A fork costs what the forking process
    maps: ~10 ms from the judge's zygote (pytest, its plugins, Hypothesis) in a sandbox, ~7 ms
    from the subject's, twice a variant; this one holds the standard library alone. It is made
    safe and served as the roles' zygotes are (non-dumpable, clean, frozen); 0 when the socket
    ends, 3 unfit."""
    sock = start(lambda: None)
    if sock is None:
        return 3
    child = serve(sock, reset_run, ops=("reset",))
    return 0 if child is None else int(child())


if __name__ == "__main__":
    if sys.argv[1:] == ["warm"]:
        sys.exit(_load("warmstart").warm_main())
    if sys.argv[1:] == ["resets"] and os.environ.get(ZYGOTE_ENV):
        sys.exit(resets_main())
    if sys.argv[1:2] != ["reset"]:
        print("usage: zygote.py reset [--ipc] DIR... | zygote.py warm", file=sys.stderr)
        sys.exit(64)
    sys.exit(reset.reset_main(sys.argv[1:]))
