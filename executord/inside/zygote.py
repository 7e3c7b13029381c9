"""The zygotes: one per role and mutation batch, forking that role's processes (mutation v2).

Standard library only (pytest's own modules in the judge's zygote). The supervisor starts each
zygote once, as its role's uid, with the role's environment and working directory, before the
batch's first variant; then, per variant, asks it over a control socket (``SOCK_SEQPACKET``, one
JSON message per packet, fds as ``SCM_RIGHTS``) to fork that role's process for the run. What a
fresh interpreter would spend on every variant — starting Python, importing pytest, its plugins
and the gate's inside modules, configuring pytest, starting its session, collecting — is spent
once.

A forked process starts from the zygote's state: an interpreter that has imported nothing of the
code under test and nothing that reads a run's channels. Every run's subject still imports the
production code itself and is asked everything a collection of the suite's test modules asks
(by its judge's collection, or by the replay of the collecting zygote's), so mutants and
controls are run exactly alike (only the variant's code differs), and the files on disk are
never read for a variant.

* **Judge** (``python -c BOOT``, for a judge argv ``PY -m pytest ARGS``): ``sys.path[0]`` is the
  working directory as with ``-m``; it imports pytest, its builtin plugins and, unless
  ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` is set, the ``pytest11`` entry points' modules that the argv
  does not block (``-p no:NAME``) and the top-level modules of their distributions (a plugin may
  import its package late: Hypothesis's does at the terminal summary), through pytest's own
  assertion-rewriting hook marked as pytest marks them, so a run sees them rewritten as pytest
  would have (and pytest does not warn that they were imported before it). It also takes ahead
  what every run would spend again (``_prepare_judge``): the standard-library modules pytest
  imports late (``pdb``), the gate's ``wire``/``proxies``/``judgelink`` (no side effects at
  import), and the assertion rewrite of the top-level ``-p`` plugins, the named test files and
  the conftests above them, which a run's pytest takes from memory only for the very bytes
  rewritten here (``_memoize_rewrites``), and, for a failing run's report, those files' syntax
  trees and ``inspect``'s map of the loaded modules to their files (``_memoize_tracebacks``,
  again only for the very text parsed here). When the argv loads the reporter and the judge
  plugin it then **configures pytest and starts its session once** (``_configure``: the
  arguments, the ini, the plugins' registration, the entry points' metadata and the initial
  conftests; ``_in_session``: ``pytest_configure`` and ``pytest_sessionstart``, the fixture
  manager included; together about half of a forked judge before). No production code can be
  imported there, pytest's capture files are closed again, and anything left where the reset
  removes it makes the zygote unfit. Before it serves, every zygote freezes what it made
  (``gc.freeze``), so a run's garbage collections walk only the run's objects. A forked judge
  opens the reporter's channel on its run's pipe (``patchgate_channel`` was imported at the
  zygote's start, before there was one); from a session started here it binds its run
  (``_bind_run``: the reporter on that channel, the judge plugin's finder on its link, capture
  files of its own) and runs pytest's collection and tests, and pytest ends its session;
  otherwise it runs ``pytest`` as ``-m`` would, ``ARGS`` and all (``-p patchgate_reporter -p
  patchgate_judge`` take the run's channels at their import there). It ends as the interpreter
  would but for tearing its modules down (``_exit``).
* **Collecting zygote** (``{"op": "collect"}`` to the judge's zygote once its session started,
  ``_collect_once``): collects the batch's test modules once, against a collection subject (a
  subject forked with no variant, every production module from disk), noting every message on
  their link; then serves the batch's judges. A judge it forks replays those messages to its
  run's subject and compares every answer with the collection subject's: equal, the judge is
  where a fresh collection against its subject would be (the judge's collection is the reviewed
  code's, given the subject's answers) and it selects its own batch's items and runs them; at
  the first difference (a mutant that changes what collection asks of the subject, a module
  that changes its answers between imports), or when a test module's file changed since, it
  becomes a fresh ``python -m pytest ARGS`` on the same channels (``_fresh``). Each run's subject
  still imports everything itself and answers exactly what a collection of every module asks,
  so it cannot tell a mutant's run from a control's, nor a replay from another replay.
* **Subject** (``python subject.py``, ``PATCHGATE_ZYGOTE_FD`` set): the subject module is
  ``__main__`` as in a fresh subject; a forked subject runs its ``main``.
* **Reset** (either role): a forked process runs ``reset_main`` as the role's uid. The
  supervisor asks a lean zygote of the role for it first (``python -I -S zygote.py resets``,
  ``resets_main``: the standard library alone, so its forks are cheap; it serves resets only),
  then the role's zygote.

Each request's process has the supervisor as its parent (PID 1, or a child subreaper in unit
tests), which reaps it and reads its exit status from the kernel, not from a process of the
role's uid: the zygote clones it with ``CLONE_PARENT`` (``_clone_parent``: one copy of the
zygote's page tables, where the machine's syscall number is known and the runtime allows it),
else forks twice (its child forks the process and exits, so the process is re-parented). The
zygote sets
itself non-dumpable (``PR_SET_DUMPABLE`` 0): a process of its uid can then neither trace it nor
read its memory or its ``/proc`` fds; it can only kill it, and the supervisor then starts the
rest of the batch's processes fresh. A zygote that cannot make itself safe or clean (not
non-dumpable, a thread running, a production module imported by a plugin) says so and exits:
the batch runs fresh, slower and the same.

Messages, supervisor to zygote: ``{"op": "fork", "env": {...}, "fdenv": {NAME: [i, ...]}}``
(``fdenv``: which received fds an environment variable names, in order), ``{"op": "collect",
...}`` (the same fields; the judge's zygote only, once: its control socket and the link to the
collection subject among the fds) or ``{"op": "reset", "argv": [...]}`` (its one fd becomes the
reset's stderr). Zygote to supervisor: ``{"ready":
true}`` once, then ``{"pid": N}`` or ``{"error": "..."}`` per request. The zygote exits when the
socket ends.

The reset helper (DESIGN §6.9), forked by a zygote or, without one, started by the supervisor AS
the uid to reset (the subject's, then the judge's) after every process of that uid but its
zygote was killed: ``python -I zygote.py reset [--ipc] DIR...``.

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

import atexit
import contextlib
import ctypes
import gc
import json
import os
import shutil
import socket
import stat
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "BOOT",
    "ZYGOTE_ENV",
    "ipc_objects",
    "judge_main",
    "leftovers",
    "remove_ipc",
    "remove_owned",
    "reset_main",
    "resets_main",
    "serve",
    "subject_main",
    "warm_main",
]

ZYGOTE_ENV = "PATCHGATE_ZYGOTE_FD"
ARGS_ENV = "PATCHGATE_ZYGOTE_ARGS"  # the judge's pytest arguments (JSON list)
PRODUCTION_ENV = "PATCHGATE_ZYGOTE_PRODUCTION"  # production top-level names (JSON list)
RESET_ENV = "PATCHGATE_ZYGOTE_RESET"  # the role's reset arguments ([--ipc] DIR..., JSON list)
_PR_SET_DUMPABLE = 4
_MAX_MSG = 1 << 20
_MAX_FDS = 8

#: The judge zygote's ``-c`` program: ``sys.path[0]`` as ``-m`` sets it, then this file by path.
BOOT = (
    "import os,sys,importlib.util as u;sys.path[0]=os.getcwd();"
    "s=u.spec_from_file_location('_patchgate_zygote',os.environ['PATCHGATE_ZYGOTE_FILE']);"
    "m=u.module_from_spec(s);sys.modules[s.name]=m;s.loader.exec_module(m);m.judge_main()"
)


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


def _check_clean(production: list[str] | None = None) -> None:
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


def _send(sock: socket.socket, doc: dict[str, Any]) -> None:
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
            _send(sock, {"error": f"a malformed request: {exc}"})
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
        _send(sock, {"pid": pid})
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
        _send(sock, {"error": f"fork failed: {exc}"})
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
        _send(sock, {"pid": int(data)})
    else:
        _send(sock, {"error": "the fork did not start"})
    return None


def _environ(req: dict[str, Any], fds: list[int]) -> None:
    """The run's environment: the zygote's own (its own variables gone) plus the request's."""
    for name in (ZYGOTE_ENV, ARGS_ENV, PRODUCTION_ENV, RESET_ENV, "PATCHGATE_ZYGOTE_FILE"):
        os.environ.pop(name, None)
    env = {str(k): str(v) for k, v in (req.get("env") or {}).items()}
    for name, idx in (req.get("fdenv") or {}).items():
        env[str(name)] = ",".join(str(fds[int(i)]) for i in idx)
    os.environ.update(env)


