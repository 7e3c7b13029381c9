"""The supervisor: PID 1 of a judged sandbox run; it starts the judge and the subject apart.

Standard library only; run as ``python -I supervisor.py CONFIG`` as the container's uid 0 holding
only CAP_SETUID, CAP_SETGID and CAP_KILL. ``wire.py`` documents the config, the pipes and the
records. In order:

1. read the config; take the nonce (config, else ``PATCHGATE_REPORT_NONCE``, removed from the
   environment the children inherit);
2. connect to the executor's report socket, BEFORE any child exists (the executor reads only the
   first connection);
3. make the pipes and start the subject, then the judge, each as its own uid, gid and groups
   (``Popen(user=, group=, extra_groups=)``: setgroups, setgid, setuid in the child before exec,
   which drops every capability), each in its own session; a child inherits only its own pipe ends;
4. relay the judge's records (stamped with the nonce and one sequence) and add its own: the
   subject's executed report, the subject ending (``exit``/``crash``) or being killed past the
   clock bound (``hang``), and last how the judge ended;
5. enforce the per-test clock bound (a ``begin`` record starts a test's clock, its ``item`` ends
   it): past bound + grace the subject is killed (``hang``); past bound + 2 grace the judge too;
   past the run's deadline everything;
6. reap every child (as PID 1, orphans too) and exit with the judge's exit status.

With ``variants`` (mutation v2, ``wire.py`` "Variants"), steps 3 to 6 run once per variant, each
pair after a ``variant`` record and with only its own variant's source on an inherited fd, and
between pairs (and after the last) the reset: both roles' processes killed, then the reset helper
(``zygote.py reset``) as each role's uid, unless the supervisor, reading the reset directories
and SysV tables itself, is certain that uid left nothing there (``zygote.py``'s
``reset_needed``). With ``zygotes`` each role's processes are forked
from one zygote per role started before the first variant (``zygote.py``), and its resets from a
lean zygote of the role (``zygote.py resets``, started at the role's first reset that is needed;
else the role's zygote): the kills between pairs
spare the zygotes, by pid; a zygote that fails is dropped and what it forked starts another way
(the role's zygote, else fresh). When the judge's zygote started pytest's session, a collecting
zygote is forked from it against a collection subject (``start_collecting``), the reset runs
once before the first variant, and judges are forked by the collecting zygote.

Nothing the subject writes is relayed as an outcome: from the subject the supervisor reads only
its executed report, and refuses anything else on that pipe (``garbage``).

``switch_users: false`` is for unit tests only (the config must also say ``test_only: true``):
the children then run as the supervisor's own uid.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["Supervisor", "main"]

_ZYGOTE_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")


def _load(stem: str) -> ModuleType:
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


def _zygote() -> ModuleType:
    """``zygote.py``, loaded by the one run that starts zygotes (a mutation stage's variants):
    every other run's supervisor, PID 1 before judge and subject start, does without its imports.
    """
    return _load("zygote")


_SLICE_S = 0.1
_MAX_TARGETS = 4096
_END_GRACE_S = 2.0
_RESET_S = 10.0
_ROLE = frozenset({"argv", "uid", "gid", "groups", "env", "cwd"})
_ZYGOTE_S = 60.0  # a zygote's start (pytest and its plugins imported), at most
_FORK_S = 10.0  # a zygote's answer to a fork, at most
_PR_SET_CHILD_SUBREAPER = 36


class ConfigError(ValueError):
    """The supervisor's config is unusable (the run has no report: ``error``)."""


def load_config(path: str) -> dict[str, Any]:
    """The config, checked: known keys, the two roles' shapes, test-only rules."""
    try:
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the supervisor config: {exc}") from exc
    if not isinstance(cfg, dict) or cfg.get("v") != 1:
        raise ConfigError("the supervisor config is not a v1 object")
    unknown = set(cfg) - wire.CONFIG_KEYS
    if unknown:
        raise ConfigError(f"unknown supervisor config keys: {sorted(unknown)}")
    for role in ("judge", "subject"):
        r = cfg.get(role)
        if not isinstance(r, dict) or set(r) - _ROLE or not r.get("argv"):
            raise ConfigError(f"the {role} entry is malformed")
        if not all(type(a) is str for a in r["argv"]):
            raise ConfigError(f"the {role} argv is not a list of text")
    switch = cfg.get("switch_users", True)
    if switch is not True and not (switch is False and cfg.get("test_only") is True):
        raise ConfigError("switch_users may be false only in a config marked test_only")
    if type(cfg.get("socket")) is not str or not cfg["socket"]:
        raise ConfigError("the config names no report socket")
    if switch is True:
        uids = {cfg["judge"].get("uid"), cfg["subject"].get("uid")}
        if len(uids) != 2 or not all(type(u) is int and u > 0 for u in uids):
            raise ConfigError("judge and subject need two distinct non-root uids")
    _check_variants(cfg)
    return cfg


def _check_variants(cfg: dict[str, Any]) -> None:
    variants = cfg.get("variants", [])
    if not isinstance(variants, list):
        raise ConfigError("variants is not a list")
    for v in variants:
        if (
            not isinstance(v, dict)
            or not {"path", "offset", "size"} <= set(v) <= {"path", "offset", "size", "batch"}
            or type(v["path"]) is not str
            or not all(type(v[k]) is int and v[k] >= 0 for k in ("offset", "size"))
            or (type(v.get("batch", "/")) is not str or not v.get("batch", "/").startswith("/"))
        ):
            raise ConfigError("a malformed variant entry")
    if variants and (type(cfg.get("variants_file")) is not str or not cfg["variants_file"]):
        raise ConfigError("variants without a variants file")
    if type(cfg.get("zygotes", False)) is not bool:
        raise ConfigError("zygotes is not a bool")
    dirs = cfg.get("reset_dirs", [])
    if not isinstance(dirs, list) or not all(type(d) is str and d.startswith("/") for d in dirs):
        raise ConfigError("reset_dirs is not a list of absolute paths")


class Out:
    """The records to the executor: one stamped JSON line each, never raising."""

    def __init__(self, path: str, nonce: str) -> None:
        self.nonce, self.seq = nonce, 0
        self.sock: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)  # before any child exists; OSError ends the run here
        except OSError:
            self.sock.close()
            raise

    def send(self, rec: dict[str, Any]) -> None:
        body = {k: v for k, v in rec.items() if k not in ("v", "nonce", "seq")}
        stamped = {"v": 1, "nonce": self.nonce, "seq": self.seq, **body}
        try:
            line = wire.record_line(stamped)
        except (wire.WireError, TypeError, ValueError):
            return
        self.seq += 1
        if self.sock is None:
            return
        try:
            self.sock.sendall(line)
        except OSError:
            self.close()

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.sock = None


