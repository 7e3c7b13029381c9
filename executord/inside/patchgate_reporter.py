"""patchgate's reporter: streams each test's outcome to the executor as the test ends.

Loaded inside the sandbox with ``-p patchgate_reporter`` from a read-only mount; stdlib and pytest
only, so it runs on the host's Python (image ``host``) and on a named image's Python alike.

``patchgate_channel`` (imported at interpreter start by the mounted ``sitecustomize``, before any
code of the workspace) has already taken the per-run nonce out of the environment and connected
to the executor's report socket; at import this plugin sends a ``start`` record on that
connection. Then one ``item`` record per test as the test ends (after its teardown), and one
``finish`` record with pytest's exit status. Every record is one JSON line carrying the nonce and
a sequence number. The executor keeps the first record per test; what was sent cannot be taken
back.

With a list of target code ranges (``targets.json`` beside the socket), each test's call phase
runs under a ``sys.setprofile`` hook that notes which targets had a Python-level call: a code
object whose file is the target's file and whose first line lies in the target's line range.

In a batched run (``batch.json`` beside the socket: the per-property clock bound and the order of
the run's node ids) the plugin puts the collected items in that order (last of every
``pytest_collection_modifyitems``), and arms a ``SIGALRM`` timer of the bound from each test's
start to its end: past it the test is interrupted with ``ClockBoundExceeded`` (a
``BaseException``, so ``except Exception`` does not swallow it), reported ``exceeded_bound``, and
the next test goes on. A test that took longer than the bound is ``exceeded_bound`` whether or not
the alarm got through; one that blocks the alarm for good is ended by the sandbox's deadline.
A batch file may also name the node ids to ``run`` (a mutation variant's run: the covering
properties'): every other collected item is deselected after the ordering — the run still
collects every test module of the batch, as the suite's run did.

In a judged run (issue 20; ``patchgate_channel.JUDGED``) production code runs in the subject, not
here: the records go to the supervisor (which stamps and relays them), a ``begin`` record marks
each test's start for the supervisor's clock, and an uncaught exception marked as the subject's
(``_patchgate_subject``, set by the judge's proxies whatever its type) or a construct the judge
cannot judge (``_patchgate_unjudgeable``: comparing a handle, assigning to a production module)
makes the test ``error``, never ``fail``: an ``AssertionError`` raised inside production code is
not the predicate failing.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Generator
from types import FrameType
from typing import Any

import pytest

# The run's channel, opened at interpreter start by the mounted ``sitecustomize`` (or now, when
# the interpreter skipped it); a top-level module of the same mount, hence the dynamic import.
_boot = importlib.import_module("patchgate_channel")

MAX_FAILURE_CHARS = 4096
_MARKER_PLUGIN = "patchgate"
_MARKER_LINE = (  # the same text as patchgate.pytest_plugin.MARKER_LINE (a test holds them equal)
    "patchgate(claim, kind, covers, id): a property pinned by "
    "'patchgate pin properties --from-pytest' (kind: pure_fn, idempotent_io, bounded_time or "
    "external_probe; covers: qualified symbol names; id: optional property id)"
)
_TAIL_LINES = 30
_SKIPS = (pytest.skip.Exception, pytest.xfail.Exception)
UNJUDGEABLE_MARK = "_patchgate_unjudgeable"  # set by the judge's proxies (proxies.Unjudgeable)


class ClockBoundExceeded(BaseException):
    """Raised into a test by the per-test alarm of a batched run."""


def _covers(arg: str, nodeid: str) -> bool:
    """The executor's rule (``executord.runs.records``): ``nodeid`` is ``arg`` or lies under it."""
    if nodeid == arg or nodeid.startswith((arg + "[", arg + "::")):
        return True
    return "::" not in arg and nodeid.startswith(arg.rstrip("/") + "/")


class _Batch:
    """The batch settings: the clock bound per test and the order of the node ids."""

    def __init__(self, path: str) -> None:
        self.bound_s = 0.0
        self.order: list[str] = []
        self.run: list[str] = []  # empty: every collected item runs
        self._index: dict[str, int] = {}
        self._run: _Batch | None = None
        if not path:
            return
        try:
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
            self.bound_s = max(0.0, int(raw["bound_ms"]) / 1000)
            self.order = [str(n) for n in raw["order"]]
            self.run = [str(n) for n in raw.get("run") or ()]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return

    def selected(self, nodeid: str) -> bool:
        """Whether ``nodeid`` runs: covered by one of ``run`` (every item without a ``run``)."""
        if not self.run:
            return True
        if self._run is None:
            self._run = _Batch("")
            self._run.order = self.run
        return self._run.rank(nodeid) < len(self.run)

    def rank(self, nodeid: str) -> int:
        """The position of the most specific node id argument that covers ``nodeid`` (a dict
        lookup per candidate: the item itself, without its parameters, each enclosing class or
        module, each enclosing directory), else after every argument."""
        if not self._index:
            self._index = {}
            for i, arg in enumerate(self.order):
                self._index.setdefault(arg.rstrip("/") if "::" not in arg else arg, i)
        base = nodeid.split("[", 1)[0]
        parts = base.split("::")
        segs = parts[0].split("/")
        for cand in (
            nodeid,
            base,
            *("::".join(parts[:k]) for k in range(len(parts) - 1, 0, -1)),
            *("/".join(segs[:k]) for k in range(len(segs) - 1, 0, -1)),
        ):
            at = self._index.get(cand)
            if at is not None and _covers(self.order[at], nodeid):
                return at
        return len(self.order)


