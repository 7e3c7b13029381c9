"""An in-memory ContainerRuntime for unit tests (no engine): scripted outcomes, full bookkeeping.

Each created container gets a ``FakeRun`` from the ``script`` callable; ``start`` writes its JUnit
XML into the spec's writable ``/results`` mount, as pytest would inside a real sandbox.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from executord.errors import SandboxError
from executord.sandbox import ContainerSpec, SandboxPolicy

__all__ = ["PASS_XML", "FakeRun", "FakeRuntime", "junit_xml"]


def junit_xml(name: str, classname: str, child: str = "") -> str:
    """A one-testcase JUnit report; ``child`` is e.g. ``<failure message="..."/>``."""
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        f'<testcase classname="{classname}" name="{name}">{child}</testcase>'
        "</testsuite></testsuites>"
    )


PASS_XML = junit_xml("test_ok", "properties.test_x")


@dataclass
class FakeRun:
    """What one fake container does."""

    exit_code: int = 0
    junit: str | None = PASS_XML
    hang: bool = False
    oom: bool = False
    fail_on: str = ""  # "create" / "start" / "wait"
    fail_kind: str = "internal"
    killed_externally: bool = False  # someone ran ``docker kill`` on it: exit 137, kill logged


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
        results = next(m.source for m in self._specs[cid].mounts if m.target == "/results")
        if run.junit is not None:
            (Path(results) / "junit.xml").write_text(run.junit, encoding="utf-8")

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

    def kill_requested(self, cid: str) -> bool:
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