class _Lines:
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
class _Forked:
    """A process a zygote forked (re-parented to us): what of a ``Popen`` the supervisor uses."""

    pid: int
    returncode: int | None = None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)


@dataclass
class _Zygote:
    """One role's zygote: its process and our end of its control socket."""

    proc: subprocess.Popen[bytes] | _Forked
    sock: socket.socket

    def request(self, doc: dict[str, Any], fds: tuple[int, ...] = ()) -> dict[str, Any]:
        """Send one request; its answer, ``OSError`` when there is none in time."""
        socket.send_fds(self.sock, [json.dumps(doc).encode()], list(fds))
        return self.answer(_FORK_S)

    def answer(self, timeout: float) -> dict[str, Any]:
        if not select.select([self.sock], [], [], timeout)[0]:
            raise OSError("the zygote did not answer in time")
        data = self.sock.recv(1 << 16)
        if not data:
            raise OSError("the zygote ended")
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise OSError("the zygote's answer is not JSON") from exc
        if not isinstance(doc, dict):
            raise OSError("the zygote's answer is not an object")
        return doc

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(OSError):
            self.proc.kill()


@dataclass
class _Child:
    role: str
    proc: subprocess.Popen[bytes] | _Forked
    uid: int | None
    status: int | None = None  # waitpid's exit code (negative: a signal)
    killed: str = ""  # why the supervisor killed it ("" = it was not)