def _reset(req: dict[str, Any], fds: list[int]) -> Callable[[], Any]:
    def go() -> None:
        if fds:
            os.dup2(fds[0], 2)
            os.close(fds[0])
        code = 1
        try:
            code = reset_main(["reset", *[str(a) for a in req.get("argv") or ()]])
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(code)

    return go


def _socket() -> socket.socket:
    raw = os.environ.pop(ZYGOTE_ENV, "")
    if not raw.isdigit():
        raise Unfit("no zygote control fd")
    return socket.socket(fileno=int(raw))


def _start(prepare: Callable[[], None]) -> socket.socket | None:
    """The control socket once the zygote is ready; None (having said why) when it is unfit."""
    sock = _socket()
    return sock if _ready(sock, prepare) else None


def _unfit(sock: socket.socket, exc: BaseException) -> None:
    """Say why the zygote cannot serve (the supervisor then starts what it would have forked
    another way)."""
    _send(sock, {"error": f"unfit: {type(exc).__name__}: {exc}"[:4000]})


def _ready(sock: socket.socket, prepare: Callable[[], dict[str, Any] | None]) -> bool:
    """``prepare``, then made safe, checked clean and frozen, then ``ready`` (with ``prepare``'s
    notes) sent; False, having sent why, when any of it failed (the zygote is unfit)."""
    try:
        notes = prepare() or {}
        nondumpable()
        _check_clean()
    except Exception as exc:  # any failure makes the zygote unfit, never a run
        _unfit(sock, exc)
        return False
    _freeze()
    _send(sock, {**notes, "ready": True})
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