class _Targets:
    """Target code ranges by absolute file; which of them a test's calls entered."""

    def __init__(self, path: str) -> None:
        self.by_file: dict[str, list[tuple[int, int, str]]] = {}
        self.hit: set[str] = set()
        self._seen: dict[Any, str | None] = {}
        if not path:
            return
        try:
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except (OSError, ValueError):
            return
        root = os.getcwd()
        for t in raw if isinstance(raw, list) else []:
            try:
                f = os.path.realpath(os.path.join(root, str(t["path"])))
                self.by_file.setdefault(f, []).append((int(t["first"]), int(t["last"]), t["name"]))
            except (KeyError, TypeError, ValueError):
                continue

    def _name(self, code: Any) -> str | None:
        try:
            return self._seen[code]
        except KeyError:
            pass
        name = None
        ranges = self.by_file.get(os.path.realpath(code.co_filename))
        for first, last, qual in ranges or ():
            if first <= code.co_firstlineno <= last:
                name = qual
                break
        self._seen[code] = name
        return name

    def profile(self, frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            name = self._name(frame.f_code)
            if name is not None:
                self.hit.add(name)


def _failure_text(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and str(getattr(crash, "message", None) or ""):
        text = str(crash.message)
    elif isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])  # (path, line, reason) of a skip
    else:
        text = "\n".join(str(longrepr).splitlines()[-_TAIL_LINES:])
    if report.when != "call":
        text = f"{report.when}: {text}"
    return text[:MAX_FAILURE_CHARS]


# Failure kinds (docs/mutation.md: a kill is the predicate's failure). The judge branch's reporter
# sets them from the subject marker alone; this single-process reporter also reads where the
# exception was raised, since production code runs in the same process.
FAILURE_KINDS = ("predicate", "subject", "judge_error")
_TEST_DIRS = frozenset({"tests", "test", "testing"})


def _test_side(path: str, test_files: frozenset[str]) -> bool:
    """Whether ``path`` (real, absolute) is the tests' own: a collected test module, a conftest,
    a ``test_*.py``/``*_test.py`` file or anything under a ``tests``/``test``/``testing`` dir."""
    name = os.path.basename(path)
    if path in test_files or name == "conftest.py":
        return True
    if name.startswith("test_") or name.endswith("_test.py"):
        return True
    return bool(_TEST_DIRS.intersection(path.split(os.sep)[:-1]))


def failure_kind(exc: BaseException, tb: Any, test_files: frozenset[str], root: str) -> str:
    """``predicate``, ``subject`` or ``judge_error`` for an exception that failed a test.

    ``subject``: the exception carries the judge's subject marker (``_patchgate_subject``), or the
    innermost traceback frame inside the workspace ``root`` lies in a production file (not the
    tests' own, :func:`_test_side`), whatever its type — an ``AssertionError`` of production code
    included. Otherwise ``predicate`` when it is the test's own failure (``AssertionError``,
    ``pytest.fail``, ``pytest.raises``'s "DID NOT RAISE"), else ``judge_error`` (``None >= 0`` in
    the test). Frames outside the workspace (the standard library, pytest) decide nothing.
    """
    if getattr(exc, "_patchgate_subject", False) is True:
        return "subject"
    decider = ""
    while tb is not None:
        try:
            path = os.path.realpath(tb.tb_frame.f_code.co_filename)
        except (AttributeError, OSError, ValueError):
            path = ""
        if path.startswith(root + os.sep):
            decider = path
        tb = tb.tb_next
    if decider and not _test_side(decider, test_files):
        return "subject"
    if isinstance(exc, (AssertionError, pytest.fail.Exception)):
        return "predicate"
    return "judge_error"


# The output area: each test gets its own directory, named from its node id, in $PATCHGATE_OUTPUT
# while it runs; its tree is hashed when the test ends (an idempotent_io property's two applies
# must leave the same tree). Hashed inside the sandbox: an integrity signal, not a boundary.
OUTPUT_ROOT = os.path.join(tempfile.gettempdir(), "patchgate-output")
_TREE_MAX_ENTRIES = 10_000
_TREE_MAX_BYTES = 256 << 20


