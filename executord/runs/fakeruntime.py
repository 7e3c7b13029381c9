"""An in-memory ContainerRuntime for unit tests (no engine): scripted outcomes, full bookkeeping.

Each created container gets a ``FakeRun`` from the ``script`` callable. ``start`` plays the
executor's reporter: the records it would have streamed (one passing item per node id of the argv,
unless scripted) are kept by nonce and handed to the run's ``FakeChannel`` (``FakeRuntime.channel``
is the executor's channel factory in unit tests), and the scripted stdout/stderr go to the spec's
output capture. No socket, no engine.

With variants (the supervisor's config lists them) it plays the supervisor's variant stream: per
variant a ``variant`` record, the reporter's records and the pair's ``judge`` record, each
variant's items from ``FakeRun.variant_items`` (default: every node id passes), stopping after
``FakeRun.variant_stop`` variants (with a ``reset`` failure record when ``reset_failure`` says so).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from executord.errors import SandboxError
from executord.runs.executor import PLUGIN_PATH
from executord.runs.records import RecordLog
from executord.runs.sandboxspec import RUN, SUPERVISOR_CONFIG
from executord.sandbox.container import ContainerSpec, SandboxPolicy

__all__ = ["FakeChannel", "FakeRun", "FakeRuntime", "Items", "reporter_lines", "variant_lines"]

#: (node id, outcome, failure) or (node id, outcome, failure, failure kind) per item
Items = Sequence[tuple[str, ...]]


def _records(
    items: Items,
    exitstatus: int | None,
    plugin: str,
    judged: Sequence[dict[str, Any]] | None,
) -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = [{"kind": "start", "plugin": plugin, "pid": 1}]
    for n, o, f, *kind in items:
        rec = {"kind": "item", "nodeid": n, "outcome": o, "duration_ms": 1, "failure": f,
               "executed": []}  # fmt: skip
        if kind:
            rec["failure_kind"] = kind[0]
        recs.append(rec)
    if exitstatus is not None:
        recs.append({"kind": "finish", "exitstatus": exitstatus})
    recs += judged or ()
    return recs


def _stamped(nonce: str, recs: Sequence[dict[str, Any]]) -> list[bytes]:
    return [
        json.dumps({"v": 1, "nonce": nonce, "seq": i, **r}).encode() for i, r in enumerate(recs)
    ]


def reporter_lines(
    nonce: str,
    items: Items,
    exitstatus: int | None,
    *,
    plugin: str = PLUGIN_PATH,
    judged: tuple[dict[str, Any], ...] | None = None,
) -> list[bytes]:
    """The lines the real reporter sends: start, one item per (nodeid, outcome, failure[, kind]),
    finish; ``judged``: the supervisor's records after them (judge on)."""
    return _stamped(nonce, _records(items, exitstatus, plugin, judged))


def variant_lines(
    nonce: str,
    pairs: Sequence[tuple[Items, int | None, Sequence[dict[str, Any]] | None]],
    *,
    plugin: str = PLUGIN_PATH,
    tail: Sequence[dict[str, Any]] = (),
) -> list[bytes]:
    """The supervisor's stream with variants: per (items, exit status, supervisor records) a
    ``variant`` record then that pair's records (default supervisor records: the judge exited
    with the status); ``tail`` after the last (e.g. a ``reset`` failure)."""
    recs: list[dict[str, Any]] = []
    for n, (items, status, judged) in enumerate(pairs, 1):
        end = judged
        if end is None:
            end = [{"kind": "judge", "event": "exit", "returncode": status}]
        recs.append({"kind": "variant", "index": n})
        recs += _records(items, status, plugin, end)
    return _stamped(nonce, [*recs, *tail])


@dataclass
class FakeRun:
    """What one fake container does."""

    exit_code: int = 0
    items: tuple[tuple[str, str, str], ...] | None = None  # None: each argv node id passes
    exitstatus: int | str | None = "exit"  # the reporter's final status; "exit": = exit_code
    lines: Callable[[str], list[bytes]] | None = None  # exact lines for a nonce (a forger's)
    stdout: bytes = b""
    stderr: bytes = b""
    hang: bool = False
    oom: bool = False
    fail_on: str = ""  # "create" / "start" / "wait"
    fail_kind: str = "internal"
    killed_externally: bool = False  # someone ran ``docker kill`` on it: exit 137, kill logged
    # judge on: the supervisor's records after the reporter's (None: the judge exited, as told)
    supervisor: tuple[dict[str, Any], ...] | None = None
    # with variants: variant n's items (None from it, or no callable: each node id passes)
    variant_items: Callable[[int], Items | None] | None = None
    variant_stop: int = 0  # > 0: the stream ends after this many variants
    reset_failure: str = ""  # with variant_stop: the supervisor's reset failure record says this


def _variant_stream(run: FakeRun, nonce: str, count: int, passing: Items) -> list[bytes]:
    stop = run.variant_stop or count
    pairs: list[tuple[Items, int | None, Sequence[dict[str, Any]] | None]] = []
    for n in range(1, min(stop, count) + 1):
        items = (run.variant_items(n) if run.variant_items else None) or passing
        failed = any(i[1] in ("fail", "error") for i in items)
        pairs.append((items, 1 if failed else 0, None))
    tail = []
    if run.reset_failure:
        tail.append({"kind": "reset", "ok": False, "detail": run.reset_failure})
    return variant_lines(nonce, pairs, tail=tail)