# -- the judge ------------------------------------------------------------------------------
def _blocked(args: list[str]) -> set[str]:
    """The plugins the run's pytest will not load: ``-p no:NAME``, and the patchgate marker
    plugin's entry point when the reporter is loaded (it blocks that one)."""
    out = {"patchgate"} if "patchgate_reporter" in args else set()
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        spec = nxt if a == "-p" else a[2:] if a.startswith("-p") else ""
        if spec.startswith("no:"):
            out.add(spec[3:])
    return out


class _StubConfig:
    """What pytest's rewriting hook reads of a config while it imports (defaults)."""

    def __init__(self, state: object) -> None:
        from _pytest.assertion.rewrite import assertstate_key  # noqa: PLC0415 - judge only
        from _pytest.stash import Stash  # noqa: PLC0415 - judge only

        self.stash = Stash()
        self.stash[assertstate_key] = state  # type: ignore[misc]

    def getini(self, name: str) -> object:
        if name == "python_files":
            return ["test_*.py", "*_test.py"]
        return False

    def issue_config_time_warning(self, warning: Warning, stacklevel: int) -> None:
        raise Unfit(f"pytest warned in the zygote: {warning}")


#: Standard-library modules every run's pytest imports after the zygote's own imports (its
#: debugging plugin's ``pdb`` at configure, and what ``pdb`` imports).
_JUDGE_STDLIB = ("pdb", "cmd", "code", "codeop")
#: The gate's inside modules that the reporter and the judge plugin load, under the names their
#: ``_load`` gives them: no side effect at import, and judgelink's view of the clock is taken
#: here before any plugin is imported, as a fresh run takes it before its entry points.
_INSIDE = ("wire", "proxies", "judgelink")


def _preload_inside() -> None:
    import importlib.util  # noqa: PLC0415 - judge only (the lean zygote starts without it)

    here = os.path.dirname(os.path.abspath(__file__))
    for stem in _INSIDE:
        name = f"_patchgate_{stem}"
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, os.path.join(here, f"{stem}.py"))
        if spec is None or spec.loader is None:
            raise Unfit(f"the inside module {stem} is not there")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise


def _prepare_judge(args: list[str]) -> None:
    import importlib.metadata  # noqa: PLC0415 - judge only (the lean zygote starts without it)

    _preload_inside()
    import pytest  # noqa: F401, PLC0415 - the judge's zygote only: once here, for every run
    from _pytest import config as pconfig  # noqa: PLC0415 - judge only

    for name in pconfig.default_plugins:
        importlib.import_module(f"_pytest.{name}")
    for name in _JUDGE_STDLIB:
        importlib.import_module(name)
    files = _rewritten_files(args)
    _memoize_rewrites(files)
    _memoize_tracebacks([*files, *_inside_files()])
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return
    from _pytest.assertion.rewrite import AssertionRewritingHook  # noqa: PLC0415 - judge only

    state = types.SimpleNamespace(mode="rewrite", trace=lambda *_: None, hook=None)
    hook = AssertionRewritingHook(_StubConfig(state))  # type: ignore[arg-type]
    blocked, seen = _blocked(args), set()
    eps, names = [], []
    for dist in importlib.metadata.distributions():
        mine = [ep for ep in dist.entry_points if ep.group == "pytest11"]
        if mine and not all(ep.name in blocked for ep in mine):
            own = list(pconfig._iter_rewritable_modules(str(f) for f in dist.files or []))
            hook.mark_rewrite(*own)
            eps += mine
            names += own
    sys.meta_path.insert(0, hook)
    try:
        for ep in eps:
            if ep.name in blocked or ep.name in seen:
                continue
            seen.add(ep.name)
            try:
                ep.load()
            except Exception as exc:  # the run's pytest then loads it as it would
                print(f"zygote: plugin {ep.name} not preloaded: {exc!r}"[:500], file=sys.stderr)
        for name in names:  # what a plugin imports late (Hypothesis at the terminal summary)
            with contextlib.suppress(Exception):
                importlib.import_module(name)
    finally:
        sys.meta_path.remove(hook)


