"""One judge/subject pair's life in the supervisor: both started (forked by their zygotes when
there are some), the judge's records relayed and the subject's executed reports checked, the
clock bound enforced, both reaped and how each ended reported. Standard library only; the
helpers that kill and reap a uid's processes live here too.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

__all__ = [
    "Child",
    "Forked",
    "Lines",
    "Pair",
    "Processes",
    "child_wakeup",
    "close_all",
    "index",
    "kill_all_of",
    "pair_env",
    "reap_all",
    "start_process",
    "subreaper",
    "switched",
    "wait_pid",
]


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
    from executord.inside import wire
else:
    wire = _load("wire")

_SLICE_S = 0.1
_MAX_TARGETS = 4096
_END_GRACE_S = 2.0
_RESET_S = 10.0  # how long the processes of a uid may take to die
_PR_SET_CHILD_SUBREAPER = 36


class Sink(Protocol):
    """Where the records go (the supervisor's ``Out``)."""

    def send(self, rec: dict[str, Any]) -> None: ...


class Processes(Protocol):
    """How a pair's processes start and what else is spared and reaped (the zygote pool)."""

    def launch(self, role: str, env: dict[str, str], fdenv: dict[str, tuple[int, ...]]) -> Child:
        """The role's process, forked by a zygote or started fresh."""
        ...

    def spared(self) -> frozenset[int]:
        """The pids a kill of a uid's processes spares (the zygotes)."""
        ...

    def reaped(self, pid: int, status: int) -> None:
        """``pid`` was reaped with ``status`` (a zygote that ended is dropped)."""
        ...


class Lines:
    """A pipe read as capped lines."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf, self.eof, self.over = fd, bytearray(), False, False

    def read(self) -> list[bytes]:
        try:
            chunk = os.read(self.fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            with contextlib.suppress(OSError):
                os.close(self.fd)
            return []
        self.buf += chunk
        lines = []
        while (cut := self.buf.find(b"\n")) >= 0:
            lines.append(bytes(self.buf[:cut]))
            del self.buf[: cut + 1]
        if len(self.buf) > wire.MAX_RECORD_LINE:
            self.over = True
            self.buf.clear()
        return lines


@dataclass
class Forked:
    """A process a zygote forked (re-parented to us): what of a ``Popen`` the supervisor uses."""

    pid: int
    returncode: int | None = None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)


@dataclass
class Child:
    """A judge or a subject: its process, its uid (None without switched users), how it ended."""

    role: str
    proc: subprocess.Popen[bytes] | Forked
    uid: int | None
    status: int | None = None  # waitpid's exit code (negative: a signal)
    killed: str = ""  # why the supervisor killed it ("" = it was not)


@dataclass
class Pair:
    """One judge and one subject, start to end (``run``), and the relay of their records."""

    cfg: dict[str, Any]
    out: Sink
    procs: Processes
    pending: list[dict[str, Any]] = field(default_factory=list)  # ours, until the judge's start
    started: bool = False
    current: str = ""  # the test the judge is in ("" between tests)
    since: float = 0.0
    garbage: bool = False
    finished: bool = False  # the judge's reporter sent its session's final record
    suspect: str = ""  # the test whose item arrived while the subject was already ending
    children: tuple[Child, ...] = ()  # the pair once spawned

    def emit(self, rec: dict[str, Any]) -> None:
        if self.started:
            self.out.send(rec)
        else:
            self.pending.append(rec)

    def spawn(
        self, variant: tuple[str, bytes] | None = None, batch: str = ""
    ) -> tuple[Child, Child, Lines, Lines]:
        jrep_r, jrep_w = os.pipe()
        sub_env, sub_fdenv, judge_env, judge_fdenv, srep_r = pair_env(self.cfg)
        judge_fdenv["PATCHGATE_REPORT_FD"] = (jrep_w,)
        if variant is not None:  # its own variant only, on an fd it reads and closes at start
            sub_fdenv["PATCHGATE_SUBJECT_VARIANT_FD"] = (variant_fd(*variant),)
            if batch:  # the variant's own batch file: the node ids it runs (its own scope)
                judge_env["PATCHGATE_REPORT_BATCH"] = batch
        try:
            subject = self.procs.launch("subject", sub_env, sub_fdenv)
        finally:
            close_all(sub_fdenv)
        try:
            judge = self.procs.launch("judge", judge_env, judge_fdenv)
        finally:
            close_all(judge_fdenv)
        self.children = (judge, subject)
        return judge, subject, Lines(jrep_r), Lines(srep_r)

    def from_judge(self, line: bytes, subject: Child | None = None) -> None:
        try:
            rec = wire.parse_record(line)
        except wire.WireError:
            print("supervisor: a judge record refused", file=sys.stderr)
            return
        kind = rec["kind"]
        if kind == "begin":
            self.current, self.since = str(rec.get("nodeid", "")), time.monotonic()
            return
        if kind == "item":
            if subject is not None and subject.status is None and dying(subject.proc.pid):
                # It ended during this test, or after the judge's goodbye (which follows the
                # session's final record): the reap, after reading what the judge already wrote,
                # tells the two apart.
                self.suspect = self.suspect or self.current
            self.current = ""
        elif kind == "finish":
            self.finished = True
        self.out.send(rec)
        if kind == "start" and not self.started:
            self.started = True
            for mine in self.pending:
                self.out.send(mine)
            self.pending.clear()

    def from_subject(self, line: bytes) -> None:
        try:
            rec = wire.parse_record(line)
            targets = rec.get("targets")
            ok = (
                rec["kind"] == "executed"
                and rec.get("phase") in ("import", "test")
                and type(rec.get("nodeid")) is str
                and isinstance(targets, list)
                and len(targets) <= _MAX_TARGETS
                and all(type(t) is str for t in targets)
            )
        except wire.WireError:
            ok = False
        if ok:
            self.emit({k: rec[k] for k in ("kind", "phase", "nodeid", "targets")})
        elif not self.garbage:
            self.garbage = True
            why = "a line that is not an executed record"
            self.emit({"kind": "subject", "event": "garbage", "nodeid": self.current,
                       "detail": why, "returncode": None})  # fmt: skip

    # -- children ---------------------------------------------------------------------------

    def kill(self, child: Child, why: str) -> None:
        if child.status is not None or child.killed:
            return
        child.killed = why
        with contextlib.suppress(OSError):
            os.killpg(child.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(child.proc.pid, signal.SIGKILL)
        if child.uid is not None:
            kill_uid(child.uid, self.procs.spared())

    def reap(self, judge: Child, subject: Child, jlines: Lines | None = None) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.procs.reaped(pid, status)
            for child in (judge, subject):
                if pid == child.proc.pid:
                    if child is subject and jlines is not None:
                        self._drain_judge(jlines, subject)  # while its status is still unset
                    child.status = os.waitstatus_to_exitcode(status)
                    child.proc.returncode = child.status
                    if child is subject:
                        self._subject_ended(subject)

    def _drain_judge(self, jlines: Lines, subject: Child) -> None:
        """Every judge record already written, before the subject's end is placed: the subject
        exits when the judge closes the link, after its last item and its session's final
        record, so both are in the pipe by now; an item read here finds the subject ending (a
        zombie not yet reaped) and makes its test the suspect, and the final record says the
        end came after the goodbye."""
        while not jlines.eof and select.select([jlines.fd], [], [], 0)[0]:
            for line in jlines.read():
                self.from_judge(line, subject)

    def _subject_ended(self, subject: Child) -> None:
        code = subject.status
        if subject.killed == "hang":
            return  # already reported when it was killed
        if subject.killed:
            event, detail = "crash", subject.killed
        elif code is not None and code < 0:
            event, detail = "crash", f"killed by signal {-code}"
        else:
            event, detail = "exit", ""
        nodeid = self.suspect or self.current
        if event == "exit" and code == 0 and self.finished and not self.current:
            # Its own end after the judge's goodbye: the judge says goodbye (closing the link)
            # only after its session's final record, which the drain before this has read. Read
            # late under load, the last test's item used to find the subject already gone.
            nodeid = ""
        self.emit({"kind": "subject", "event": event, "nodeid": nodeid, "detail": detail,
                   "returncode": code})  # fmt: skip

    def run(
        self,
        wake: int,
        bound: float,
        deadline: float | None,
        variant: tuple[str, bytes] | None = None,
        batch: str = "",
    ) -> int:
        """One judge and one subject, start to end (with ``variant``: the subject's source, and
        ``batch``, the judge's own batch file when not ""); the judge's exit status."""
        judge, subject, jlines, slines = self.spawn(variant, batch)
        del variant
        grace = max(0, int(self.cfg.get("grace_ms", 2000))) / 1000
        judge_gone_at: float | None = None
        while True:
            readers = [r for r in (jlines, slines) if not r.eof]
            ready, _, _ = select.select([wake, *(r.fd for r in readers)], [], [], _SLICE_S)
            if wake in ready:
                drain(wake)
            for r in readers:
                if r.fd in ready:
                    for line in r.read():
                        if r is jlines:
                            self.from_judge(line, subject)
                        else:
                            self.from_subject(line)
                    if r.over and r is slines:
                        self.from_subject(b"")
            self.reap(judge, subject, jlines)
            now = time.monotonic()
            if deadline is not None and now > deadline:
                self.kill(subject, "the run's deadline")
                self.kill(judge, "hang")
            if bound > 0 and self.current and now - self.since > bound + grace:
                if subject.status is None and not subject.killed:
                    self.kill(subject, "hang")
                    self.emit({"kind": "subject", "event": "hang", "nodeid": self.current,
                               "detail": f"past the clock bound of {int(bound * 1000)} ms",
                               "returncode": None})  # fmt: skip
                if now - self.since > bound + 2 * grace:
                    self.kill(judge, "hang")
            if judge.status is not None:
                judge_gone_at = judge_gone_at or now
                if jlines.eof or now - judge_gone_at > _END_GRACE_S:
                    break
        return self.finish(judge, subject, slines, wake, judge_gone_at or time.monotonic())

    def end_subject_by_uid(self, judge: Child, subject: Child, slines: Lines) -> None:
        """The judge has ended: the subject ends, by its uid, and its report pipe is read to its
        end.

        Every process of the subject's uid but the zygotes is killed once the subject is reaped,
        whether or not it was still running: a child of the subject that left its process group
        and kept the inherited pipes open (its report pipe, its link to the judge) cannot hold
        the pair past the judge's end, nor a batch's later variants. Without a uid of its own (no
        switch: unit tests) the pipe is read for at most ``_END_GRACE_S``, then closed unread.
        """
        self.kill(subject, "it was still running after the judge ended")
        wait_for(subject, judge, self)
        if subject.uid is not None:
            kill_all_of(subject.uid, self.procs.spared())
        until = time.monotonic() + _END_GRACE_S
        while not slines.eof:
            left = until - time.monotonic()
            if left <= 0:
                with contextlib.suppress(OSError):
                    os.close(slines.fd)
                slines.eof = True
                break
            if select.select([slines.fd], [], [], left)[0]:
                for line in slines.read():
                    self.from_subject(line)

    def finish(self, judge: Child, subject: Child, slines: Lines, wake: int, since: float) -> int:
        """The judge has ended: the subject's last words, its end, how the judge ended."""
        while subject.status is None and time.monotonic() - since < _END_GRACE_S:
            fds = [wake] if slines.eof else [wake, slines.fd]
            ready = select.select(fds, [], [], _SLICE_S)[0]
            if wake in ready:
                drain(wake)
            if slines.fd in ready and not slines.eof:
                for line in slines.read():
                    self.from_subject(line)
            self.reap(judge, subject)
        self.current = ""
        self.end_subject_by_uid(judge, subject, slines)
        code = judge.status if judge.status is not None else -signal.SIGKILL
        if judge.killed == "hang":
            event, detail = "hang", "ended by the supervisor past the clock bound or the deadline"
        elif code < 0:
            event, detail = "crash", f"killed by signal {-code}"
        else:
            event, detail = "exit", ""
        self.started = True
        for mine in self.pending:
            self.out.send(mine)
        self.pending.clear()
        self.out.send({"kind": "judge", "event": event, "returncode": code if code >= 0 else None,
                       "detail": detail})  # fmt: skip
        reap_all()
        return code if code >= 0 else 128 - code


_Fds = dict[str, tuple[int, ...]]  # environment variable -> the fds it names


def pair_env(cfg: dict[str, Any]) -> tuple[dict[str, str], _Fds, dict[str, str], _Fds, int]:
    """A judge/subject pair's environments and fds: the call link between them and the
    subject's executed report (our read end last)."""
    j_r, s_w = os.pipe()  # subject -> judge
    s_r, j_w = os.pipe()  # judge -> subject
    srep_r, srep_w = os.pipe()
    prod = cfg.get("production", [])
    caps = cfg.get("caps", {})
    sub_fdenv: dict[str, tuple[int, ...]] = {
        "PATCHGATE_SUBJECT_LINK": (s_r, s_w),
        "PATCHGATE_SUBJECT_REPORT_FD": (srep_w,),
    }
    sub_env = {
        "PATCHGATE_SUBJECT_CONFIG": json.dumps({
            "production": prod, "source_roots": cfg.get("source_roots", []),
            "targets": cfg.get("targets", ""), "caps": caps}),
    }  # fmt: skip
    judge_fdenv: dict[str, tuple[int, ...]] = {"PATCHGATE_JUDGE_LINK": (j_r, j_w)}
    judge_env = {
        "PATCHGATE_JUDGE_CONFIG": json.dumps({
            "production": prod, "call_timeout_ms": cfg.get("call_timeout_ms", 0),
            "caps": caps}),
    }  # fmt: skip
    return sub_env, sub_fdenv, judge_env, judge_fdenv, srep_r


def start_process(
    cfg: dict[str, Any],
    role: str,
    extra: dict[str, str],
    fds: tuple[int, ...],
    argv: list[str] | None = None,
) -> Child:
    """The role's process started fresh (as its uid, with switched users), in a session of its
    own, with ``extra`` in its environment and ``fds`` inherited."""
    r = cfg[role]
    env = {str(k): str(v) for k, v in (r.get("env") or {}).items()}
    env.update(extra)
    switch = switched(cfg)
    ids: dict[str, Any] = {}
    if switch:
        ids = {"user": r["uid"], "group": r["gid"], "extra_groups": list(r.get("groups", []))}
    proc = subprocess.Popen(
        argv or r["argv"], env=env, cwd=r.get("cwd") or None, pass_fds=fds,
        start_new_session=True, stdin=subprocess.DEVNULL, **ids,
    )  # fmt: skip
    return Child(role, proc, r["uid"] if switch else None)


# -- the judge's and the subject's records ----------------------------------------------


def switched(cfg: dict[str, Any]) -> bool:
    """Judge and subject run as two uids of their own (``switch_users``, the default)."""
    return cfg.get("switch_users", True) is True


def child_wakeup() -> int:
    """A pipe SIGCHLD writes to (``signal.set_wakeup_fd``); its read end, for select."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(w)
    return r


def drain(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 4096):
            pass


def dying(pid: int) -> bool:
    """Whether ``pid`` has begun to exit (Linux: state Z/X or PF_EXITING), or is gone: a judge
    that saw the subject's link close may report its test before the subject can be reaped."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return True
    pf_exiting = 0x4
    return fields[0] in (b"Z", b"X") or bool(int(fields[6]) & pf_exiting)


def wait_for(subject: Child, judge: Child, pair: Pair) -> None:
    while subject.status is None:
        pair.reap(judge, subject)
        if subject.status is None:
            time.sleep(0.01)


def close_all(fdenv: dict[str, tuple[int, ...]]) -> None:
    for group in fdenv.values():
        for fd in group:
            with contextlib.suppress(OSError):
                os.close(fd)
    fdenv.clear()


def index(fdenv: dict[str, tuple[int, ...]]) -> dict[str, list[int]]:
    """Each variable's fds as their places in the request's fd list (its ``fdenv``)."""
    index, n = {}, 0
    for name, group in fdenv.items():
        index[name] = list(range(n, n + len(group)))
        n += len(group)
    return index


def subreaper() -> None:
    """Not PID 1 (unit tests): orphans of our children are re-parented to us all the same."""
    import ctypes  # noqa: PLC0415 - unit tests only: PID 1 in a sandbox never loads it
    import ctypes.util  # noqa: PLC0415

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def wait_pid(pid: int, timeout: float) -> int:
    """``pid``'s exit code (waited for, at most ``timeout``; then killed: -9). Woken by the
    process's end through a pidfd where the kernel has them, else polled every 2 ms."""
    try:
        pidfd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        pidfd = -1
    try:
        until = time.monotonic() + timeout
        while True:
            try:
                got, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return -signal.SIGKILL
            if got == pid:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > until:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                timeout, until = 1.0, time.monotonic() + 1.0
            if pidfd >= 0:
                select.select([pidfd], [], [], max(0.0, min(until - time.monotonic(), 0.5)))
            else:
                time.sleep(0.002)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def kill_uid(uid: int, spare: frozenset[int] = frozenset()) -> None:
    """SIGKILL every process of ``uid`` (those that left the session too) but ``spare``."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in spare:
            continue
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{entry}").st_uid == uid:
                os.kill(int(entry), signal.SIGKILL)


def kill_all_of(uid: int, spare: frozenset[int] = frozenset()) -> bool:
    """SIGKILL every process of ``uid`` but ``spare`` until none is left (reaped, as PID 1);
    False when some outlived ``_RESET_S``."""
    until = time.monotonic() + _RESET_S
    while time.monotonic() < until:
        kill_uid(uid, spare)
        reap_all()
        if not uid_alive(uid, spare):
            return True
        time.sleep(0.01)
    return False


def uid_alive(uid: int, spare: frozenset[int] = frozenset()) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in spare:
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    return True
    return False


def variant_fd(path: str, source: bytes) -> int:
    """An fd holding ``{"path": path}\n`` then ``source``, read from its start: a memfd (no
    name in any filesystem), else a pipe a thread fills."""
    data = json.dumps({"path": path}).encode() + b"\n" + source
    try:
        fd = os.memfd_create("patchgate-variant")
    except (AttributeError, OSError):
        r, w = os.pipe()

        def fill() -> None:
            with contextlib.suppress(OSError):
                wire.write_all(w, data)
            with contextlib.suppress(OSError):
                os.close(w)

        threading.Thread(target=fill, daemon=True).start()
        return r
    wire.write_all(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def reap_all() -> None:
    """Reap what is left (as PID 1: orphans re-parented to us), without waiting on the living."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
