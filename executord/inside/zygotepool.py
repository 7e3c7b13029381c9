"""The zygote pool of a mutation batch in the supervisor: one zygote per role (and a lean one
for each role's resets, started at its first need), the collecting zygote, the forks they make
for the pairs and the resets, and the processes started fresh when there is no zygote. Standard
library only; ``zygote.py`` is what runs on the other end of each control socket.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["COLLECTED", "RESETS", "Zygote", "ZygotePool", "role_of"]


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
    from executord.inside import pair
else:
    pair = _load("pair")


def _zygote() -> ModuleType:
    """``zygote.py``, loaded by the one run that starts zygotes (a mutation stage's variants):
    every other run's supervisor, PID 1 before judge and subject start, does without its imports.
    """
    return _load("zygote")


_HERE = os.path.dirname(os.path.abspath(__file__))
ZYGOTE_PY = os.path.join(_HERE, "zygote.py")
_WARMSTART_PY = os.path.join(_HERE, "warmstart.py")
_ZYGOTE_S = 60.0  # a zygote's start (pytest and its plugins imported), at most
_FORK_S = 10.0  # a zygote's answer to a fork, at most
RESETS = " resets"  # the key of a role's lean resets zygote: "<role> resets"
COLLECTED = "judge collected"  # the key of the zygote that collected once (forked by the judge's)


@dataclass
class Zygote:
    """One role's zygote: its process and our end of its control socket."""

    proc: subprocess.Popen[bytes] | pair.Forked
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
class ZygotePool:
    """The zygotes of one run, by key (a role, ``<role> resets``, ``COLLECTED``); empty without
    variants, when every process starts fresh."""

    cfg: dict[str, Any]
    zygotes: dict[str, Zygote] = field(default_factory=dict)
    unfit: list[str] = field(default_factory=list)  # why a zygote was dropped (stderr)
    forks: dict[str, int] = field(default_factory=dict)  # key -> processes its zygote forked
    lean: dict[str, bool] = field(default_factory=dict)  # role -> its lean zygote was started
    configured: bool = False  # the judge's zygote configured pytest and started its session

    def reaped(self, pid: int, status: int) -> None:
        """A zygote reaped (it ended) is dropped."""
        for role, z in list(self.zygotes.items()):
            if pid == z.proc.pid:
                z.proc.returncode = os.waitstatus_to_exitcode(status)
                self.drop(role, f"it ended ({z.proc.returncode})")

    def launch(
        self, role: str, env: dict[str, str], fdenv: dict[str, tuple[int, ...]]
    ) -> pair.Child:
        """The role's process: forked by its zygote when there is one (a judge by the zygote
        that collected once, when there is that one), else started fresh."""
        fds = tuple(fd for group in fdenv.values() for fd in group)
        for key in (COLLECTED, role) if role == "judge" else (role,):
            if key not in self.zygotes:
                continue
            pid = self.fork(key, {"op": "fork", "env": env, "fdenv": pair.index(fdenv)}, fds)
            if pid is not None:
                uid = self.cfg[role]["uid"] if pair.switched(self.cfg) else None
                return pair.Child(role, pair.Forked(pid), uid)
        extra = {**env, **{k: ",".join(str(fd) for fd in g) for k, g in fdenv.items()}}
        return pair.start_process(self.cfg, role, extra, fds)

    def start_collecting(self) -> None:
        """The zygote that collects once (``warmstart.py``, ``_collect_once``): forked by the
        judge's zygote, once its session started, with a link to a collection subject (forked
        by the subject's zygote, every production module from disk, as no variant); it collects
        against that subject, which then ends, and serves the batch's judges. Not there (noted)
        when it could not start or collect; the run's reset follows either way."""
        sub_env, sub_fdenv, judge_env, judge_fdenv, srep_r = pair.pair_env(self.cfg)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        judge_fdenv[_zygote().ZYGOTE_ENV] = (theirs.detach(),)
        subject: pair.Child | None = None
        z: Zygote | None = None
        try:
            subject = self.launch("subject", sub_env, sub_fdenv)
            pair.close_all(sub_fdenv)
            doc = {"op": "collect", "env": judge_env, "fdenv": pair.index(judge_fdenv)}
            fds = tuple(fd for group in judge_fdenv.values() for fd in group)
            pid = self.fork("judge", doc, fds)
            pair.close_all(judge_fdenv)
            if pid is None:
                raise OSError("the judge's zygote did not fork it")
            z = Zygote(pair.Forked(pid), ours)
            got = z.answer(_ZYGOTE_S)
            if got.get("ready") is not True:
                raise OSError(str(got.get("error") or "not ready"))
            self.zygotes[COLLECTED] = z
        except OSError as exc:
            if z is not None:
                z.close()  # its socket (ours) and the process
            else:
                ours.close()
            self.unfit.append(f"{COLLECTED}: {exc}")
        finally:
            pair.close_all(sub_fdenv)
            pair.close_all(judge_fdenv)
            if subject is not None:
                with contextlib.suppress(OSError):
                    os.kill(subject.proc.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.close(srep_r)

    def fork(self, key: str, doc: dict[str, Any], fds: tuple[int, ...]) -> int | None:
        """The pid the zygote ``key`` (a role, or its resets zygote) forked for ``doc``,
        re-parented to us; None (the zygote dropped) when it did not answer with one."""
        z, role = self.zygotes[key], role_of(key)
        try:
            got = z.request(doc, fds)
            pid = got.get("pid")
            if type(pid) is not int or pid <= 1 or not self._mine(pid, role):
                raise OSError(str(got.get("error") or f"not a process of the {role}'s: {pid!r}"))
        except OSError as exc:
            self.drop(key, str(exc))
            if pair.switched(
                self.cfg
            ):  # a process it forked after all holds this run's fds: none may live
                pair.kill_all_of(self.cfg[role]["uid"], self.spared())
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
        want = self.cfg[role]["uid"] if pair.switched(self.cfg) else os.getuid()
        return ppid == str(os.getpid()) and bool(uid) and uid[0] == str(want)

    def start(self, reset_args: Callable[[dict[str, Any]], list[str]]) -> None:
        """One zygote per role (``zygote.py``), both started before either is waited for (the
        judge's imports pytest and its plugins); a zygote that cannot start is not there (its
        role's processes start another way). A role's lean zygote for its resets starts when
        its first reset is needed (``start_lean``)."""
        if os.getpid() != 1:
            pair.subreaper()
        zygote_mod = _zygote()
        starting: list[tuple[str, Zygote]] = []
        for role in ("subject", "judge"):
            argv = list(self.cfg[role]["argv"])
            env = self._production_env()
            if role == "judge":
                if argv[1:3] != ["-m", "pytest"]:
                    self.unfit.append("judge: its argv is not PY -m pytest ARGS")
                    continue
                env[zygote_mod.ARGS_ENV] = json.dumps(argv[3:])
                env[zygote_mod.RESET_ENV] = json.dumps(reset_args(self.cfg[role]))
                env[zygote_mod.FILE_ENV] = _WARMSTART_PY
                argv = [argv[0], "-c", zygote_mod.BOOT]
            starting += self._spawn_zygote(role, role, argv, env)
        self.lean = {r: False for r in ("subject", "judge")}  # each may start its lean zygote
        for key, got in self._await_ready(starting):
            self.configured = self.configured or (key == "judge" and got.get("configured") is True)
        if self.configured and "subject" in self.zygotes:
            self.start_collecting()

    def _await_ready(self, starting: list[tuple[str, Zygote]]) -> list[tuple[str, dict[str, Any]]]:
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

    def start_lean(self, roles: list[str]) -> None:
        """The lean zygote (``zygote.py resets``: the standard library alone, so its forks are
        cheap) of each of ``roles`` whose first reset is needed now, all started before any is
        waited for; each role's is started once at most (one that dies or is unfit is not
        started again: the role's zygote forks its resets then). Started at the first need, not
        with the zygotes: most variants leave nothing to remove, and two interpreters started
        beside the judge's zygote slowed its start."""
        fresh = [r for r in roles if self.lean.get(r) is False]
        if not fresh:
            return
        argv = [sys.executable, "-I", "-S", ZYGOTE_PY, "resets"]
        starting: list[tuple[str, Zygote]] = []
        for role in fresh:
            self.lean[role] = True
            starting += self._spawn_zygote(role + RESETS, role, argv, self._production_env())
        self._await_ready(starting)

    def _production_env(self) -> dict[str, str]:
        """A zygote's environment of its own: the production top-level names (JSON), which it
        checks it never imported."""
        production = [str(p) for p in self.cfg.get("production", [])]
        return {_zygote().PRODUCTION_ENV: json.dumps(production)}

    def _spawn_zygote(
        self, key: str, role: str, argv: list[str], env: dict[str, str]
    ) -> list[tuple[str, Zygote]]:
        """The zygote ``key`` started as ``role`` with our end of its control socket (``[]``,
        noted, when it did not start); not waited for."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {**env, _zygote().ZYGOTE_ENV: str(theirs.fileno())}
        try:
            proc = pair.start_process(self.cfg, role, env, (theirs.fileno(),), argv=argv).proc
            if not isinstance(proc, subprocess.Popen):
                raise OSError("not started")
        except OSError as exc:
            ours.close()
            self.unfit.append(f"{key}: {exc}")
            return []
        finally:
            theirs.close()
        return [(key, Zygote(proc, ours))]

    def drop(self, role: str, why: str) -> None:
        z = self.zygotes.pop(role, None)
        if z is not None:
            z.close()
            self.unfit.append(f"{role}: {why}")

    def stop(self, resets_skipped: dict[str, int]) -> None:
        for role in list(self.zygotes):
            z = self.zygotes.pop(role)
            z.close()
        pair.reap_all()
        if self.configured:
            print("supervisor: the judge's zygote configured pytest and started its session once",
                  file=sys.stderr)  # fmt: skip
        if self.forks.get(COLLECTED):
            print(f"supervisor: judges forked after collecting once: {self.forks[COLLECTED]}",
                  file=sys.stderr)  # fmt: skip
        if self.forks:
            by_role: dict[str, int] = {}
            for key, n in self.forks.items():
                by_role[role_of(key)] = by_role.get(role_of(key), 0) + n
            done = ", ".join(f"{r} {n}" for r, n in sorted(by_role.items()))
            print(f"supervisor: forked by the zygotes: {done}", file=sys.stderr)
            lean = ", ".join(f"{role_of(k)} {n}" for k, n in sorted(self.forks.items())
                             if k.endswith(RESETS))  # fmt: skip
            if lean:
                print(f"supervisor: resets forked by the lean zygotes: {lean}", file=sys.stderr)
        started = [r for r, yes in sorted(self.lean.items()) if yes]
        if started:
            print(f"supervisor: lean zygotes started for: {', '.join(started)}", file=sys.stderr)
        if resets_skipped:
            done = ", ".join(f"{r} {n}" for r, n in sorted(resets_skipped.items()))
            print(f"supervisor: resets not needed (nothing of the uid left): {done}",
                  file=sys.stderr)  # fmt: skip
        for why in self.unfit:
            print(f"supervisor: zygote not used: {why}", file=sys.stderr)

    def spared(self) -> frozenset[int]:
        """The zygotes' pids: the kills between pairs spare them (and only them)."""
        return frozenset(z.proc.pid for z in self.zygotes.values())


def role_of(key: str) -> str:
    """The role a zygote's key belongs to ("judge resets" -> "judge")."""
    return "judge" if key == COLLECTED else key.removesuffix(RESETS)