def _rewritten_files(args: list[str]) -> list[Path]:
    """What every run's pytest rewrites and compiles from source, the sandbox's tree being
    read-only (no pyc of pytest's can be written there): the ``-p`` plugins that are top-level
    modules (the reporter and the judge plugin), the test files the arguments name, and the
    ``conftest.py`` files from the working directory down to each of them. Found without
    importing anything."""
    import importlib.machinery  # noqa: PLC0415 - judge only
    from pathlib import Path  # noqa: PLC0415 - judge only (the reset helper starts lean)

    out: list[Path] = []
    for i, a in enumerate(args):
        spec = args[i + 1] if a == "-p" and i + 1 < len(args) else ""
        if spec and "." not in spec and not spec.startswith("no:"):
            found = importlib.machinery.PathFinder.find_spec(spec)
            if found is not None and found.origin and found.origin.endswith(".py"):
                out.append(Path(found.origin))
    cwd = Path.cwd()
    for a in args:
        path = Path(a.split("::", 1)[0])
        if a.startswith("-") or path.suffix != ".py":
            continue
        full = path if path.is_absolute() else cwd / path
        out.append(full)
        with contextlib.suppress(ValueError):
            rel = full.parent.relative_to(cwd)
            for depth in range(len(rel.parts) + 1):
                out.append(cwd.joinpath(*rel.parts[:depth], "conftest.py"))
    return list(dict.fromkeys(p for p in out if p.is_file()))


def _memoize_rewrites(files: list[Path]) -> None:
    """Rewrite ``files`` once here, as pytest would with its default ini, and have every run's
    pytest take the code from memory when a file's bytes are the ones rewritten here
    (``_rewrite_test`` is what pytest calls when it finds no pyc). A file that differs, or a
    run whose ini sets ``enable_assertion_pass_hook`` (the one option the rewrite reads), is
    rewritten by pytest itself. A file that does not rewrite (a syntax error) is left to the
    run, which reports it."""
    from pathlib import Path  # noqa: PLC0415 - judge only

    from _pytest.assertion import rewrite  # noqa: PLC0415 - judge only

    original = rewrite._rewrite_test
    if getattr(original, "_patchgate_memo", False) or not files:
        return
    state = types.SimpleNamespace(mode="rewrite", trace=lambda *_: None, hook=None)
    stub = _StubConfig(state)
    memo: dict[tuple[str, bytes], Any] = {}
    for path in files:
        try:
            source = path.read_bytes()
            memo[(str(path), source)] = original(path, stub)  # type: ignore[arg-type]
        except Exception:  # noqa: S112 - the run's pytest rewrites it, or reports why not
            continue

    def rewrite_test(fn: Path, config: Any) -> Any:
        try:
            hit = memo.get((str(fn), Path(fn).read_bytes()))
        except OSError:
            hit = None
        if hit is not None and not config.getini("enable_assertion_pass_hook"):
            return hit
        return original(fn, config)

    rewrite_test._patchgate_memo = True  # type: ignore[attr-defined]
    rewrite._rewrite_test = rewrite_test


def _inside_files() -> list[Path]:
    """The files of the gate's inside modules as ``_preload_inside`` loaded them (their frames
    are in a failing run's traceback when the subject raised)."""
    from pathlib import Path  # noqa: PLC0415 - judge only

    loaded = (sys.modules.get(f"_patchgate_{stem}") for stem in _INSIDE)
    return [Path(m.__file__) for m in loaded if m is not None and m.__file__]


