"""What one sandbox run is made of: its argv, mounts, environment — judge on or off.

Judge **off** (the old single-process run): the property's argv with ``-p patchgate_reporter``,
as the sandbox user, ``PYTHONPATH`` on the read-only mount of ``executord/inside/`` so that its
``sitecustomize`` opens the report channel before any workspace code runs.

Judge **on** (docs/executor.md): PID 1 is the supervisor of that same mount, started as the
container's uid 0 holding only ``SandboxPolicy.cap_add``. It reads the config this module writes
beside the report socket (``supervisor.json``, the format of ``executord/inside/wire.py``),
connects to the socket before it starts any child, then runs the judge (pytest with the reporter)
and the subject (the patched production code) as two distinct non-root uids. The run directory
is ``0700`` when the executor runs as root (the supervisor is the container's uid 0, the same
uid; judge and subject cannot enter it), else ``0711``; either way the report channel accepts
exactly one connection, the supervisor's, and a later one makes the run's properties ``error``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from executord.inside import MODULE
from executord.inside.wire import RoleConfig, SupervisorConfig, VariantEntry
from executord.runs.channel import SOCKET_NAME, TARGETS_NAME
from executord.sandbox.container import (
    JUDGE_HOME,
    SUBJECT_HOME,
    ContainerSpec,
    Mount,
    SandboxPolicy,
)
from executord.sandbox.output import OutputCapture

__all__ = [
    "BATCH_NAME",
    "INFO",
    "INSIDE",
    "PLUGIN_PATH",
    "RUN",
    "SUPERVISOR_CONFIG",
    "VARIANTS_NAME",
    "WORKSPACE",
    "JudgeRun",
    "RunPaths",
    "SandboxLayout",
    "run_dir_mode",
    "with_judge",
    "with_reporter",
]

WORKSPACE = "/workspace"
INSIDE = "/patchgate/inside"  # executord/inside/, read-only: reporter, supervisor, subject
RUN = "/patchgate/run"  # the run's report socket, targets, batch and supervisor config, read-only
PLUGIN_PATH = f"{INSIDE}/{MODULE}.py"
BATCH_NAME = "batch.json"  # a batched run's clock bound and node id order, beside the socket
SUPERVISOR_CONFIG = "supervisor.json"
VARIANTS_NAME = "variants.bin"  # the variants' sources, beside the config: the supervisor's alone
RESET_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")  # noqa: S108 - emptied between variants
SUPERVISOR = "supervisor.py"
SUBJECT = "subject.py"
JUDGE_MODULE = "patchgate_judge"  # the judge-side import hook (pytest plugin), J1's
INFO = "/patchgate/info"  # judge on: the run's batch and targets, read-only, for judge and subject
GRACE_MS = 2000  # past a test's bound: how long the supervisor waits for the judge's own alarm
_TMP = "/tmp"  # noqa: S108 - the sandbox's tmpfs


def with_reporter(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The signed argv with ``-p patchgate_reporter`` (before a ``--``, if the argv has one)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    return (*argv[:cut], "-p", MODULE, *argv[cut:])


def run_dir_mode() -> int:
    """The run directory's mode: only the supervisor's uid enters it when the executor is root."""
    return 0o700 if os.geteuid() == 0 else 0o711


@dataclass(frozen=True, kw_only=True)
class RunPaths:
    """The host side of one run: the trees it mounts, its run directory (the socket; judge on:
    the supervisor's alone) and, judge on, the directory the judge and subject may read (the
    batch and the targets)."""

    workspace: Path
    fixtures: Path
    fixture_root: str
    inside: Path
    run_dir: Path
    info_dir: Path | None = None

    @property
    def readable(self) -> Path:
        """Where the batch and targets files go."""
        return self.info_dir if self.info_dir is not None else self.run_dir


@dataclass(frozen=True, kw_only=True)
class JudgeRun:
    """What the supervisor needs to know beyond the argv (judge on)."""

    source_roots: tuple[str, ...]
    production: tuple[str, ...]
    bound_ms: int
    deadline_ms: int
    #: Mutation v2: where each variant's source lies in ``VARIANTS_NAME`` (absolute sandbox path
    #: of its file, offset, size, and the sandbox path of its own batch file: "" for
    #: ``BATCH_NAME``), and each test's bound with variants (0: ``bound_ms``).
    variants: tuple[tuple[str, int, int, str], ...] = ()
    variant_bound_ms: int = 0


@dataclass(frozen=True, kw_only=True)
class SandboxLayout:
    """The executor's fixed part of every sandbox: policy, host mounts, PATH."""

    policy: SandboxPolicy
    host_mounts: tuple[Mount, ...]
    path_dirs: tuple[str, ...]
    base_path: tuple[str, ...]
    #: ``PYTHONPATH`` after the inside mount (judge, or the one process of judge off): with a
    #: signed environment, the environment tree and the source roots (``runs.environment``).
    python_path: tuple[str, ...] = ()
    #: The subject's ``PYTHONPATH`` (it adds the source roots itself): the environment tree.
    subject_path: tuple[str, ...] = ()

    def spec(
        self,
        *,
        judge: JudgeRun | None,
        argv: tuple[str, ...],
        paths: RunPaths,
        seed: int,
        nonce: str,
        with_targets: bool,
        batch: bool,
        labels: Mapping[str, str],
        output: OutputCapture,
    ) -> ContainerSpec:
        """The container of one run (see the module doc)."""
        mounts = (
            *self.host_mounts,
            Mount(str(paths.workspace), WORKSPACE),
            Mount(str(paths.fixtures), f"{WORKSPACE}/{paths.fixture_root}"),
            Mount(str(paths.inside), INSIDE),
            Mount(str(paths.run_dir), RUN),
        )
        if judge is None:
            env = {
                **self._common(seed),
                "HOME": _TMP,
                "TMPDIR": _TMP,
                "PYTHONPATH": self._judge_path(),
            }
            env |= _report_env(nonce, RUN, with_targets=with_targets, batch=batch)
            command = with_reporter(argv)
        else:
            if paths.info_dir is None:
                raise ValueError("a judged run needs its info directory")
            mounts = (*mounts, Mount(str(paths.info_dir), INFO))
            config = self._config(judge, argv, seed, with_targets=with_targets, batch=batch)
            path = paths.run_dir / SUPERVISOR_CONFIG
            path.write_text(json.dumps(config, indent=1), encoding="utf-8")
            path.chmod(0o400)
            env = {
                "PATH": self._path(),
                "LANG": "C.UTF-8",
                "PATCHGATE_REPORT_NONCE": nonce,
            }
            # -S: the supervisor is standard library only; no site-packages (and no .pth file of
            # the environment) is loaded into PID 1, which also starts sooner
            command = (argv[0], "-I", "-S", f"{INSIDE}/{SUPERVISOR}", f"{RUN}/{SUPERVISOR_CONFIG}")
        return ContainerSpec(
            argv=command,
            mounts=mounts,
            env=env,
            workdir=WORKSPACE,
            labels=dict(labels),
            output=output,
            judge=judge is not None,
        )

    def _path(self) -> str:
        return ":".join([*self.path_dirs, *self.base_path])

    def _judge_path(self) -> str:
        return ":".join([INSIDE, *self.python_path])

    def _common(self, seed: int) -> dict[str, str]:
        """The environment every process of a sandbox starts from: nothing of the daemon's."""
        return {
            "PATH": self._path(),
            "LANG": "C.UTF-8",
            "PATCHGATE_SEED": str(seed),
            "PYTHONHASHSEED": str(seed % (1 << 32)),
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def _config(
        self,
        judge: JudgeRun,
        argv: tuple[str, ...],
        seed: int,
        *,
        with_targets: bool,
        batch: bool,
    ) -> SupervisorConfig:
        """The supervisor's config (``executord.inside.wire.SupervisorConfig``)."""
        p = self.policy
        judge_env = {
            **self._common(seed),
            "HOME": JUDGE_HOME,
            "TMPDIR": _TMP,
            "PYTHONPATH": self._judge_path(),
        }
        judge_env |= _report_env("", INFO, with_targets=with_targets, batch=batch)
        subject_env = {**self._common(seed), "HOME": SUBJECT_HOME, "TMPDIR": SUBJECT_HOME}
        if self.subject_path:
            subject_env["PYTHONPATH"] = ":".join(self.subject_path)
        roots = [WORKSPACE if r == "." else f"{WORKSPACE}/{r}" for r in judge.source_roots]
        config = SupervisorConfig(
            v=1,
            socket=f"{RUN}/{SOCKET_NAME}",
            switch_users=True,
            judge=RoleConfig(
                argv=list(with_judge(argv)),
                uid=p.judge_uid,
                gid=p.judge_uid,
                groups=[p.shared_gid],
                env=judge_env,
                cwd=WORKSPACE,
            ),
            subject=RoleConfig(
                argv=[argv[0], f"{INSIDE}/{SUBJECT}"],
                uid=p.subject_uid,
                gid=p.subject_uid,
                groups=[p.shared_gid],
                env=subject_env,
                cwd=WORKSPACE,
            ),
            bound_ms=judge.bound_ms,
            grace_ms=GRACE_MS,
            deadline_ms=judge.deadline_ms,
            call_timeout_ms=judge.bound_ms,
            production=list(judge.production),
            source_roots=roots,
            targets=f"{INFO}/{TARGETS_NAME}" if with_targets else "",
        )
        if judge.variants:
            config.update(_variant_config(judge))
        return config


def _variant_config(judge: JudgeRun) -> SupervisorConfig:
    """The supervisor's variant keys (docs/reference/inside-wire.md, "Variants")."""
    variants = []
    for path, offset, size, batch in judge.variants:
        entry = VariantEntry(path=path, offset=offset, size=size)
        if batch:
            entry["batch"] = batch
        variants.append(entry)
    return SupervisorConfig(
        variants_file=f"{RUN}/{VARIANTS_NAME}",
        variants=variants,
        variant_bound_ms=judge.variant_bound_ms,
        reset_dirs=list(RESET_DIRS),
        zygotes=True,
    )


def with_judge(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The judge's argv: the signed argv with the reporter and the judge plugin."""
    cut = argv.index("--") if "--" in argv else len(argv)
    return (*argv[:cut], "-p", MODULE, "-p", JUDGE_MODULE, *argv[cut:])


def _report_env(nonce: str, where: str, *, with_targets: bool, batch: bool) -> dict[str, str]:
    env = {}
    if nonce:
        env["PATCHGATE_REPORT_NONCE"] = nonce
        env["PATCHGATE_REPORT_SOCKET"] = f"{RUN}/{SOCKET_NAME}"
    if with_targets:
        env["PATCHGATE_REPORT_TARGETS"] = f"{where}/{TARGETS_NAME}"
    if batch:
        env["PATCHGATE_REPORT_BATCH"] = f"{where}/{BATCH_NAME}"
    return env
