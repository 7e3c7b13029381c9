"""The suite's environment of a base revision: built (or found in the cache) before signing.

The lock file and the source roots are read from the base revision only, like every pin; the
patched tree never decides which packages the suite imports. A base that configures no
environment runs with the executor's own Python and pytest, and the receipt says so
(``environment: "executor"``). See ``patchgate.environment`` for the tree and its digest.

A build step (``[tool.patchgate.environment.build]``) runs on an executor, in a sandbox with no
network, never on this host: its inputs are the base revision's files that match its input
patterns; its outputs are checked here (each matches an output pattern, is no file of the base
tree — so never a pinned fixture —, no pin, oracle, harness or compiled code) before they go
into the tree (a catalog compiled beside its pinned source under the fixture root is allowed),
so what the signer signs names them and the executor that runs the suite lays exactly them onto
the workspace.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Unpack

from client.analysis.patch.roles import Layout
from patchgate import git
from patchgate.environment import (
    OVERLAY,
    BuildStep,
    Built,
    PipOptions,
    build_environment,
    tree_files,
)
from patchgate.errors import EnvironmentBuildError, PatchgateError, RefusedError, TransportError
from patchgate.executor_client import BuildReply, ExecutorClient
from patchgate.pins import GitSource, ProjectConfig

if TYPE_CHECKING:
    from patchgate.tls import ClientTLS

__all__ = [
    "EXECUTOR_ENVIRONMENT",
    "Builder",
    "build_for",
    "build_inputs",
    "executor_builder",
    "overlay_problems",
    "suite_environment",
]

EXECUTOR_ENVIRONMENT = "executor"
MAX_INPUT_BYTES = 256 << 20
_OVERLAY_ROLES = frozenset({"source", "data"})


class Builder(Protocol):
    """Runs a build step on an executor (``ExecutorClient.build``)."""

    def __call__(
        self,
        *,
        environment: dict[str, Path],
        inputs: dict[str, Path],
        argv: Sequence[str],
        outputs: Sequence[str],
        timeout_s: int,
        source_roots: Sequence[str],
        dest: Path,
    ) -> BuildReply: ...


def executor_builder(addresses: Sequence[str], tls: ClientTLS | None) -> Builder | None:
    """A builder on the first local-lane executor (never the remote lane: its results confirm,
    and a build's outputs are signed); None without one."""
    if not addresses:
        return None
    address = addresses[0]

    def build(**request: object) -> BuildReply:
        with ExecutorClient(address, tls=tls) as client:
            return client.build(**request)  # type: ignore[arg-type]

    return build


def build_inputs(repo: Path, rev: str, step: BuildStep) -> dict[str, bytes]:
    """The files of revision ``rev`` that match the step's input patterns, by path."""
    try:
        entries = [e for e in git.list_tree(repo, rev) if step.reads(e.path)]
    except PatchgateError as exc:
        raise EnvironmentBuildError(f"{rev}: cannot list the tree: {exc}") from None
    out: dict[str, bytes] = {}
    total = 0
    for e in entries:
        if e.mode not in {"100644", "100755"}:
            raise EnvironmentBuildError(f"{rev}:{e.path}: a build input must be a regular file")
        data = git.read_blob(repo, rev, e.path, limit=MAX_INPUT_BYTES)
        if data is None:
            raise EnvironmentBuildError(f"{rev}:{e.path}: unreadable")
        total += len(data)
        if total > MAX_INPUT_BYTES:
            raise EnvironmentBuildError(f"build inputs: more than {MAX_INPUT_BYTES >> 20} MiB")
        out[e.path] = data
    if not out:
        raise EnvironmentBuildError(
            f"{rev}: no file matches the build's inputs ({', '.join(step.inputs)})"
        )
    return out


def overlay_problems(
    outputs: Mapping[str, Path],
    base_paths: frozenset[str],
    config: ProjectConfig,
    roots: Sequence[str],
) -> list[str]:
    """Why build outputs may not be laid onto the workspace (empty: they may)."""
    step = config.environment.build if config.environment else None
    layout = Layout(
        source_roots=tuple(roots),
        oracle_paths=config.oracle_paths,
        pins_dir=config.pins_dir,
        exclude=config.exclude,
        pin_files=frozenset([config.environment.requirements] if config.environment else []),
    )
    problems: list[str] = []
    for path in sorted(outputs):
        if step is None or not step.makes(path):
            problems.append(f"{path}: matches no output pattern")
        elif path in base_paths:
            problems.append(f"{path}: a file of the base tree (an output may not replace it)")
        elif path.split("/", 1)[0] == OVERLAY:
            problems.append(f"{path}: inside the environment's own {OVERLAY}/")
        elif (role := layout.role(path)) not in _OVERLAY_ROLES:
            problems.append(f"{path}: {role} (an output may be production source or data only)")
    return problems


def build_for(
    repo: Path,
    rev: str,
    config: ProjectConfig,
    *,
    has_src: bool,
    builder: Builder | None = None,
    say: Callable[[str], None] | None = None,
    **pip: Unpack[PipOptions],
) -> Built:
    """Build the environment ``config`` (of revision ``rev``) names; EnvironmentBuildError.

    ``builder`` runs the build step, when the configuration has one (without it: refused)."""
    env = config.environment
    if env is None:
        raise EnvironmentBuildError(
            f"{rev}: [tool.patchgate.environment] is not configured (the suite would run with the "
            "executor's own Python and pytest)"
        )
    source = GitSource(Path(repo), rev)
    lock = source.read(env.requirements)
    if lock is None:
        raise EnvironmentBuildError(f"{source.describe(env.requirements)}: missing")
    roots = config.roots(has_src=has_src)
    kwargs = {
        "lock": lock,
        "lock_name": source.describe(env.requirements),
        "source_roots": roots,
        **pip,
    }
    step = env.build
    if step is None:
        return build_environment(**kwargs)  # type: ignore[arg-type]
    inputs = build_inputs(repo, rev, step)
    key = [step.key(), sorted((p, hashlib.sha256(b).hexdigest()) for p, b in inputs.items())]
    base_paths = frozenset(e.path for e in git.list_tree(repo, rev))
    with tempfile.TemporaryDirectory(prefix="patchgate-build-") as tmp:

        def run(tree: Path) -> dict[str, Path]:
            if builder is None:
                raise EnvironmentBuildError(
                    f"{rev}: [tool.patchgate.environment.build] runs on an executor, in a sandbox "
                    "with no network; give --executor ADDR or start a lane with `patchgate up`"
                )
            placed = Path(tmp) / "inputs"
            for path, data in inputs.items():
                (placed / path).parent.mkdir(parents=True, exist_ok=True)
                (placed / path).write_bytes(data)
            if say is not None:
                say(
                    f"environment: running the build step on an executor ({' '.join(step.command)})"
                )
            try:
                reply = builder(
                    environment=tree_files(tree),
                    inputs={p: placed / p for p in inputs},
                    argv=step.command,
                    outputs=step.outputs,
                    timeout_s=step.timeout_s,
                    source_roots=roots,
                    dest=Path(tmp) / "outputs",
                )
            except RefusedError as exc:
                raise EnvironmentBuildError(f"the executor refused the build step: {exc}") from None
            except TransportError as exc:  # exit 4: nothing was built, nothing is wrong with it
                raise TransportError(
                    exc.kind, f"the build step could not run: {exc.detail}"
                ) from None
            return _checked(reply, base_paths=base_paths, config=config, roots=roots, step=step)

        return build_environment(**kwargs, build=run, build_key=key)  # type: ignore[arg-type]


def _checked(
    reply: BuildReply,
    *,
    base_paths: frozenset[str],
    config: ProjectConfig,
    roots: Sequence[str],
    step: BuildStep,
) -> dict[str, Path]:
    """The outputs of a build that ended well; EnvironmentBuildError (with its tails) if not."""
    how = (
        f"timed out after {step.timeout_s} s" if reply.timed_out
        else "was killed for memory" if reply.oom_killed
        else f"exited {reply.exit_code}" if reply.exit_code != 0
        else ""
    )  # fmt: skip
    if how:
        tail = (reply.stderr_tail or reply.stdout_tail).strip().splitlines()[-5:]
        raise EnvironmentBuildError(
            f"the build step {how}" + (f": {' | '.join(tail)}" if tail else "")
        )
    if not reply.files:
        raise EnvironmentBuildError(
            f"the build step made no file matching its outputs ({', '.join(step.outputs)})"
        )
    problems = overlay_problems(reply.files, base_paths, config, roots)
    if problems:
        raise EnvironmentBuildError("build outputs refused: " + "; ".join(problems[:10]))
    return dict(reply.files)


def suite_environment(
    repo: Path,
    rev: str,
    config: ProjectConfig,
    base_dir: Path,
    say: Callable[[str], None],
    *,
    builder: Builder | None = None,
) -> str | None:
    """The environment digest to sign for this base (None: none configured; said, not silent)."""
    if config.environment is None:
        say("environment: none configured; the suite runs with the executor's own Python")
        return None
    built = build_for(
        repo, rev, config, has_src=(base_dir / "src").is_dir(), builder=builder, say=say
    )
    how = "cached" if built.cached else "built"
    say(f"environment {built.digest[:16]} ({how}, {built.files} files)")
    return built.digest