def _memoize_tracebacks(files: list[Path]) -> None:
    """What every failing run's pytest spends on its report, done once here. To show a failing
    line, pytest parses the whole file the frame is in and walks its syntax tree for the
    statements' lines (``getstatementrange_ast``), and ``inspect`` maps every loaded module to
    its file the first time it looks a frame's module up. For the test files of the batch
    (~40 ms a failing variant with the bench's test module, and most mutants fail) and for the
    gate's inside modules, the tree is parsed here and its statement lines computed as pytest
    computes them; a run's pytest gets that tree only for the very text parsed here (pytest's
    own keyed-by-text rule: the source it holds, as it joins it), and parses anything else
    itself. ``inspect``'s module-to-file map is filled here for the modules the zygote loaded;
    a run adds its own as ``inspect`` always does. The report is the same, from the same bytes.
    """
    import ast  # noqa: PLC0415 - judge only
    import inspect  # noqa: PLC0415 - judge only
    import tokenize  # noqa: PLC0415 - judge only
    import warnings  # noqa: PLC0415 - judge only

    from _pytest._code import code as pcode  # noqa: PLC0415 - judge only
    from _pytest._code import source as psource  # noqa: PLC0415 - judge only

    original = psource.getstatementrange_ast
    if getattr(original, "_patchgate_memo", False):
        return
    with contextlib.suppress(Exception):  # a module whose file inspect cannot read: the run maps it
        inspect.getmodule(_memoize_tracebacks.__code__, "<patchgate zygote>")
    memo: dict[str, ast.AST] = {}
    for path in files:
        try:  # read as linecache reads it, but not into linecache: a run's starts empty
            with tokenize.open(path) as fh:
                content = "\n".join(line.rstrip() for line in fh)  # as pytest's Source joins it
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        if not content:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                node = ast.parse(content, "source", "exec")
        except Exception:  # noqa: S112 - (a syntax error, a tree too deep) the run's pytest parses it
            continue
        psource._statement_linenos(node)  # memoized on the node, as pytest does
        memo[content] = node

    def getstatementrange_ast(
        lineno: int, source: Any, assertion: bool = False, astnode: Any = None
    ) -> Any:
        if astnode is None:
            astnode = memo.get(str(source))
        return original(lineno, source, assertion, astnode)

    getstatementrange_ast._patchgate_memo = True  # type: ignore[attr-defined]
    psource.getstatementrange_ast = getstatementrange_ast
    pcode.getstatementrange_ast = getstatementrange_ast  # type: ignore[attr-defined] # its import


def _exit(code: object) -> None:
    """End a forked judge as the interpreter would, but for tearing down its modules (what a
    process that imported pytest, its plugins and Hypothesis spends most of its end on, and
    the run has no use for): non-daemon threads joined, ``atexit`` handlers run, output
    flushed, the exit status as ``SystemExit`` gives it."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = int(code) & 0xFF
    else:
        with contextlib.suppress(Exception):
            print(code, file=sys.stderr)
        status = 1
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def _open_channel() -> None:
    """The reporter's channel (``patchgate_channel``, imported at the zygote's start by the
    sandbox's ``sitecustomize``, with no run's pipe then) on this run's pipe."""
    chan = sys.modules.get("patchgate_channel")
    if chan is None:
        return
    batch = chan._take_env(chan.BATCH_ENV)  # a variant's own batch file (its scope), if any
    if batch:
        chan.__dict__["BATCH"] = batch
    fd = chan._take_env(chan.FD_ENV)
    if fd.isdigit():
        chan.__dict__.update(JUDGED=True, CHANNEL=chan.Channel("", "", int(fd)))