@dataclass
class FakeRuntime:
    """Records every call; containers 'run' instantly unless ``hang``."""

    script: Callable[[ContainerSpec], FakeRun] = lambda _spec: FakeRun()
    images: set[str] = field(default_factory=set)
    image_envs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reachable: bool = True
    created: list[ContainerSpec] = field(default_factory=list)
    policies: list[SandboxPolicy] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    _runs: dict[str, FakeRun] = field(default_factory=dict)
    _lines: dict[str, list[bytes]] = field(default_factory=dict)
    _specs: dict[str, ContainerSpec] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _check(self) -> None:
        if not self.reachable:
            raise SandboxError("unavailable", "fake engine unreachable")

    def ping(self) -> None:
        self._check()

    def image_present(self, image: str) -> bool:
        self._check()
        return image in self.images

    def image_env(self, image: str) -> tuple[str, ...]:
        self._check()
        if image not in self.images:
            raise SandboxError("image_missing", f"fake image {image} is not present")
        return self.image_envs.get(image, ())

    def import_image(self, tar: bytes, repository: str, tag: str) -> None:
        self._check()
        self.images.add(f"{repository}:{tag}")

    def pull(self, image: str) -> None:
        self._check()
        self.images.add(image)

    def create(self, spec: ContainerSpec, policy: SandboxPolicy) -> str:
        self._check()
        run = self.script(spec)
        if run.fail_on == "create":
            raise SandboxError(run.fail_kind, "fake create failure")
        with self._lock:
            cid = f"fake{next(self._ids):08d}"
            self.created.append(spec)
            self.policies.append(policy)
            self._runs[cid] = run
            self._specs[cid] = spec
        return cid

    def start(self, cid: str) -> None:
        self._check()
        run = self._runs[cid]
        if run.fail_on == "start":
            raise SandboxError(run.fail_kind, "fake start failure")
        spec = self._specs[cid]
        nonce = spec.env.get("PATCHGATE_REPORT_NONCE", "")
        self._lines[nonce] = self._played(run, spec, nonce)
        if spec.output is not None:
            spec.output.add(1, run.stdout)
            spec.output.add(2, run.stderr)
            spec.output.done.set()

    @staticmethod
    def _played(run: FakeRun, spec: ContainerSpec, nonce: str) -> list[bytes]:
        if run.lines is not None:
            return run.lines(nonce)
        items: Items | None = run.items
        argv = spec.argv
        config: dict[str, Any] = {}
        if spec.judge:  # the judge's argv is in the supervisor's config beside the socket
            run_dir = next(m.source for m in spec.mounts if m.target == RUN)
            config = json.loads((Path(run_dir) / SUPERVISOR_CONFIG).read_text(encoding="utf-8"))
            argv = tuple(config["judge"]["argv"])
        args = [a for a in argv if "::" in a and not a.startswith("-")]
        passing = tuple((a, "pass", "") for a in args)
        if config.get("variants"):
            return _variant_stream(run, nonce, len(config["variants"]), passing)
        if items is None:
            items = passing
        status = run.exit_code if run.exitstatus == "exit" else run.exitstatus
        judged = None
        if spec.judge:
            judged = run.supervisor
            if judged is None:
                judged = ({"kind": "judge", "event": "exit", "returncode": run.exit_code},)
        code = status if isinstance(status, int) else None
        return reporter_lines(nonce, items, code, judged=judged)

    def channel(
        self, directory: Path, nonce: str, *, judged: bool = False, variants: int = 0
    ) -> FakeChannel:
        """The executor's channel factory in unit tests: the records ``start`` played."""
        assert directory.is_dir()  # noqa: S101 - the executor made the run's directory
        return FakeChannel(self._lines, nonce, judged)

    def wait(self, cid: str, timeout_s: float) -> int | None:
        self._check()
        run = self._runs[cid]
        if run.fail_on == "wait":
            raise SandboxError(run.fail_kind, "fake wait failure")
        if run.hang and cid not in self.killed:
            time.sleep(min(timeout_s, 0.02))
            return None
        return 137 if cid in self.killed or run.oom or run.killed_externally else run.exit_code

    def oom_killed(self, cid: str) -> bool:
        return self._runs[cid].oom

    def kill_requested(self, cid: str, grace_s: float = 0.0) -> bool:
        return cid in self.killed or self._runs[cid].killed_externally

    def kill(self, cid: str) -> None:
        self.killed.append(cid)

    def remove(self, cid: str) -> None:
        with self._lock:
            self.removed.append(cid)
            self._runs.pop(cid, None)

    def list_labeled(self, label: str, value: str) -> list[str]:
        return [
            c
            for c, s in self._specs.items()
            if s.labels.get(label) == value and c not in self.removed
        ]

    @property
    def live(self) -> list[str]:
        """Containers created and not removed."""
        return [c for c in self._specs if c not in self.removed]


@dataclass
class FakeChannel:
    """A report channel fed from what the fake container played (see ``FakeRuntime.channel``)."""

    played: dict[str, list[bytes]]
    nonce: str
    judged: bool = False
    closed: bool = False

    def finish(self, grace_s: float) -> RecordLog:
        log = RecordLog(nonce=self.nonce, judged=self.judged)
        for line in self.played.pop(self.nonce, []):
            log.feed(line)
        return log

    def close(self) -> None:
        self.closed = True