@dataclass
class Supervisor:
    """One run: the two children, the relay, the clock (see the module doc)."""

    cfg: dict[str, Any]
    out: Out
    pending: list[dict[str, Any]] = field(default_factory=list)  # ours, until the judge's start
    started: bool = False
    current: str = ""  # the test the judge is in ("" between tests)
    since: float = 0.0
    garbage: bool = False
    finished: bool = False  # the judge's reporter sent its session's final record
    suspect: str = ""  # the test whose item arrived while the subject was already ending
    children: tuple[_Child, ...] = ()  # the pair running (or last run)
    zygotes: dict[str, _Zygote] = field(default_factory=dict)  # role -> its zygote (variants)
    unfit: list[str] = field(default_factory=list)  # why a zygote was dropped (stderr)
    forks: dict[str, int] = field(default_factory=dict)  # role -> processes its zygote forked
    resets_skipped: dict[str, int] = field(default_factory=dict)  # role -> resets not needed
    lean: dict[str, bool] = field(default_factory=dict)  # role -> its lean zygote was started
    configured: bool = False  # the judge's zygote configured pytest and started its session

    def emit(self, rec: dict[str, Any]) -> None:
        if self.started:
            self.out.send(rec)
        else:
            self.pending.append(rec)

    def spawn(
        self, variant: tuple[str, bytes] | None = None, batch: str = ""
    ) -> tuple[_Child, _Child, _Lines, _Lines]:
        jrep_r, jrep_w = os.pipe()
        sub_env, sub_fdenv, judge_env, judge_fdenv, srep_r = self._pair_env()
        judge_fdenv["PATCHGATE_REPORT_FD"] = (jrep_w,)
        if variant is not None:  # its own variant only, on an fd it reads and closes at start
            sub_fdenv["PATCHGATE_SUBJECT_VARIANT_FD"] = (_variant_fd(*variant),)
            if batch:  # the variant's own batch file: the node ids it runs (its own scope)
                judge_env["PATCHGATE_REPORT_BATCH"] = batch
        try:
            subject = self._launch("subject", sub_env, sub_fdenv)
        finally:
            _close_all(sub_fdenv)
        try:
            judge = self._launch("judge", judge_env, judge_fdenv)
        finally:
            _close_all(judge_fdenv)
        self.children = (judge, subject)
        return judge, subject, _Lines(jrep_r), _Lines(srep_r)

    def _pair_env(
        self,
    ) -> tuple[dict[str, str], dict[str, tuple[int, ...]], dict[str, str],
               dict[str, tuple[int, ...]], int]:  # fmt: skip
        """A judge/subject pair's environments and fds: the call link between them and the
        subject's executed report (our read end last)."""
        j_r, s_w = os.pipe()  # subject -> judge
        s_r, j_w = os.pipe()  # judge -> subject
        srep_r, srep_w = os.pipe()
        prod = self.cfg.get("production", [])
        caps = self.cfg.get("caps", {})
        sub_fdenv: dict[str, tuple[int, ...]] = {
            "PATCHGATE_SUBJECT_LINK": (s_r, s_w),
            "PATCHGATE_SUBJECT_REPORT_FD": (srep_w,),
        }
        sub_env = {
            "PATCHGATE_SUBJECT_CONFIG": json.dumps({
                "production": prod, "source_roots": self.cfg.get("source_roots", []),
                "targets": self.cfg.get("targets", ""), "caps": caps}),
        }  # fmt: skip
        judge_fdenv: dict[str, tuple[int, ...]] = {"PATCHGATE_JUDGE_LINK": (j_r, j_w)}
        judge_env = {
            "PATCHGATE_JUDGE_CONFIG": json.dumps({
                "production": prod, "call_timeout_ms": self.cfg.get("call_timeout_ms", 0),
                "caps": caps}),
        }  # fmt: skip
        return sub_env, sub_fdenv, judge_env, judge_fdenv, srep_r

    def _launch(self, role: str, env: dict[str, str], fdenv: dict[str, tuple[int, ...]]) -> _Child:
        """The role's process: forked by its zygote when there is one (a judge by the zygote
        that collected once, when there is that one), else started fresh."""
        fds = tuple(fd for group in fdenv.values() for fd in group)
        for key in (_COLLECTED, role) if role == "judge" else (role,):
            if key not in self.zygotes:
                continue
            pid = self._zygote_fork(key, {"op": "fork", "env": env, "fdenv": _index(fdenv)}, fds)
            if pid is not None:
                uid = self.cfg[role]["uid"] if self._switch() else None
                return _Child(role, _Forked(pid), uid)
        extra = {**env, **{k: ",".join(str(fd) for fd in g) for k, g in fdenv.items()}}
        return self._start(role, extra, fds)

    def start_collecting(self) -> None:
        """The zygote that collects once (``zygote.py``, ``_collect_once``): forked by the
        judge's zygote, once its session started, with a link to a collection subject (forked
        by the subject's zygote, every production module from disk, as no variant); it collects
        against that subject, which then ends, and serves the batch's judges. Not there (noted)
        when it could not start or collect; the run's reset follows either way."""
        sub_env, sub_fdenv, judge_env, judge_fdenv, srep_r = self._pair_env()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        judge_fdenv[_zygote().ZYGOTE_ENV] = (theirs.detach(),)
        subject: _Child | None = None
        z: _Zygote | None = None
        try:
            subject = self._launch("subject", sub_env, sub_fdenv)
            _close_all(sub_fdenv)
            doc = {"op": "collect", "env": judge_env, "fdenv": _index(judge_fdenv)}
            fds = tuple(fd for group in judge_fdenv.values() for fd in group)
            pid = self._zygote_fork("judge", doc, fds)
            _close_all(judge_fdenv)
            if pid is None:
                raise OSError("the judge's zygote did not fork it")
            z = _Zygote(_Forked(pid), ours)
            got = z.answer(_ZYGOTE_S)
            if got.get("ready") is not True:
                raise OSError(str(got.get("error") or "not ready"))
            self.zygotes[_COLLECTED] = z
        except OSError as exc:
            if z is not None:
                z.close()  # its socket (ours) and the process
            else:
                ours.close()
            self.unfit.append(f"{_COLLECTED}: {exc}")
        finally:
            _close_all(sub_fdenv)
            _close_all(judge_fdenv)
            if subject is not None:
                with contextlib.suppress(OSError):
                    os.kill(subject.proc.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.close(srep_r)

    def _switch(self) -> bool:
        return self.cfg.get("switch_users", True) is True

    def _zygote_fork(self, key: str, doc: dict[str, Any], fds: tuple[int, ...]) -> int | None:
        """The pid the zygote ``key`` (a role, or its resets zygote) forked for ``doc``,
        re-parented to us; None (the zygote dropped) when it did not answer with one."""
        z, role = self.zygotes[key], _role_of(key)
        try:
            got = z.request(doc, fds)
            pid = got.get("pid")
            if type(pid) is not int or pid <= 1 or not self._mine(pid, role):
                raise OSError(str(got.get("error") or f"not a process of the {role}'s: {pid!r}"))
        except OSError as exc:
            self.drop_zygote(key, str(exc))
            if self._switch():  # a process it forked after all holds this run's fds: none may live
                _kill_all_of(self.cfg[role]["uid"], self.spared())
            return None
        self.forks[key] = self.forks.get(key, 0) + 1
        return pid

    def _mine(self, pid: int, role: str) -> bool:
        """``pid`` is our child (re-parented) and runs as the role's uid."""
        try:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            return False  # gone already would have been reaped by us: not ours
        ppid = fields.get("PPid", "").strip()
        uid = fields.get("Uid", "").split()
        want = self.cfg[role]["uid"] if self._switch() else os.getuid()
        return ppid == str(os.getpid()) and bool(uid) and uid[0] == str(want)

    def start_zygotes(self) -> None:
        """One zygote per role (``zygote.py``), both started before either is waited for (the
        judge's imports pytest and its plugins); a zygote that cannot start is not there (its
        role's processes start another way). A role's lean zygote for its resets starts when
        its first reset is needed (``_start_lean``)."""
        if os.getpid() != 1:
            _subreaper()
        zygote_mod = _zygote()
        starting: list[tuple[str, _Zygote]] = []
        for role in ("subject", "judge"):
            argv = list(self.cfg[role]["argv"])
            env = self._production_env()
            if role == "judge":
                if argv[1:3] != ["-m", "pytest"]:
                    self.unfit.append("judge: its argv is not PY -m pytest ARGS")
                    continue
                env[zygote_mod.ARGS_ENV] = json.dumps(argv[3:])
                env[zygote_mod.RESET_ENV] = json.dumps(self.reset_args(self.cfg[role]))
                env["PATCHGATE_ZYGOTE_FILE"] = _ZYGOTE_PY
                argv = [argv[0], "-c", zygote_mod.BOOT]
            starting += self._spawn_zygote(role, role, argv, env)
        self.lean = {r: False for r in ("subject", "judge")}  # each may start its lean zygote
        for key, got in self._await_ready(starting):
            self.configured = self.configured or (key == "judge" and got.get("configured") is True)
        if self.configured and "subject" in self.zygotes:
            self.start_collecting()

    def _await_ready(self, starting: list[tuple[str, _Zygote]]) -> list[tuple[str, dict[str, Any]]]:
        """Each zygote started that says it is ready, kept (with what it said); the others
        closed and noted."""
        ready = []
        for key, z in starting:
            try:
                got = z.answer(_ZYGOTE_S)
                if got.get("ready") is not True:
                    raise OSError(str(got.get("error") or "not ready"))
            except OSError as exc:
                z.close()
                self.unfit.append(f"{key}: {exc}")
                continue
            self.zygotes[key] = z
            ready.append((key, got))
        return ready

    def _start_lean(self, roles: list[str]) -> None:
        """The lean zygote (``zygote.py resets``: the standard library alone, so its forks are
        cheap) of each of ``roles`` whose first reset is needed now, all started before any is
        waited for; each role's is started once at most (one that dies or is unfit is not
        started again: the role's zygote forks its resets then). Started at the first need, not
        with the zygotes: most variants leave nothing to remove, and two interpreters started
        beside the judge's zygote slowed its start."""
        fresh = [r for r in roles if self.lean.get(r) is False]
        if not fresh:
            return
        argv = [sys.executable, "-I", "-S", _ZYGOTE_PY, "resets"]
        starting: list[tuple[str, _Zygote]] = []
        for role in fresh:
            self.lean[role] = True
            starting += self._spawn_zygote(role + _RESETS, role, argv, self._production_env())
        self._await_ready(starting)

    def _production_env(self) -> dict[str, str]:
        """A zygote's environment of its own: the production top-level names (JSON), which it
        checks it never imported."""
        production = [str(p) for p in self.cfg.get("production", [])]
        return {_zygote().PRODUCTION_ENV: json.dumps(production)}

    def _spawn_zygote(
        self, key: str, role: str, argv: list[str], env: dict[str, str]
    ) -> list[tuple[str, _Zygote]]:
        """The zygote ``key`` started as ``role`` with our end of its control socket (``[]``,
        noted, when it did not start); not waited for."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {**env, _zygote().ZYGOTE_ENV: str(theirs.fileno())}
        try:
            proc = self._start(role, env, (theirs.fileno(),), argv=argv).proc
            if not isinstance(proc, subprocess.Popen):
                raise OSError("not started")
        except OSError as exc:
            ours.close()
            self.unfit.append(f"{key}: {exc}")
            return []
        finally:
            theirs.close()
        return [(key, _Zygote(proc, ours))]

    def drop_zygote(self, role: str, why: str) -> None:
        z = self.zygotes.pop(role, None)
        if z is not None:
            z.close()
            self.unfit.append(f"{role}: {why}")

    def stop_zygotes(self) -> None:
        for role in list(self.zygotes):
            z = self.zygotes.pop(role)
            z.close()
        _reap_all()
        if self.configured:
            print("supervisor: the judge's zygote configured pytest and started its session once",
                  file=sys.stderr)  # fmt: skip
        if self.forks.get(_COLLECTED):
            print(f"supervisor: judges forked after collecting once: {self.forks[_COLLECTED]}",
                  file=sys.stderr)  # fmt: skip
        if self.forks:
            by_role: dict[str, int] = {}
            for key, n in self.forks.items():
                by_role[_role_of(key)] = by_role.get(_role_of(key), 0) + n
            done = ", ".join(f"{r} {n}" for r, n in sorted(by_role.items()))
            print(f"supervisor: forked by the zygotes: {done}", file=sys.stderr)
            lean = ", ".join(f"{_role_of(k)} {n}" for k, n in sorted(self.forks.items())
                             if k.endswith(_RESETS))  # fmt: skip
            if lean:
                print(f"supervisor: resets forked by the lean zygotes: {lean}", file=sys.stderr)
        started = [r for r, yes in sorted(self.lean.items()) if yes]
        if started:
            print(f"supervisor: lean zygotes started for: {', '.join(started)}", file=sys.stderr)
        if self.resets_skipped:
            done = ", ".join(f"{r} {n}" for r, n in sorted(self.resets_skipped.items()))
            print(f"supervisor: resets not needed (nothing of the uid left): {done}",
                  file=sys.stderr)  # fmt: skip
        for why in self.unfit:
            print(f"supervisor: zygote not used: {why}", file=sys.stderr)

    def spared(self) -> frozenset[int]:
        """The zygotes' pids: the kills between pairs spare them (and only them)."""
        return frozenset(z.proc.pid for z in self.zygotes.values())

    def _start(
        self, role: str, extra: dict[str, str], fds: tuple[int, ...], argv: list[str] | None = None
    ) -> _Child:
        r = self.cfg[role]
        env = {str(k): str(v) for k, v in (r.get("env") or {}).items()}
        env.update(extra)
        switch = self._switch()
        ids: dict[str, Any] = {}
        if switch:
            ids = {"user": r["uid"], "group": r["gid"], "extra_groups": list(r.get("groups", []))}
        proc = subprocess.Popen(
            argv or r["argv"], env=env, cwd=r.get("cwd") or None, pass_fds=fds,
            start_new_session=True, stdin=subprocess.DEVNULL, **ids,
        )  # fmt: skip
        return _Child(role, proc, r["uid"] if switch else None)

    # -- the judge's and the subject's records ----------------------------------------------
    def from_judge(self, line: bytes, subject: _Child | None = None) -> None:
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
            if subject is not None and subject.status is None and _dying(subject.proc.pid):
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
    def kill(self, child: _Child, why: str) -> None:
        if child.status is not None or child.killed:
            return
        child.killed = why
        with contextlib.suppress(OSError):
            os.killpg(child.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(child.proc.pid, signal.SIGKILL)
        if child.uid is not None:
            _kill_uid(child.uid, self.spared())

    def reap(self, judge: _Child, subject: _Child, jlines: _Lines | None = None) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for role, z in list(self.zygotes.items()):
                if pid == z.proc.pid:
                    z.proc.returncode = os.waitstatus_to_exitcode(status)
                    self.drop_zygote(role, f"it ended ({z.proc.returncode})")
            for child in (judge, subject):
                if pid == child.proc.pid:
                    if child is subject and jlines is not None:
                        self._drain_judge(jlines, subject)  # while its status is still unset
                    child.status = os.waitstatus_to_exitcode(status)
                    child.proc.returncode = child.status
                    if child is subject:
                        self._subject_ended(subject)

    def _drain_judge(self, jlines: _Lines, subject: _Child) -> None:
        """Every judge record already written, before the subject's end is placed: the subject
        exits when the judge closes the link, after its last item and its session's final
        record, so both are in the pipe by now; an item read here finds the subject ending (a
        zombie not yet reaped) and makes its test the suspect, and the final record says the
        end came after the goodbye."""
        while not jlines.eof and select.select([jlines.fd], [], [], 0)[0]:
            for line in jlines.read():
                self.from_judge(line, subject)

    def _subject_ended(self, subject: _Child) -> None:
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

    def run(self) -> int:
        wake = _child_wakeup()  # SIGCHLD wakes the select: no polling delay at a child's end
        bound_ms = max(0, int(self.cfg.get("bound_ms", 0)))
        deadline_ms = int(self.cfg.get("deadline_ms", 0))
        deadline = time.monotonic() + deadline_ms / 1000 if deadline_ms > 0 else None
        if not self.cfg.get("variants"):
            return self.run_pair(wake, bound_ms / 1000, deadline)
        vbound = max(0, int(self.cfg.get("variant_bound_ms", 0)))
        if vbound:
            bound_ms = min(bound_ms, vbound) if bound_ms else vbound
        return self.run_variants(wake, bound_ms / 1000, deadline)

    def run_variants(self, wake: int, bound: float, deadline: float | None) -> int:
        """One pair per variant, in order, each after its ``variant`` record, reset after each;
        0 when every variant ran, else 1 (the deadline passed, a source unreadable, a reset failed).
        """
        try:
            fh = open(self.cfg["variants_file"], "rb")  # noqa: SIM115 - uid 0's alone, not inherited
        except OSError as exc:
            self.out.send({"kind": "reset", "ok": False, "detail": f"no variants file: {exc}"})
            return 1
        if self.cfg.get("zygotes") is True:
            self.start_zygotes()
        try:
            if self.configured:  # the collection subject ran: the first variant starts clean too
                why = self.reset()
                if why:
                    self.out.send({"kind": "reset", "ok": False, "detail": why[:4000]})
                    return 1
            with fh:
                return self._variants(fh, wake, bound, deadline)
        finally:
            self.stop_zygotes()

    def _variants(self, fh: Any, wake: int, bound: float, deadline: float | None) -> int:
        for n, v in enumerate(self.cfg["variants"], 1):
            if deadline is not None and time.monotonic() > deadline:
                return 1
            try:
                source = os.pread(fh.fileno(), v["size"], v["offset"])
            except OSError:
                source = b""
            if len(source) != v["size"]:
                why = f"the source of variant {n} is unreadable"
                self.out.send({"kind": "reset", "ok": False, "detail": why})
                return 1
            self.out.send({"kind": "variant", "index": n})
            self.run_pair(wake, bound, deadline, (v["path"], source), str(v.get("batch", "")))
            del source
            why = self.reset()
            if why:
                self.out.send({"kind": "reset", "ok": False, "detail": why[:4000]})
                return 1
        return 0

    def reset(self) -> str:
        """Between variants: both roles' processes killed, then what each uid owns removed by
        the reset helper (``zygote.py reset``) run as that uid; "" when clean, else what was
        left."""
        switch = self._switch()
        for child in self.children:
            with contextlib.suppress(OSError):
                os.killpg(child.proc.pid, signal.SIGKILL)
        roles = [self.cfg[r] for r in ("subject", "judge")]
        if switch:
            for r in roles:
                if not _kill_all_of(r["uid"], self.spared()):
                    return f"processes of uid {r['uid']} outlived the kill"
        _reap_all()
        problems = []
        started = []
        # both roles read before either helper starts (one uid's helper removing while the
        # other's entries are read would make the answer depend on the timing)
        argsets = [self.reset_args(r) for r in roles]
        needed = [
            self._reset_needed(a, r, switch=switch) for a, r in zip(argsets, roles, strict=True)
        ]
        self._start_lean([n for n, need in zip(("subject", "judge"), needed, strict=True) if need])
        for name, r, args, need in zip(("subject", "judge"), roles, argsets, needed, strict=True):
            if not need:
                self.resets_skipped[name] = self.resets_skipped.get(name, 0) + 1
                continue
            # both lean zygotes' helpers at once, then waited for
            lean = args and name + _RESETS in self.zygotes
            got = self._reset_fork(name + _RESETS, args) if lean else None
            if got is not None:
                started.append((name, *got, r if switch else None))
            else:
                problems += self._reset_role(name, r, switch=switch)
        ended = [
            (name, _wait_pid(pid, _RESET_S), err_r, role) for name, pid, err_r, role in started
        ]
        for name, code, err_r, role in ended:  # (their kills reap: every helper waited for first)
            problems += self._reset_done(name, code, err_r, role)
        _reap_all()
        return "; ".join(problems)

    def _reset_needed(self, args: list[str], role: dict[str, Any], *, switch: bool) -> bool:
        """Whether the role's reset helper could have anything to remove (``zygote.py``'s
        ``reset_needed``, read here as uid 0 after the role's processes were killed): when
        certainly not, it is not started (forking and waiting for it cost ~4 ms a role, and
        most variants leave nothing behind)."""
        if not args:
            return False
        uid = int(role["uid"]) if switch else os.geteuid()
        dirs = [a for a in args if a != "--ipc"]
        return bool(_zygote().reset_needed(dirs, uid, ipc="--ipc" in args))

    def reset_args(self, role: dict[str, Any]) -> list[str]:
        """The reset helper's arguments for a role (``--ipc`` with switched users, then the
        directories whose entries of the role's uid it removes); ``[]`` when there is nothing."""
        dirs = [str(d) for d in self.cfg.get("reset_dirs", [])]
        if self._switch():
            env = role.get("env") or {}
            dirs += [str(env[k]) for k in ("HOME", "TMPDIR") if env.get(k)]
            return ["--ipc", *dict.fromkeys(dirs)]
        return list(dict.fromkeys(dirs))

    def _reset_role(self, name: str, role: dict[str, Any], *, switch: bool) -> list[str]:
        args = self.reset_args(role)
        if not args:
            return []
        if name + _RESETS in self.zygotes or name in self.zygotes:
            return self._zygote_reset(name, args, role if switch else None)
        argv = [sys.executable, "-I", "-S", _ZYGOTE_PY, "reset", *args]  # stdlib only
        ids: dict[str, Any] = {}
        if switch:
            ids = {"user": role["uid"], "group": role["gid"],
                   "extra_groups": list(role.get("groups", []))}  # fmt: skip
        try:
            done = subprocess.run(
                argv, env={"PATH": os.environ.get("PATH", "")}, cwd="/", check=False,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                timeout=_RESET_S, start_new_session=True, **ids,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            return [f"the {name}'s reset did not run: {exc}"]
        finally:
            if switch:
                _kill_all_of(role["uid"], self.spared())
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
            return [f"the {name}'s reset failed ({done.returncode}): {' | '.join(tail)}"]
        return []

    def _zygote_reset(self, name: str, args: list[str], role: dict[str, Any] | None) -> list[str]:
        """The role's reset forked by its lean resets zygote, else by its zygote (as its uid),
        waited for here."""
        key = name + _RESETS if name + _RESETS in self.zygotes else name
        got = self._reset_fork(key, args)
        if got is None:  # dropped: the next zygote of the role forks it, else it runs fresh
            return self._reset_role(name, role or self.cfg[name], switch=role is not None)
        return self._reset_done(name, _wait_pid(got[0], _RESET_S), got[1], role)

    def _reset_fork(self, key: str, args: list[str]) -> tuple[int, int] | None:
        """The reset helper forked by the zygote ``key``: its pid and the read end of its
        stderr; None (the zygote dropped) when it did not fork one."""
        err_r, err_w = os.pipe()
        try:
            pid = self._zygote_fork(key, {"op": "reset", "argv": args}, (err_w,))
        finally:
            os.close(err_w)
        if pid is None:
            os.close(err_r)
            return None
        return pid, err_r

    def _reset_done(
        self, name: str, code: int, err_r: int, role: dict[str, Any] | None
    ) -> list[str]:
        """A forked reset helper that ended with ``code``: what went wrong ([] when it removed
        everything); every process of the role's uid left is killed."""
        os.set_blocking(err_r, False)
        err = b""
        with contextlib.suppress(OSError):
            while len(err) < 1 << 16 and (chunk := os.read(err_r, 1 << 14)):
                err += chunk
        os.close(err_r)
        if role is not None:
            _kill_all_of(role["uid"], self.spared())
        if code != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-3:]
            return [f"the {name}'s reset failed ({code}): {' | '.join(tail)}"]
        return []

    def run_pair(
        self,
        wake: int,
        bound: float,
        deadline: float | None,
        variant: tuple[str, bytes] | None = None,
        batch: str = "",
    ) -> int:
        """One judge and one subject, start to end (with ``variant``: the subject's source, and
        ``batch``, the judge's own batch file when not ""); the judge's exit status."""
        self.pending, self.started, self.current, self.since = [], False, "", 0.0
        self.garbage, self.finished, self.suspect = False, False, ""
        judge, subject, jlines, slines = self.spawn(variant, batch)
        del variant
        grace = max(0, int(self.cfg.get("grace_ms", 2000))) / 1000
        judge_gone_at: float | None = None
        while True:
            readers = [r for r in (jlines, slines) if not r.eof]
            ready, _, _ = select.select([wake, *(r.fd for r in readers)], [], [], _SLICE_S)
            if wake in ready:
                _drain(wake)
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

    def finish(
        self, judge: _Child, subject: _Child, slines: _Lines, wake: int, since: float
    ) -> int:
        """The judge has ended: the subject's last words, its end, how the judge ended."""
        while subject.status is None and time.monotonic() - since < _END_GRACE_S:
            fds = [wake] if slines.eof else [wake, slines.fd]
            ready = select.select(fds, [], [], _SLICE_S)[0]
            if wake in ready:
                _drain(wake)
            if slines.fd in ready and not slines.eof:
                for line in slines.read():
                    self.from_subject(line)
            self.reap(judge, subject)
        self.current = ""
        end_subject_by_uid(self, judge, subject, slines)
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
        _reap_all()
        return code if code >= 0 else 128 - code


_RESETS = " resets"  # the key of a role's lean resets zygote: "<role> resets"


_COLLECTED = "judge collected"  # the key of the zygote that collected once (forked by the judge's)


def _role_of(key: str) -> str:
    """The role a zygote's key belongs to ("judge resets" -> "judge")."""
    return "judge" if key == _COLLECTED else key.removesuffix(_RESETS)


def _child_wakeup() -> int:
    """A pipe SIGCHLD writes to (``signal.set_wakeup_fd``); its read end, for select."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(w)
    return r


def _drain(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 4096):
            pass


def _dying(pid: int) -> bool:
    """Whether ``pid`` has begun to exit (Linux: state Z/X or PF_EXITING), or is gone: a judge
    that saw the subject's link close may report its test before the subject can be reaped."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return True
    pf_exiting = 0x4
    return fields[0] in (b"Z", b"X") or bool(int(fields[6]) & pf_exiting)


def end_subject_by_uid(sup: Supervisor, judge: _Child, subject: _Child, slines: _Lines) -> None:
    """The judge has ended: the subject ends, by its uid, and its report pipe is read to its end.

    Every process of the subject's uid but the zygotes is killed once the subject is reaped,
    whether or not it was still running: a child of the subject that left its process group and
    kept the inherited pipes open (its report pipe, its link to the judge) cannot hold the pair
    past the judge's end, nor a batch's later variants. Without a uid of its own (no switch: unit
    tests) the pipe is read for at most ``_END_GRACE_S``, then closed unread.
    """
    sup.kill(subject, "it was still running after the judge ended")
    _wait_for(subject, judge, sup)
    if subject.uid is not None:
        _kill_all_of(subject.uid, sup.spared())
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
                sup.from_subject(line)


def _wait_for(subject: _Child, judge: _Child, sup: Supervisor) -> None:
    while subject.status is None:
        sup.reap(judge, subject)
        if subject.status is None:
            time.sleep(0.01)


def _close_all(fdenv: dict[str, tuple[int, ...]]) -> None:
    for group in fdenv.values():
        for fd in group:
            with contextlib.suppress(OSError):
                os.close(fd)
    fdenv.clear()


def _index(fdenv: dict[str, tuple[int, ...]]) -> dict[str, list[int]]:
    """Each variable's fds as their places in the request's fd list (its ``fdenv``)."""
    index, n = {}, 0
    for name, group in fdenv.items():
        index[name] = list(range(n, n + len(group)))
        n += len(group)
    return index


def _subreaper() -> None:
    """Not PID 1 (unit tests): orphans of our children are re-parented to us all the same."""
    import ctypes  # noqa: PLC0415 - unit tests only: PID 1 in a sandbox never loads it
    import ctypes.util  # noqa: PLC0415

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _wait_pid(pid: int, timeout: float) -> int:
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


def _kill_uid(uid: int, spare: frozenset[int] = frozenset()) -> None:
    """SIGKILL every process of ``uid`` (those that left the session too) but ``spare``."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in spare:
            continue
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{entry}").st_uid == uid:
                os.kill(int(entry), signal.SIGKILL)


def _kill_all_of(uid: int, spare: frozenset[int] = frozenset()) -> bool:
    """SIGKILL every process of ``uid`` but ``spare`` until none is left (reaped, as PID 1);
    False when some outlived ``_RESET_S``."""
    until = time.monotonic() + _RESET_S
    while time.monotonic() < until:
        _kill_uid(uid, spare)
        _reap_all()
        if not _uid_alive(uid, spare):
            return True
        time.sleep(0.01)
    return False


def _uid_alive(uid: int, spare: frozenset[int] = frozenset()) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in spare:
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    return True
    return False


def _variant_fd(path: str, source: bytes) -> int:
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


def _reap_all() -> None:
    """Reap what is left (as PID 1: orphans re-parented to us), without waiting on the living."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def main(argv: list[str]) -> int:
    """The entry point: ``supervisor.py CONFIG``; exits with the judge's status."""
    if len(argv) != 2:
        print("usage: supervisor.py CONFIG", file=sys.stderr)
        return 64
    try:
        cfg = load_config(argv[1])
    except ConfigError as exc:
        print(f"supervisor: {exc}", file=sys.stderr)
        return 78
    nonce = str(cfg.get("nonce") or os.environ.pop("PATCHGATE_REPORT_NONCE", ""))
    os.environ.pop("PATCHGATE_REPORT_NONCE", None)
    try:
        out = Out(str(cfg.get("socket", "")), nonce)
    except OSError as exc:
        print(f"supervisor: cannot connect to the report socket: {exc}", file=sys.stderr)
        return 75
    try:
        return Supervisor(cfg, out).run()
    finally:
        out.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