# -- the judge's pytest, configured once ------------------------------------------------------
def _configure(args: list[str], before: list[str]) -> Any:
    """pytest configured here, once for every run (``_prepareconfig`` of the run's ``args``,
    its global capture closed), when the argv loads the reporter and the judge plugin (``-p``,
    as the executor writes it) and the run's pytest has ``_prepareconfig``; else None, having
    done nothing (every forked judge then runs pytest whole). A failure once it began makes the
    zygote ``Unfit``: a half-configured pytest (conftests imported, plugins registered) is no
    run's start.

    The judge plugin is imported by the configure, as in a fresh run, and puts its proxy finder
    first before the initial conftests load; here (``PATCHGATE_JUDGE_DEFERRED``) the finder has
    no subject and refuses every production import, so a conftest that imports production code
    fails the configure. pytest opens its global capture's files while it configures: they are
    closed here, and each forked judge opens its own (``_bind_run``). A configure that left
    anything where the reset between runs removes it (a conftest's temporary directory made at
    import, a SysV object) makes the zygote unfit: the first run's reset would remove it, and
    every later run would start from a state no fresh run has."""
    named = {args[i + 1] for i, a in enumerate(args[:-1]) if a == "-p"}
    if not {"patchgate_reporter", "patchgate_judge"} <= named:
        return None
    import pytest  # noqa: PLC0415 - judge only (imported by _prepare_judge already)

    try:
        from _pytest.config import _prepareconfig  # noqa: PLC0415 - the run's own pytest
    except ImportError:
        return None
    production = [str(n) for n in json.loads(os.environ.get(PRODUCTION_ENV) or "[]")]
    _as_main(args)
    os.environ["PYTEST_VERSION"] = pytest.__version__  # as pytest's own main sets it
    os.environ.update(PATCHGATE_JUDGE_DEFERRED="1",
                      PATCHGATE_JUDGE_CONFIG=json.dumps({"production": production}))  # fmt: skip
    try:
        config = _prepareconfig(list(args))
        judge = sys.modules.get("patchgate_judge")
        if judge is None or getattr(judge, "FINDER", None) is None:
            config._ensure_unconfigure()
            raise RuntimeError("the judge plugin's finder is not in place")
        capman = config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            capman.stop_global_capturing()
        _nothing_left("configuring", before)
    except BaseException as exc:
        raise Unfit(f"pytest could not be configured once: {type(exc).__name__}: {exc}") from exc
    finally:
        for name in ("PATCHGATE_JUDGE_DEFERRED", "PATCHGATE_JUDGE_CONFIG"):
            os.environ.pop(name, None)
    return config


def _owned_now() -> list[str]:
    """What this zygote's uid owns where the reset between runs removes it (``RESET_ENV``)."""
    args = [str(a) for a in json.loads(os.environ.get(RESET_ENV) or "[]")]
    dirs = [a for a in args if a != "--ipc"]
    return leftovers(dirs, os.getuid(), ipc="--ipc" in args)


def _nothing_left(doing: str, before: list[str]) -> None:
    """``RuntimeError`` when this uid owns something there now that it did not ``before``: the
    reset after the first run would remove it, and every later run would start from a state
    no fresh run has."""
    left = sorted(set(_owned_now()) - set(before))
    if left:
        raise RuntimeError(f"{doing} left {left[0]} behind (of {len(left)})")


def _as_main(args: list[str]) -> None:
    """``sys.argv``, ``sys.orig_argv`` and ``__main__`` as ``python -m pytest ARGS`` sets them."""
    import importlib.util  # noqa: PLC0415 - judge only

    spec = importlib.util.find_spec("pytest.__main__")
    origin = spec.origin if spec is not None and spec.origin else "pytest"
    sys.argv = [origin, *args]
    sys.orig_argv = [sys.orig_argv[0], "-m", "pytest", *args]
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=origin, __spec__=spec, __package__="pytest")
    main.__loader__ = spec.loader if spec is not None else None
    sys.modules["__main__"] = main


def _bind_run(config: Any, *, linked: bool = False) -> None:
    """A forked judge takes its run: the reporter binds this run's channel and batch (and sends
    its ``start``), the judge plugin's finder gets this run's link, and pytest's global capture
    gets files of its own, suspended as a fresh configure leaves it; all before anything of the
    run imports."""
    sys.modules["patchgate_reporter"].rebind()
    if not linked:  # (a judge forked after the collection has its link already: relink)
        sys.modules["patchgate_judge"].connect()
    _capture_anew(config)


def _capture_anew(config: Any) -> Any:
    """pytest's global capture on files of this process's own, suspended as a fresh configure
    leaves it (the zygote closed its own); the capture manager, None without one."""
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.start_global_capturing()
        capman.suspend_global_capture()
    return capman


