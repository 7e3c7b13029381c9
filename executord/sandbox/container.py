"""Sandboxed containers: the policy, a small ``ContainerRuntime`` protocol, and one run.

The policy itself is told in docs/executor.md.

``run_container`` is the only place that creates containers. It removes the container on every path
(exit, clock bound, cancel, error) and turns every infrastructure problem into a SandboxError whose
``kind`` is a transport kind. ``DockerRuntime`` implements the protocol with the docker SDK and
converts docker/requests exceptions at this boundary; ``executord.runs.fakeruntime`` is the test
fake.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from executord.errors import SandboxError
from executord.sandbox.output import OutputCapture, OutputPump
from patchgate.v1 import executor_pb2

__all__ = [
    "JUDGE_HOME",
    "SUBJECT_HOME",
    "ContainerExit",
    "ContainerRuntime",
    "ContainerSpec",
    "DockerRuntime",
    "Mount",
    "SandboxPolicy",
    "run_container",
    "sweep",
]

log = structlog.get_logger("executord.sandbox.container")
_WAIT_SLICE_S = 2.0
_SIGKILL_EXIT = 137  # 128 + SIGKILL: how a container killed through the engine exits
JUDGE_HOME = "/patchgate/judge"  # the judge's own tmpfs (HOME, TMPDIR), judge on
SUBJECT_HOME = "/patchgate/subject"  # the subject's own tmpfs (HOME, TMPDIR), judge on
_TMP = "/tmp"  # noqa: S108 - the sandbox's own tmpfs


@dataclass(frozen=True)
class Mount:
    """A bind mount; ``read_only`` unless it is a per-run results directory."""

    source: str
    target: str
    read_only: bool = True


@dataclass(frozen=True, kw_only=True)
class SandboxPolicy:
    """The flags every sandbox gets. Reported, as used, in every execution report."""

    image: str
    runtime: str = "runc"
    network_mode: str = "none"
    read_only_rootfs: bool = True
    user: str = "10001:10001"
    cap_drop: tuple[str, ...] = ("ALL",)
    security_opt: tuple[str, ...] = ("no-new-privileges",)
    pids_limit: int = 256
    memory_bytes: int = 512 << 20
    nano_cpus: int = 1_000_000_000
    tmpfs_bytes: int = 64 << 20
    # The judge apart (docs/executor.md): the container starts as its uid 0 holding only these,
    # for the supervisor (PID 1), which runs judge and subject as two distinct non-root uids.
    supervisor_user: str = "0:0"
    cap_add: tuple[str, ...] = ("SETUID", "SETGID", "KILL")
    judge_uid: int = 10001
    subject_uid: int = 10002
    shared_gid: int = 10003

    def __post_init__(self) -> None:
        ids = {self.judge_uid, self.subject_uid, self.shared_gid}
        if 0 in ids or len(ids) != len((self.judge_uid, self.subject_uid, self.shared_gid)):
            raise ValueError("judge uid, subject uid and shared gid: distinct and non-zero")

    def tmpfs(self, *, judge: bool) -> dict[str, str]:
        """Every tmpfs of a sandbox: ``/tmp`` alone (judge off, the sandbox user's 1777 tmpfs),
        or the judge's and the subject's own (``uid=``, ``mode=0700``) beside a ``/tmp`` the two
        share only through their common group (per-test directories, ``tmp_path``)."""
        base = f"rw,noexec,nosuid,nodev,size={self.tmpfs_bytes}"
        if not judge:
            return {_TMP: base}
        return {
            JUDGE_HOME: f"{base},uid={self.judge_uid},gid={self.judge_uid},mode=0700",
            SUBJECT_HOME: f"{base},uid={self.subject_uid},gid={self.subject_uid},mode=0700",
            _TMP: f"{base},uid=0,gid={self.shared_gid},mode=1770",
        }

    @property
    def memswap_bytes(self) -> int:
        """Memory + swap equals memory: no swap."""
        return self.memory_bytes

    @property
    def tmpfs_options(self) -> str:
        """Options of the size-capped ``/tmp`` tmpfs."""
        return f"rw,noexec,nosuid,nodev,size={self.tmpfs_bytes}"

    def to_proto(self, clock_bound_ms: int, *, judge: bool = False) -> executor_pb2.SandboxSettings:
        """The settings actually used, for the report."""
        extra: dict[str, object] = {}
        if judge:
            extra = {
                "cap_add": list(self.cap_add),
                "judge_user": f"{self.judge_uid}:{self.judge_uid}",
                "subject_user": f"{self.subject_uid}:{self.subject_uid}",
                "shared_gid": self.shared_gid,
            }
        return executor_pb2.SandboxSettings(
            image=self.image,
            runtime=self.runtime,
            network_mode=self.network_mode,
            read_only_rootfs=self.read_only_rootfs,
            user=self.supervisor_user if judge else self.user,
            cap_drop=list(self.cap_drop),
            security_opt=list(self.security_opt),
            pids_limit=self.pids_limit,
            memory_bytes=self.memory_bytes,
            memswap_bytes=self.memswap_bytes,
            nano_cpus=self.nano_cpus,
            tmpfs_tmp=self.tmpfs(judge=judge)[_TMP],
            clock_bound_ms=clock_bound_ms,
            tmpfs=[f"{k}:{v}" for k, v in sorted(self.tmpfs(judge=judge).items())],
            **extra,  # type: ignore[arg-type]
        )


@dataclass(frozen=True, kw_only=True)
class ContainerSpec:
    """One container to run: argv, mounts, scrubbed environment, labels."""

    argv: tuple[str, ...]
    mounts: tuple[Mount, ...]
    env: Mapping[str, str]
    workdir: str
    labels: Mapping[str, str] = field(default_factory=dict)
    output: OutputCapture | None = field(default=None, compare=False)  # stdout/stderr tails
    judge: bool = False  # the judge apart: supervisor as uid 0 with ``policy.cap_add``, role tmpfs


@dataclass(frozen=True)
class ContainerExit:
    """How a container ended."""

    exit_code: int | None
    oom_killed: bool
    timed_out: bool
    start_ms: int
    run_ms: int


class ContainerRuntime(Protocol):
    """What the executor needs from a container engine. Every method raises SandboxError."""

    def ping(self) -> None:
        """Raise SandboxError("unavailable") when the engine does not answer."""

    def image_present(self, image: str) -> bool:
        """True when ``image`` is available locally."""

    def image_env(self, image: str) -> tuple[str, ...]:
        """The image's configured environment (``NAME=value``); SandboxError if it is absent."""

    def import_image(self, tar: bytes, repository: str, tag: str) -> None:
        """Import a root filesystem tarball as ``repository:tag``."""

    def pull(self, image: str) -> None:
        """Pull ``image`` (only with --pull)."""

    def create(self, spec: ContainerSpec, policy: SandboxPolicy) -> str:
        """Create a stopped container; return its id."""

    def start(self, cid: str) -> None:
        """Start a created container."""

    def wait(self, cid: str, timeout_s: float) -> int | None:
        """Exit code, or None if still running after ``timeout_s``."""

    def oom_killed(self, cid: str) -> bool:
        """True when the engine records the container as OOM-killed."""

    def kill_requested(self, cid: str, grace_s: float = 0.0) -> bool:
        """True when the engine recorded a kill of the container through its API (``docker
        kill``, ``docker stop``, ``docker rm -f``): a death the code under test cannot fake.
        ``grace_s`` also counts a kill event logged up to that long after the container finished
        (the engine may log it just after the exit it caused)."""

    def kill(self, cid: str) -> None:
        """SIGKILL the container (no error when it already stopped)."""

    def remove(self, cid: str) -> None:
        """Remove the container, forcibly (no error when it is gone)."""

    def list_labeled(self, label: str, value: str) -> list[str]:
        """Ids of every container, running or not, with ``label=value``."""


def run_container(
    runtime: ContainerRuntime,
    spec: ContainerSpec,
    policy: SandboxPolicy,
    *,
    clock_bound_s: float,
    cancel: threading.Event,
) -> ContainerExit:
    """Create, start, wait (bounded by the clock), kill on bound or cancel; always remove."""
    t0 = time.monotonic()
    cid = runtime.create(spec, policy)
    try:
        runtime.start(cid)
        t1 = time.monotonic()
        deadline = t1 + clock_bound_s
        code: int | None = None
        timed_out = False
        while True:
            if cancel.is_set():
                runtime.kill(cid)
                raise SandboxError("internal", "cancelled by the client or a shutdown")
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                runtime.kill(cid)
                break
            code = runtime.wait(cid, min(left, _WAIT_SLICE_S))
            if code is not None:
                break
        t2 = time.monotonic()
        oom = False if timed_out else runtime.oom_killed(cid)
        if not timed_out and not oom and _killed_from_outside(runtime, cid, code):
            # Not our kill (we kill only at the clock bound or on cancel): someone else's.
            raise SandboxError("killed_externally", f"container killed from outside (exit {code})")
        return ContainerExit(
            exit_code=code,
            oom_killed=oom,
            timed_out=timed_out,
            start_ms=int((t1 - t0) * 1000),
            run_ms=int((t2 - t1) * 1000),
        )
    finally:
        try:
            runtime.remove(cid)
        except SandboxError as exc:
            log.warning(
                "container not removed; the start-up sweep will", cid=cid[:12], error=str(exc)
            )


def _killed_from_outside(runtime: ContainerRuntime, cid: str, code: int | None) -> bool:
    """A kill through the engine's API. A SIGKILL exit (137) with no kill event yet gets a second
    look one second wider: the engine can log the kill just after the exit it caused. Code that
    kills itself with SIGKILL leaves no event, and costs only that second."""
    if runtime.kill_requested(cid):
        return True
    return code == _SIGKILL_EXIT and runtime.kill_requested(cid, grace_s=1.0)


class DockerRuntime:
    """ContainerRuntime over the docker SDK's low-level API (``DOCKER_HOST`` or the default)."""

    def __init__(self, base_url: str | None = None, timeout: float = 60.0) -> None:
        import docker  # noqa: PLC0415 - imported here so unit tests never need an engine

        try:
            if base_url is None:
                self._api: Any = docker.from_env(timeout=int(timeout)).api
            else:
                self._api = docker.APIClient(base_url=base_url, timeout=int(timeout))
        except docker.errors.DockerException as exc:
            raise SandboxError("unavailable", f"docker engine: {exc}") from exc
        self._docker = docker
        self._outputs: dict[str, OutputCapture] = {}  # created, not yet attached
        self._pumps: dict[str, OutputPump] = {}  # attached, until removed

    def _convert(
        self, exc: Exception, what: str, *, start: bool = False, container: bool = False
    ) -> SandboxError:
        import requests  # noqa: PLC0415

        errors = self._docker.errors
        if isinstance(exc, errors.ImageNotFound):
            return SandboxError("image_missing", f"{what}: {exc.explanation or exc}")
        if container and isinstance(exc, errors.NotFound):
            return SandboxError("killed_externally", f"{what}: the container was removed")
        if isinstance(
            exc, requests.exceptions.ConnectionError | errors.DockerException
        ) and not isinstance(exc, errors.APIError):
            return SandboxError("unavailable", f"{what}: docker engine unreachable: {exc}")
        if isinstance(exc, errors.APIError):
            kind = "sandbox_start_failed" if start else "internal"
            return SandboxError(kind, f"{what}: {exc.explanation or exc}")
        return SandboxError("internal", f"{what}: {type(exc).__name__}: {exc}")

    def ping(self) -> None:
        try:
            self._api.ping()
        except Exception as exc:
            raise SandboxError("unavailable", f"docker engine unreachable: {exc}") from exc

    def image_present(self, image: str) -> bool:
        try:
            self._api.inspect_image(image)
        except self._docker.errors.ImageNotFound:
            return False
        except Exception as exc:
            raise self._convert(exc, f"inspect image {image}") from exc
        return True

    def image_env(self, image: str) -> tuple[str, ...]:
        try:
            info = self._api.inspect_image(image)
        except self._docker.errors.ImageNotFound as exc:
            raise SandboxError("image_missing", f"image {image} is not present") from exc
        except Exception as exc:
            raise self._convert(exc, f"inspect image {image}") from exc
        env = (info.get("Config") or {}).get("Env") or []
        return tuple(str(e) for e in env)

    def import_image(self, tar: bytes, repository: str, tag: str) -> None:
        try:
            self._api.import_image_from_data(tar, repository=repository, tag=tag)
        except Exception as exc:
            raise self._convert(exc, "import image") from exc

    def pull(self, image: str) -> None:
        try:
            self._api.pull(image)
        except Exception as exc:
            raise self._convert(exc, f"pull {image}") from exc

    def create(self, spec: ContainerSpec, policy: SandboxPolicy) -> str:
        types = self._docker.types
        host_config = self._api.create_host_config(
            mounts=[
                types.Mount(m.target, m.source, type="bind", read_only=m.read_only)
                for m in spec.mounts
            ],
            network_mode=policy.network_mode,
            read_only=policy.read_only_rootfs,
            tmpfs=policy.tmpfs(judge=spec.judge),
            cap_drop=list(policy.cap_drop),
            cap_add=list(policy.cap_add) if spec.judge else None,
            security_opt=list(policy.security_opt),
            pids_limit=policy.pids_limit,
            mem_limit=policy.memory_bytes,
            memswap_limit=policy.memswap_bytes,
            nano_cpus=policy.nano_cpus,
            runtime=policy.runtime,
            ipc_mode="private",
            log_config=types.LogConfig(type="none"),  # no engine log on disk; see ``output``
        )
        try:
            created = self._api.create_container(
                policy.image,
                command=list(spec.argv),
                user=policy.supervisor_user if spec.judge else policy.user,
                environment=dict(spec.env),
                working_dir=spec.workdir,
                labels=dict(spec.labels),
                host_config=host_config,
                network_disabled=True,
            )
        except Exception as exc:
            raise self._convert(exc, "create container", start=True) from exc
        if spec.output is not None:
            self._outputs[str(created["Id"])] = spec.output
        return str(created["Id"])

    def start(self, cid: str) -> None:
        self._attach(cid)
        try:
            self._api.start(cid)
        except Exception as exc:
            raise self._convert(exc, "start container", start=True, container=True) from exc

    def wait(self, cid: str, timeout_s: float) -> int | None:
        import requests  # noqa: PLC0415

        try:
            result = self._api.wait(cid, timeout=max(1, int(timeout_s + 0.999)))
        except requests.exceptions.ReadTimeout:
            return None
        except requests.exceptions.ConnectionError as exc:
            if "timed out" in str(exc).lower():
                self.ping()  # a read timeout on the unix socket, unless the engine is gone
                return None
            raise self._convert(exc, "wait") from exc
        except Exception as exc:
            raise self._convert(exc, "wait", container=True) from exc
        return int(result.get("StatusCode", -1))

    def oom_killed(self, cid: str) -> bool:
        try:
            state = self._api.inspect_container(cid)["State"]
        except Exception as exc:
            raise self._convert(exc, "inspect container", container=True) from exc
        return bool(state.get("OOMKilled"))

    def kill_requested(self, cid: str, grace_s: float = 0.0) -> bool:
        # A kill of this run is logged after Created and, usually, before FinishedAt; seen on a
        # loaded machine: the "kill" event stamped just after the exit it caused, so a second look
        # with a grace covers (FinishedAt, FinishedAt + grace]. Nothing else kills it before our
        # own removal, which comes after this check.
        try:
            info = self._api.inspect_container(cid)
            since = _engine_time(info["Created"])
            until = _engine_time(info["State"]["FinishedAt"], plus_s=grace_s)
            stream = self._api.events(
                since=since, until=until, filters={"container": cid, "event": "kill"}, decode=True
            )
            try:
                return any(True for _ in stream)
            finally:
                stream.close()
        except SandboxError:
            raise
        except Exception as exc:
            raise self._convert(exc, "container events", container=True) from exc

    def kill(self, cid: str) -> None:
        try:
            self._api.kill(cid)
        except self._docker.errors.APIError:
            pass  # already stopped
        except Exception as exc:
            raise self._convert(exc, "kill container") from exc

    def _attach(self, cid: str) -> None:
        """Before start: stream the container's stdout/stderr into its spec's capture."""
        capture = self._outputs.pop(cid, None)
        if capture is None:
            return
        try:
            sock = self._api.attach_socket(cid, params={"stdout": 1, "stderr": 1, "stream": 1})
        except Exception as exc:
            raise self._convert(exc, "attach container", start=True) from exc
        self._pumps[cid] = OutputPump(sock, capture)

    def remove(self, cid: str) -> None:
        self._outputs.pop(cid, None)
        pump = self._pumps.pop(cid, None)
        if pump is not None:
            pump.stop(grace_s=2.0)
        try:
            self._api.remove_container(cid, force=True, v=True)
        except self._docker.errors.NotFound:
            pass
        except Exception as exc:
            raise self._convert(exc, "remove container") from exc

    def list_labeled(self, label: str, value: str) -> list[str]:
        try:
            found = self._api.containers(all=True, filters={"label": f"{label}={value}"})
        except Exception as exc:
            raise self._convert(exc, "list containers") from exc
        return [str(c["Id"]) for c in found]


def _engine_time(stamp: str, plus_s: float = 0.0) -> str:
    """The engine's RFC 3339 UTC time (``2026-12-01T09:12:25.120404175Z``), plus whole seconds
    ``plus_s`` (rounded up), as the ``seconds.nanoseconds`` its events API takes, without a
    float's rounding."""
    whole, _, frac = stamp.removesuffix("Z").partition(".")
    try:
        when = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        raise SandboxError("internal", f"engine time not understood: {stamp[:40]!r}") from None
    if when.year < 2000 or (frac and not frac.isdigit()):
        raise SandboxError("internal", f"engine time not usable: {stamp[:40]!r}")
    return f"{int(when.timestamp()) + math.ceil(plus_s)}.{frac[:9].ljust(9, '0')}"


def sweep(runtime: ContainerRuntime, label: str, value: str) -> int:
    """Remove leftover containers carrying ``label=value`` (start-up hygiene); return how many."""
    removed = 0
    for cid in runtime.list_labeled(label, value):
        runtime.remove(cid)
        removed += 1
    return removed
