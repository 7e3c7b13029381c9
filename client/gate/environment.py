"""The suite's environment of a base revision: built (or found in the cache) before signing.

The lock file and the source roots are read from the base revision only, like every pin; the
patched tree never decides which packages the suite imports. A base that configures no
environment runs with the executor's own Python and pytest, and the receipt says so
(``environment: "executor"``). See ``patchgate.environment`` for the tree and its digest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from patchgate.environment import Built, build_environment
from patchgate.errors import EnvironmentBuildError
from patchgate.pins import GitSource, ProjectConfig

__all__ = ["EXECUTOR_ENVIRONMENT", "build_for", "suite_environment"]

EXECUTOR_ENVIRONMENT = "executor"


def build_for(
    repo: Path,
    rev: str,
    config: ProjectConfig,
    *,
    has_src: bool,
    cache: Path | None = None,
    find_links: Sequence[Path] = (),
    no_index: bool = False,
    rebuild: bool = False,
) -> Built:
    """Build the environment ``config`` (of revision ``rev``) names; EnvironmentBuildError."""
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
    return build_environment(
        lock=lock,
        lock_name=source.describe(env.requirements),
        source_roots=config.roots(has_src=has_src),
        cache=cache,
        find_links=find_links,
        no_index=no_index,
        rebuild=rebuild,
    )


def suite_environment(
    repo: Path, rev: str, config: ProjectConfig, base_dir: Path, say: Callable[[str], None]
) -> str | None:
    """The environment digest to sign for this base (None: none configured; said, not silent)."""
    if config.environment is None:
        say("environment: none configured; the suite runs with the executor's own Python")
        return None
    built = build_for(repo, rev, config, has_src=(base_dir / "src").is_dir())
    how = "cached" if built.cached else "built"
    say(f"environment {built.digest[:16]} ({how}, {built.files} files)")
    return built.digest