def _in_session(sock: socket.socket, config: Any, before: list[str]) -> int:
    """Run pytest's ``pytest_cmdline_main`` here, and serve from inside it: pytest's own
    ``wrap_session`` runs ``pytest_configure`` and ``pytest_sessionstart`` once, in the zygote,
    then calls ``_pytest.main._main``, which is this zygote's serve loop for that one call. A
    forked judge binds its run (``_bind_run``) and runs pytest's real ``_main`` — collection
    and the tests — and returns into ``wrap_session``, which ends the session as pytest ends
    any (``pytest_sessionfinish``, unconfigure). Returns the forked judge's exit status; the
    zygote itself never returns (``os._exit`` when the batch ends), and is unfit when the session
    did not reach ``_main`` or left anything where the reset removes it."""
    from _pytest import main as pmain  # noqa: PLC0415 - the run's own pytest
    from _pytest.config import UsageError  # noqa: PLC0415 - the run's own pytest

    real = pmain._main
    reached = []

    def serve_here(cfg: Any, session: Any) -> Any:
        pmain._main = real
        reached.append(True)

        def checks() -> dict[str, Any]:
            _nothing_left("starting pytest's session", before)
            return {"configured": True}

        def run(req: dict[str, Any], fds: list[int]) -> Callable[[], Any]:
            if req["op"] == "reset":
                return _reset(req, fds)
            if req["op"] == "collect":
                return lambda: _collect_once(cfg, session, real, req, fds)

            def go() -> Any:
                _environ(req, fds)
                _open_channel()
                _bind_run(cfg)
                return real(cfg, session)

            return go

        if not _ready(sock, checks):
            os._exit(3)
        child = serve(sock, run, ("fork", "reset", "collect"))
        if child is None:  # the batch ended: the zygote ends, its session never finishes
            sys.stdout.flush()
            os._exit(0)
        return child()

    pmain._main = serve_here  # type: ignore[assignment] # pytest calls it by this name
    try:
        ret = config.hook.pytest_cmdline_main(config=config)
    except UsageError as exc:  # refused, as pytest's own main refuses it
        for msg in exc.args:
            print(f"ERROR: {msg}\n", file=sys.stderr)
        ret = 4
    if not reached:
        why = f"pytest's session did not start in the zygote (exit {ret})"
        _send(sock, {"error": f"unfit: {why}"})
        return 3
    sys.stdout.flush()
    return int(ret)


def _collect_once(cfg: Any, session: Any, real: Any, req: dict[str, Any], fds: list[int]) -> Any:
    """The collecting zygote (forked by the judge's zygote for ``{"op": "collect"}``, its own
    control socket and the link to a collection subject in the request): collect once, against
    that subject, noting every message on the link; then serve forks of its own. A judge it
    forks replays those messages to its run's subject (``patchgate_judge.relink``): when every
    answer is the collection subject's, the judge is where a fresh collection against this
    subject would have left it, and it runs the tests of its own batch; at the first difference
    it becomes a fresh pytest on the same channels (``_fresh``). Returns, in a forked judge, what
    pytest's ``_main`` returns; the zygote itself never returns."""
    _environ(req, fds)
    sock = _socket()
    judge, reporter = sys.modules["patchgate_judge"], sys.modules["patchgate_reporter"]
    before = _owned_now()
    production = list(judge.FINDER.client.production)
    had = set(sys.modules)
    try:
        judge.connect(record=True)
        batch = reporter._REPORTER.batch
        batch.run, batch._run = [], None  # collect and keep every item: each run selects its own
        capman = _capture_anew(cfg)  # as a run's; closed again before any fork
        cfg.hook.pytest_collection(session=session)
        if capman is not None:
            capman.stop_global_capturing()
        events = judge.CLIENT.detach()
        if session.testsfailed:
            raise Unfit(f"the collection failed ({session.testsfailed} errors)")
        _nothing_left("collecting", before)
    except Exception as exc:  # any failure makes this zygote unfit, never a run
        _unfit(sock, exc)
        os._exit(3)
    collected = list(session.items)
    proxy = sys.modules["_patchgate_proxies"].ProxyModule  # the subject's modules: not files here
    new = [m for n, m in sys.modules.items() if n not in had and not isinstance(m, proxy)]
    files = [f for m in new if isinstance(f := m.__dict__.get("__file__"), str)]
    imported = _files_of(files)

    class _Collected:
        """A forked judge's collection: the zygote's items, sorted and selected by this run's
        batch as the reporter selects them after every other plugin."""

        def pytest_collection(self, session: Any) -> bool:
            items = list(collected)
            reporter._REPORTER.pytest_collection_modifyitems(session.config, items)
            session.items, session.testscollected = items, len(items)
            return True

    def run(req: dict[str, Any], fds: list[int]) -> Callable[[], Any]:
        if req["op"] == "reset":
            return _reset(req, fds)

        def go() -> Any:
            _environ(req, fds)
            env = dict(os.environ)  # this run's, before its channels are taken out of it
            _open_channel()
            if _files_of(files) != imported or not judge.relink(events):
                _fresh(env, fds)
            _bind_run(cfg, linked=True)
            cfg.pluginmanager.register(_Collected(), "patchgate-collected")
            return real(cfg, session)

        return go

    def checks() -> dict[str, Any]:
        _check_clean(production)  # its test modules hold proxies, never production code
        return {"collected": True}

    if not _ready(sock, checks):
        os._exit(3)
    child = serve(sock, run)
    if child is None:
        sys.stdout.flush()
        os._exit(0)
    return child()