def _output_dir(nodeid: str) -> str:
    return os.path.join(OUTPUT_ROOT, hashlib.sha256(nodeid.encode()).hexdigest()[:16])


def _drop_if_empty(out: str) -> None:
    """A test's output area that it left empty is removed when the test ends (hashed first:
    an empty area and none hash alike), and the output root with it when no other area is
    there, so a run that wrote nothing leaves nothing of its uid for the reset between mutation
    variants to remove (``rmdir`` removes an empty directory only)."""
    for path in (out, OUTPUT_ROOT):
        try:
            os.rmdir(path)
        except OSError:
            return


def tree_hash(root: str) -> str:
    """sha256 hex of the tree under ``root`` (paths, kinds, bytes, link targets; links never
    followed); "" when it is larger than the caps (not measured)."""
    lines: list[str] = []
    budget = [_TREE_MAX_ENTRIES, _TREE_MAX_BYTES]

    def walk(path: str, rel: str) -> bool:
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return True
        for e in entries:
            budget[0] -= 1
            if budget[0] < 0:
                return False
            name = f"{rel}/{e.name}" if rel else e.name
            mode = e.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                lines.append(f"l {name!r} {os.readlink(e.path)!r}")
            elif stat.S_ISDIR(mode):
                lines.append(f"d {name!r}")
                if not walk(e.path, name):
                    return False
            elif stat.S_ISREG(mode):
                digest, size = _file_hash(e.path, budget)
                if size < 0:
                    return False
                lines.append(f"f {name!r} {digest} {size}")
            else:
                lines.append(f"o {name!r}")
        return True

    if not walk(root, ""):
        return ""
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


def _file_hash(path: str, budget: list[int]) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    try:
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        )
    except OSError:
        return "unreadable", 0
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(1 << 16):
            size += len(chunk)
            budget[1] -= len(chunk)
            if budget[1] < 0:
                return "", -1
            h.update(chunk)
    return h.hexdigest(), size


