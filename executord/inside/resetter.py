"""The reset between two variants in the supervisor: both roles' processes killed, then what
each role's uid left behind removed by the reset helper (``reset.py``) run as that uid, forked
by the role's lean zygote or its zygote, else started fresh; skipped for a role whose uid
certainly left nothing. Standard library only.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["Resetter"]


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
    from executord.inside import pair, zygotepool
else:
    pair = _load("pair")
    zygotepool = _load("zygotepool")

_RESET_S = 10.0  # a reset helper's run, at most


@dataclass
class Resetter:
    """The resets of one run, with the run's zygote pool."""

    cfg: dict[str, Any]
    pool: zygotepool.ZygotePool
    skipped: dict[str, int] = field(default_factory=dict)  # role -> resets not needed

    def reset(self, children: tuple[pair.Child, ...]) -> str:
        """Between variants: both roles' processes killed, then what each uid owns removed by
        the reset helper (``reset.py``) run as that uid; "" when clean, else what was left."""
        switch = pair.switched(self.cfg)
        for child in children:
            with contextlib.suppress(OSError):
                os.killpg(child.proc.pid, signal.SIGKILL)
        roles = [self.cfg[r] for r in ("subject", "judge")]
        if switch:
            for r in roles:
                if not pair.kill_all_of(r["uid"], self.pool.spared()):
                    return f"processes of uid {r['uid']} outlived the kill"
        pair.reap_all()
        problems = []
        started = []
        # both roles read before either helper starts (one uid's helper removing while the
        # other's entries are read would make the answer depend on the timing)
        argsets = [self.args(r) for r in roles]
        needed = [self._needed(a, r, switch=switch) for a, r in zip(argsets, roles, strict=True)]
        self.pool.start_lean(
            [n for n, need in zip(("subject", "judge"), needed, strict=True) if need]
        )
        for name, r, args, need in zip(("subject", "judge"), roles, argsets, needed, strict=True):
            if not need:
                self.skipped[name] = self.skipped.get(name, 0) + 1
                continue
            # both lean zygotes' helpers at once, then waited for
            lean = args and name + zygotepool.RESETS in self.pool.zygotes
            got = self._fork(name + zygotepool.RESETS, args) if lean else None
            if got is not None:
                started.append((name, *got, r if switch else None))
            else:
                problems += self._role(name, r, switch=switch)
        ended = [
            (name, pair.wait_pid(pid, _RESET_S), err_r, role) for name, pid, err_r, role in started
        ]
        for name, code, err_r, role in ended:  # (their kills reap: every helper waited for first)
            problems += self._done(name, code, err_r, role)
        pair.reap_all()
        return "; ".join(problems)

    def _needed(self, args: list[str], role: dict[str, Any], *, switch: bool) -> bool:
        """Whether the role's reset helper could have anything to remove (``reset.py``'s
        ``reset_needed``, read here as uid 0 after the role's processes were killed): when
        certainly not, it is not started (forking and waiting for it cost ~4 ms a role, and
        most variants leave nothing behind)."""
        if not args:
            return False
        uid = int(role["uid"]) if switch else os.geteuid()
        dirs = [a for a in args if a != "--ipc"]
        return bool(_load("reset").reset_needed(dirs, uid, ipc="--ipc" in args))

    def args(self, role: dict[str, Any]) -> list[str]:
        """The reset helper's arguments for a role (``--ipc`` with switched users, then the
        directories whose entries of the role's uid it removes); ``[]`` when there is nothing."""
        dirs = [str(d) for d in self.cfg.get("reset_dirs", [])]
        if pair.switched(self.cfg):
            env = role.get("env") or {}
            dirs += [str(env[k]) for k in ("HOME", "TMPDIR") if env.get(k)]
            return ["--ipc", *dict.fromkeys(dirs)]
        return list(dict.fromkeys(dirs))

    def _role(self, name: str, role: dict[str, Any], *, switch: bool) -> list[str]:
        args = self.args(role)
        if not args:
            return []
        if name + zygotepool.RESETS in self.pool.zygotes or name in self.pool.zygotes:
            return self._forked(name, args, role if switch else None)
        argv = [sys.executable, "-I", "-S", zygotepool.ZYGOTE_PY, "reset", *args]  # stdlib only
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
                pair.kill_all_of(role["uid"], self.pool.spared())
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
            return [f"the {name}'s reset failed ({done.returncode}): {' | '.join(tail)}"]
        return []

    def _forked(self, name: str, args: list[str], role: dict[str, Any] | None) -> list[str]:
        """The role's reset forked by its lean resets zygote, else by its zygote (as its uid),
        waited for here."""
        key = name + zygotepool.RESETS if name + zygotepool.RESETS in self.pool.zygotes else name
        got = self._fork(key, args)
        if got is None:  # dropped: the next zygote of the role forks it, else it runs fresh
            return self._role(name, role or self.cfg[name], switch=role is not None)
        return self._done(name, pair.wait_pid(got[0], _RESET_S), got[1], role)

    def _fork(self, key: str, args: list[str]) -> tuple[int, int] | None:
        """The reset helper forked by the zygote ``key``: its pid and the read end of its
        stderr; None (the zygote dropped) when it did not fork one."""
        err_r, err_w = os.pipe()
        try:
            pid = self.pool.fork(key, {"op": "reset", "argv": args}, (err_w,))
        finally:
            os.close(err_w)
        if pid is None:
            os.close(err_r)
            return None
        return pid, err_r

    def _done(self, name: str, code: int, err_r: int, role: dict[str, Any] | None) -> list[str]:
        """A forked reset helper that ended with ``code``: what went wrong ([] when it removed
        everything); every process of the role's uid left is killed."""
        os.set_blocking(err_r, False)
        err = b""
        with contextlib.suppress(OSError):
            while len(err) < 1 << 16 and (chunk := os.read(err_r, 1 << 14)):
                err += chunk
        os.close(err_r)
        if role is not None:
            pair.kill_all_of(role["uid"], self.pool.spared())
        if code != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-3:]
            return [f"the {name}'s reset failed ({code}): {' | '.join(tail)}"]
        return []
