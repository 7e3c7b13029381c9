"""The supervisor: PID 1 of a judged sandbox run; it starts the judge and the subject apart.

Standard library only; run as ``python -I supervisor.py CONFIG`` as the container's uid 0 holding
only CAP_SETUID, CAP_SETGID and CAP_KILL. It reads the config (``wire.SupervisorConfig``),
connects to the executor's report socket before any child exists, and runs one pair
(``pair.py``), or with variants one pair per variant with a reset after each (``resetter.py``),
forked from the batch's zygotes when it has them (``zygotepool.py``). docs/reference/inside-wire.md
tells the config, the pipes, the records and the variants; docs/executor.md the steps.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["Supervisor", "main"]


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
    from executord.inside import pair, resetter, wire, zygotepool
else:
    wire = _load("wire")
    pair = _load("pair")
    zygotepool = _load("zygotepool")
    resetter = _load("resetter")

_ROLE = frozenset({"argv", "uid", "gid", "groups", "env", "cwd"})


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


@dataclass
class Supervisor:
    """One run: its pairs (one, or one per variant with a reset after each), the zygote pool and
    the resets (see the module doc)."""

    cfg: dict[str, Any]
    out: Out
    pool: zygotepool.ZygotePool = field(init=False)
    resetter: resetter.Resetter = field(init=False)
    children: tuple[pair.Child, ...] = ()  # the pair running (or last run)

    def __post_init__(self) -> None:
        self.pool = zygotepool.ZygotePool(self.cfg)
        self.resetter = resetter.Resetter(self.cfg, self.pool)

    def run(self) -> int:
        wake = pair.child_wakeup()  # SIGCHLD wakes the select: no polling delay at a child's end
        bound_ms = max(0, int(self.cfg.get("bound_ms", 0)))
        deadline_ms = int(self.cfg.get("deadline_ms", 0))
        deadline = time.monotonic() + deadline_ms / 1000 if deadline_ms > 0 else None
        if not self.cfg.get("variants"):
            return self.run_pair(wake, bound_ms / 1000, deadline)
        vbound = max(0, int(self.cfg.get("variant_bound_ms", 0)))
        if vbound:
            bound_ms = min(bound_ms, vbound) if bound_ms else vbound
        return self.run_variants(wake, bound_ms / 1000, deadline)

    def run_pair(
        self,
        wake: int,
        bound: float,
        deadline: float | None,
        variant: tuple[str, bytes] | None = None,
        batch: str = "",
    ) -> int:
        """One judge and one subject, start to end (``pair.Pair.run``); the judge's status."""
        one = pair.Pair(self.cfg, self.out, self.pool)
        try:
            return one.run(wake, bound, deadline, variant, batch)
        finally:
            self.children = one.children

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
            self.pool.start(self.resetter.args)
        try:
            if (
                self.pool.configured
            ):  # the collection subject ran: the first variant starts clean too
                why = self.resetter.reset(self.children)
                if why:
                    self.out.send({"kind": "reset", "ok": False, "detail": why[:4000]})
                    return 1
            with fh:
                return self._variants(fh, wake, bound, deadline)
        finally:
            self.pool.stop(self.resetter.skipped)

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
            why = self.resetter.reset(self.children)
            if why:
                self.out.send({"kind": "reset", "ok": False, "detail": why[:4000]})
                return 1
        return 0


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