def _files_of(paths: list[str]) -> dict[str, tuple[int, int, int]]:
    """Each file as (inode, size, mtime in ns): a run forked after the collection checks that
    the test modules and conftests it imported are still those bytes (a sandbox's tree is
    read-only; a writable one may change between runs)."""
    out: dict[str, tuple[int, int, int]] = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out[path] = (-1, -1, -1)
            continue
        out[path] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def _fresh(env: dict[str, str], fds: list[int]) -> None:
    """This run's judge as a fresh ``python -m pytest ARGS`` on the same channels (the fds its
    request brought, the environment naming them): what runs when its subject did not answer
    the collection's messages as the collection subject did."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.set_inheritable(fd, True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os.execve(sys.executable, [sys.executable, "-m", "pytest", *sys.argv[1:]], env)  # noqa: S606 - argv, no shell


def judge_main() -> None:
    """The judge zygote's program (``BOOT``); a forked judge runs pytest from here."""
    args = [str(a) for a in json.loads(os.environ.get(ARGS_ENV) or "[]")]
    sock = _socket()
    try:
        _prepare_judge(args)
        before = _owned_now()
        config = _configure(args, before)
    except Exception as exc:  # any failure makes the zygote unfit, never a run
        _unfit(sock, exc)
        sys.exit(3)
    if config is not None:  # served from inside pytest's session; returns in a forked judge
        _exit(_in_session(sock, config, before))
    if not _ready(sock, lambda: None):
        sys.exit(3)

    import runpy  # noqa: PLC0415 - judge only

    def run(req: dict[str, Any], fds: list[int]) -> Callable[[], Any]:
        if req["op"] == "reset":
            return _reset(req, fds)

        def go() -> None:
            _environ(req, fds)
            _open_channel()
            sys.argv = ["pytest", *args]
            sys.orig_argv = [sys.orig_argv[0], "-m", "pytest", *args]
            try:
                runpy.run_module("pytest", run_name="__main__", alter_sys=True)
                code: object = 0
            except SystemExit as exc:
                code = exc.code
            _exit(code)

        return go

    child = serve(sock, run)
    if child is None:
        sys.exit(0)
    child()


def subject_main(main: Callable[[], int]) -> int:
    """The subject zygote (``subject.py`` with ``PATCHGATE_ZYGOTE_FD``); a forked subject runs
    ``main`` and returns its status, the zygote returns 0 when the batch ends (3 unfit)."""
    sock = _start(lambda: None)
    if sock is None:
        return 3

    def run(req: dict[str, Any], fds: list[int]) -> Callable[[], Any]:
        if req["op"] == "reset":
            return _reset(req, fds)

        def go() -> int:
            _environ(req, fds)
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
    sock = _start(lambda: None)
    if sock is None:
        return 3
    child = serve(sock, _reset, ops=("reset",))
    return 0 if child is None else int(child())


# -- the reset -------------------------------------------------------------------------------
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


def warm_main() -> int:
    """``python -I zygote.py warm``, at set-up on a writable environment: pytest's own cache of
    rewritten modules (``__pycache__/*.pyc`` with pytest's tag, which pytest checks against the
    source's mtime and size) written for the ``pytest11`` entry points' distributions, by the
    imports the judge's zygote makes. Every sandbox mounts that environment read-only, so
    without it each sandbox's zygote (and each fresh judge) rewrites Hypothesis again: ~0.8 s
    here. Only the environment's own modules are written; a workspace's never are."""
    if sys.dont_write_bytecode:
        print("zygote.py warm: bytecode writing is off (run it with python -I)", file=sys.stderr)
        return 1
    _prepare_judge(["-p", "patchgate_reporter"])  # the entry points a judge loads
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["warm"]:
        sys.exit(warm_main())
    if sys.argv[1:] == ["resets"] and os.environ.get(ZYGOTE_ENV):
        sys.exit(resets_main())
    if sys.argv[1:2] != ["reset"]:
        print("usage: zygote.py reset [--ipc] DIR... | zygote.py warm", file=sys.stderr)
        sys.exit(64)
    sys.exit(reset_main(sys.argv[1:]))