class _Reporter:
    def __init__(self) -> None:
        self._prefix = ""
        self._root = os.path.realpath(os.getcwd())
        self.bind()

    def bind(self) -> None:
        """This process's channel, targets and batch, and a run's state; sends ``start``."""
        self.targets = _Targets(_boot.TARGETS)
        self.channel = _boot.CHANNEL
        self.channel.send("start", plugin=os.path.abspath(__file__), pid=os.getpid())
        self._phases: dict[str, list[pytest.TestReport]] = {}
        self._started: dict[str, float] = {}
        self._executed: dict[str, set[str]] = {}
        self._raised: dict[str, str] = {}  # what the test function raised, as seen around it
        self.batch = _Batch(getattr(_boot, "BATCH", ""))
        self._running = ""  # the node id the alarm is armed for
        self._fired: set[str] = set()
        self._forced: set[str] = set()  # node ids whose failure cannot be a predicate's: error
        self._kinds: dict[str, str] = {}  # node id -> the kind of its first failure

    def _alarm(self, _signum: int, _frame: object) -> None:
        if self._running:
            self._fired.add(self._running)
            raise ClockBoundExceeded(f"clock bound {int(self.batch.bound_s * 1000)} ms exceeded")

    def _arm(self, nodeid: str) -> None:
        if self.batch.bound_s > 0:
            self._running = nodeid
            signal.signal(signal.SIGALRM, self._alarm)
            signal.setitimer(signal.ITIMER_REAL, self.batch.bound_s)

    def _disarm(self) -> None:
        if self.batch.bound_s > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self._running = ""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """The executor's order for this run, whatever another plugin did before; with ``run``,
        only the items it names."""
        if self.batch.order:
            items.sort(key=lambda it: self.batch.rank(self._prefix + it.nodeid))
        if self.batch.run:
            keep: list[pytest.Item] = []
            dropped: list[pytest.Item] = []
            for it in items:
                (keep if self.batch.selected(self._prefix + it.nodeid) else dropped).append(it)
            if dropped:
                config.hook.pytest_deselected(items=dropped)
                items[:] = keep

    def configure(self, config: pytest.Config) -> None:
        """Node ids go out relative to the working directory, as the property's argv names them."""
        rel = os.path.relpath(str(config.rootpath), os.getcwd())
        self._prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, None]:
        """Innermost around the test function: what it raised, and which targets it called."""
        profile = self.targets.profile if self.targets.by_file else None
        self.targets.hit = set()
        before = sys.getprofile(), getattr(threading, "getprofile", lambda: None)()
        if profile is not None:
            sys.setprofile(profile)
            threading.setprofile(profile)
        try:
            outcome = yield
        finally:
            if profile is not None:
                sys.setprofile(before[0])
                threading.setprofile(before[1])
                self._executed[item.nodeid] = set(self.targets.hit)
        exc = outcome.excinfo
        if exc is not None and not isinstance(exc[1], _SKIPS):
            self._raised[item.nodeid] = f"{exc[0].__name__}: {exc[1]}"[:MAX_FAILURE_CHARS]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        """The kind of the first failure of each test (setup, call or teardown)."""
        yield
        info = call.excinfo
        if info is None or item.nodeid in self._kinds or isinstance(info.value, _SKIPS):
            return
        own = frozenset({os.path.realpath(str(item.path))})
        self._kinds[item.nodeid] = failure_kind(info.value, info.tb, own, self._root)
        if getattr(_boot, "JUDGED", False):  # production code runs in the subject: the mark decides
            marked = getattr(info.value, "_patchgate_subject", False) is True
            if marked or getattr(info.value, UNJUDGEABLE_MARK, False) is True:
                self._forced.add(item.nodeid)
            elif self._kinds[item.nodeid] == "subject":  # a judge-side helper file of the tree
                own_failure = isinstance(info.value, (AssertionError, pytest.fail.Exception))
                self._kinds[item.nodeid] = "predicate" if own_failure else "judge_error"

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if getattr(_boot, "JUDGED", False):
            self.channel.send("begin", nodeid=self._prefix + nodeid)
        self._started[nodeid] = time.monotonic()
        out = _output_dir(nodeid)
        try:
            os.makedirs(out, exist_ok=True)
            os.environ["PATCHGATE_OUTPUT"] = out
        except OSError:
            os.environ.pop("PATCHGATE_OUTPUT", None)
        self._arm(nodeid)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            text = "\n".join(str(report.longrepr).splitlines()[-_TAIL_LINES:])
            self.channel.send(
                "collect", nodeid=self._prefix + report.nodeid, failure=text[:MAX_FAILURE_CHARS]
            )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._phases.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self._disarm()
        reports = self._phases.pop(nodeid, [])
        outcome, failure = "pass", ""
        for r in reports:
            if r.failed:
                outcome = "fail" if r.when == "call" and outcome == "pass" else "error"
                failure = failure or _failure_text(r)
            elif r.skipped and outcome == "pass":
                outcome, failure = "skip", _failure_text(r)
        if not any(r.when == "call" for r in reports) and outcome == "pass":
            outcome, failure = "error", "the test was never called"
        raised = self._raised.pop(nodeid, None)
        if raised is not None and outcome == "pass":  # a report rewritten after the call
            outcome, failure = "error", f"the test raised {raised} but its report says passed"
        began = self._started.pop(nodeid, time.monotonic())
        took = time.monotonic() - began
        if self.batch.bound_s > 0 and (nodeid in self._fired or took > self.batch.bound_s):
            outcome, failure = "exceeded_bound", ""
        kind = self._kinds.pop(nodeid, "") or "judge_error"  # no exception seen: never called,
        kind = kind if outcome in {"fail", "error"} else ""  # or a report rewritten after it
        forced = nodeid in self._forced
        self._forced.discard(nodeid)
        if outcome == "fail" and forced:  # the code under test raised, or cannot be judged
            outcome = "error"
        self.channel.send(
            "item",
            nodeid=self._prefix + nodeid,
            outcome=outcome,
            failure_kind=kind,
            duration_ms=int(took * 1000),
            failure=failure,
            executed=sorted(self._executed.pop(nodeid, ())),
            tree=tree_hash(_output_dir(nodeid)),
        )
        os.environ.pop("PATCHGATE_OUTPUT", None)
        _drop_if_empty(_output_dir(nodeid))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        yield
        self.channel.send("finish", exitstatus=int(session.exitstatus))

    def pytest_unconfigure(self) -> None:
        self.channel.close()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Block the ``patchgate`` marker plugin's entry point: patchgate itself is not importable in
    a sandbox (an editable install leaves only its entry point visible); the marker is ours."""
    pluginmanager.set_blocked(_MARKER_PLUGIN)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``patchgate`` marker and the reporter object (its hooks run from here on)."""
    config.addinivalue_line("markers", _MARKER_LINE)
    _REPORTER.configure(config)
    config.pluginmanager.register(_REPORTER, "patchgate-reporter-session")


def rebind() -> None:
    """A judge forked by a zygote that started pytest's session (``zygote.py``): the reporter
    made and registered there had no channel; it takes this run's (its pipe, its batch) and
    sends the run's ``start``, as a fresh run's import of this plugin does."""
    _REPORTER.bind()


_REPORTER = _Reporter()
