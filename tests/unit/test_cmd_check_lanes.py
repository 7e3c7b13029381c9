"""client.commands.check: the remote-only and executor-concurrency settings (docs/lanes.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from client.commands.check import settings_from_args
from client.gate.settings import CheckSettings
from patchgate.errors import UsageError
from tests.unit.test_cmd_check import _args

S = ("--signer", "unix:/s.sock")
REMOTE = ("--remote-executor", "r.example:7443")


def test_remote_only_runs_no_local_executor(repo: Path) -> None:
    s = settings_from(repo, *S, *REMOTE, "--remote-only")
    assert (s.executors, s.remote_executor) == ((), "r.example:7443")


def test_remote_only_ignores_configured_local_executors(repo: Path) -> None:
    s = settings_from(repo, *S, *REMOTE, "--remote-only", conf={"executor": ["unix:/a.sock"]})
    assert s.executors == ()


def test_remote_without_local_and_without_remote_only_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(UsageError, match="--remote-only"):
        settings_from(repo, *S, *REMOTE)


def test_remote_only_needs_a_remote_executor(repo: Path) -> None:
    with pytest.raises(UsageError, match="needs --remote-executor"):
        settings_from(repo, *S, "--remote-only")


def test_remote_only_with_executor_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(UsageError, match="drop --executor"):
        settings_from(repo, *S, *REMOTE, "--remote-only", "--executor", "unix:/x.sock")


def test_executor_concurrency_from_flag_or_config(repo: Path) -> None:
    local = ("--executor", "dns:///tasks.executord:7070")
    assert settings_from(repo, *S, *local).executor_concurrency is None
    assert settings_from(repo, *S, *local, "--executor-concurrency", "3").executor_concurrency == 3
    conf: dict[str, Any] = {"executor_concurrency": 4}
    assert settings_from(repo, *S, *local, conf=conf).executor_concurrency == 4


@pytest.mark.parametrize("bad", ["0", "-1"])
def test_executor_concurrency_must_be_positive(repo: Path, bad: str) -> None:
    with pytest.raises(UsageError, match="positive"):
        settings_from(repo, *S, "--executor", "unix:/x.sock", "--executor-concurrency", bad)


def settings_from(repo: Path, *argv: str, conf: dict[str, Any] | None = None) -> CheckSettings:
    """Settings of ``check`` with the given flags and ``[check]`` table."""
    return settings_from_args(_args(repo, *argv), conf or {})
