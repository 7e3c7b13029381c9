"""The judge's zygote: pytest warmed once for a mutation batch, and collected once.

The one module that touches ``_pytest`` internals. It imports pytest, its plugins and the gate's
judge-side modules ahead (``judge_main``), configures pytest and starts its session once, and
may collect the batch's test modules once against a collection subject (``_collect_once``);
each variant's judge is then forked from there by ``zygote.py``'s fork server. ``warm_main`` is
set-up's ``zygote.py warm``. Protocol: docs/reference/inside-wire.md, "Zygotes".
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import socket
import sys
import threading
import types
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["judge_main", "warm_main"]


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
    from executord.inside import reset, zygote
else:
    zygote = _load("zygote")
    reset = _load("reset")


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
        raise zygote.Unfit(f"pytest warned in the zygote: {warning}")


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
            raise zygote.Unfit(f"the inside module {stem} is not there")
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
    zygote ``zygote.Unfit``: a half-configured pytest (conftests imported, plugins registered) is no
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
    production = [str(n) for n in json.loads(os.environ.get(zygote.PRODUCTION_ENV) or "[]")]
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
        why = f"pytest could not be configured once: {type(exc).__name__}: {exc}"
        raise zygote.Unfit(why) from exc
    finally:
        for name in ("PATCHGATE_JUDGE_DEFERRED", "PATCHGATE_JUDGE_CONFIG"):
            os.environ.pop(name, None)
    return config


def _owned_now() -> list[str]:
    """What this zygote's uid owns where the reset between runs removes it (``RESET_ENV``)."""
    args = [str(a) for a in json.loads(os.environ.get(zygote.RESET_ENV) or "[]")]
    dirs = [a for a in args if a != "--ipc"]
    return reset.leftovers(dirs, os.getuid(), ipc="--ipc" in args)


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
    """Run pytest's ``pytest_cmdline_main`` here, and zygote.serve from inside it: pytest's own
    ``wrap_session`` runs ``pytest_configure`` and ``pytest_sessionstart`` once, in the zygote,
    then calls ``_pytest.main._main``, which is this zygote's zygote.serve loop for that one call. A
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
                return zygote.reset_run(req, fds)
            if req["op"] == "collect":
                return lambda: _collect_once(cfg, session, real, req, fds)

            def go() -> Any:
                zygote.environ(req, fds)
                _open_channel()
                _bind_run(cfg)
                return real(cfg, session)

            return go

        if not zygote.ready(sock, checks):
            os._exit(3)
        child = zygote.serve(sock, run, ("fork", "reset", "collect"))
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
        zygote.send(sock, {"error": f"unfit: {why}"})
        return 3
    sys.stdout.flush()
    return int(ret)


def _collect_once(cfg: Any, session: Any, real: Any, req: dict[str, Any], fds: list[int]) -> Any:
    """The collecting zygote (forked by the judge's zygote for ``{"op": "collect"}``, its own
    control socket and the link to a collection subject in the request): collect once, against
    that subject, noting every message on the link; then zygote.serve forks of its own. A judge it
    forks replays those messages to its run's subject (``patchgate_judge.relink``): when every
    answer is the collection subject's, the judge is where a fresh collection against this
    subject would have left it, and it runs the tests of its own batch; at the first difference
    it becomes a fresh pytest on the same channels (``_fresh``). Returns, in a forked judge, what
    pytest's ``_main`` returns; the zygote itself never returns."""
    zygote.environ(req, fds)
    sock = zygote.control_socket()
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
            raise zygote.Unfit(f"the collection failed ({session.testsfailed} errors)")
        _nothing_left("collecting", before)
    except Exception as exc:  # any failure makes this zygote unfit, never a run
        zygote.unfit(sock, exc)
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
            return zygote.reset_run(req, fds)

        def go() -> Any:
            zygote.environ(req, fds)
            env = dict(os.environ)  # this run's, before its channels are taken out of it
            _open_channel()
            if _files_of(files) != imported or not judge.relink(events):
                _fresh(env, fds)
            _bind_run(cfg, linked=True)
            cfg.pluginmanager.register(_Collected(), "patchgate-collected")
            return real(cfg, session)

        return go

    def checks() -> dict[str, Any]:
        zygote.check_clean(production)  # its test modules hold proxies, never production code
        return {"collected": True}

    if not zygote.ready(sock, checks):
        os._exit(3)
    child = zygote.serve(sock, run)
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
    args = [str(a) for a in json.loads(os.environ.get(zygote.ARGS_ENV) or "[]")]
    sock = zygote.control_socket()
    try:
        _prepare_judge(args)
        before = _owned_now()
        config = _configure(args, before)
    except Exception as exc:  # any failure makes the zygote unfit, never a run
        zygote.unfit(sock, exc)
        sys.exit(3)
    if config is not None:  # served from inside pytest's session; returns in a forked judge
        _exit(_in_session(sock, config, before))
    if not zygote.ready(sock, lambda: None):
        sys.exit(3)

    import runpy  # noqa: PLC0415 - judge only

    def run(req: dict[str, Any], fds: list[int]) -> Callable[[], Any]:
        if req["op"] == "reset":
            return zygote.reset_run(req, fds)

        def go() -> None:
            zygote.environ(req, fds)
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

    child = zygote.serve(sock, run)
    if child is None:
        sys.exit(0)
    child()


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
