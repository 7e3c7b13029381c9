"""client.commands.check: --isolation run|property, from the flag or [check] isolation."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchgate.errors import UsageError
from tests.unit.test_cmd_check_lanes import S, settings_from

LOCAL = ("--executor", "unix:/x.sock")


def test_isolation_defaults_to_run(repo: Path) -> None:
    assert settings_from(repo, *S, *LOCAL).isolation == "run"


def test_isolation_from_flag_wins_over_config(repo: Path) -> None:
    conf = {"isolation": "run"}
    assert settings_from(repo, *S, *LOCAL, "--isolation", "property", conf=conf).isolation == (
        "property"
    )
    assert settings_from(repo, *S, *LOCAL, conf={"isolation": "property"}).isolation == "property"


@pytest.mark.parametrize("bad", ["Run", "none", 1])
def test_an_unknown_isolation_in_config_is_a_usage_error(repo: Path, bad: object) -> None:
    with pytest.raises(UsageError, match="isolation must be run or property"):
        settings_from(repo, *S, *LOCAL, conf={"isolation": bad})


def test_an_unknown_isolation_flag_is_refused_by_the_parser(repo: Path) -> None:
    with pytest.raises(SystemExit):
        settings_from(repo, *S, *LOCAL, "--isolation", "sandbox")
