"""client.lanes.state: where `up` keeps a lane's state, the git-ignore rule, the settings file
(issue 16, item 5), and how `check` finds those settings."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

from client.commands.check import check_defaults, load_defaults
from client.lanes.state import (
    MARKER,
    check_state_dir,
    lane_settings_file,
    lane_state_dir,
    resolve_state_dir,
    write_settings,
)
from patchgate.errors import UsageError


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=p", "-c", "user.email=p@example.org", *args],
        check=True, capture_output=True,
    )  # fmt: skip


@pytest.fixture
def work(tmp_path: Path) -> Path:
    repo = tmp_path / "w"
    repo.mkdir()
    _git(repo, "init", "-q")
    return repo


def test_default_state_is_under_xdg_state_home() -> None:
    env = {"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}
    assert lane_state_dir("local", env) == Path("/x/state/patchgate/local")


@pytest.mark.parametrize("xdg", ["", "relative/state"])
def test_unset_or_relative_xdg_state_home_means_home_local_state(xdg: str) -> None:
    env = {"XDG_STATE_HOME": xdg, "HOME": "/home/u"}
    assert lane_state_dir("b", env) == Path("/home/u/.local/state/patchgate/b")


@pytest.mark.parametrize("name", ["", "..", ".", "../x", "a/b", "-x", "a b", "x" * 65])
def test_a_lane_name_that_is_a_path_is_a_usage_error(name: str) -> None:
    with pytest.raises(UsageError, match="lane name"):
        lane_state_dir(name, {"XDG_STATE_HOME": "/s"})


def test_no_home_at_all_is_a_usage_error_for_up_and_no_default_lane_for_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def nowhere() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(nowhere))
    with pytest.raises(UsageError, match="set XDG_STATE_HOME"):
        lane_state_dir("local", {})
    monkeypatch.chdir(tmp_path)
    assert check_defaults(None, {}) == {}


def test_lane_and_state_together_are_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="give one"):
        resolve_state_dir(lane="a", state=tmp_path)
    assert resolve_state_dir(lane=None, state=tmp_path) == tmp_path


def test_state_inside_a_work_tree_without_an_ignore_rule_is_refused(work: Path) -> None:
    with pytest.raises(UsageError, match=r"not git-ignored"):
        check_state_dir(work / ".patchgate")
    assert not (work / ".patchgate").exists()


def test_state_in_a_subdirectory_of_a_work_tree_is_refused(work: Path) -> None:
    (work / "sub" / "deeper").mkdir(parents=True)
    with pytest.raises(UsageError, match=str(work)):
        check_state_dir(work / "sub" / "deeper" / "state")


def test_state_under_an_ignore_rule_is_accepted(work: Path) -> None:
    (work / ".gitignore").write_text(".patchgate/\n")
    check_state_dir(work / ".patchgate")


def test_an_ignore_rule_that_spares_the_key_is_refused(work: Path) -> None:
    """`st/*` with `!st/operator.key`: everything is ignored but the private key."""
    (work / ".gitignore").write_text("st/*\n!st/operator.key\n")
    with pytest.raises(UsageError, match=r"operator\.key is not git-ignored"):
        check_state_dir(work / "st")


def test_a_tracked_key_is_not_ignored_whatever_the_rule(work: Path) -> None:
    (work / "st").mkdir()
    (work / "st" / "operator.key").write_text("k")
    _git(work, "add", "st/operator.key")
    (work / ".gitignore").write_text("st/\n")
    with pytest.raises(UsageError, match="not git-ignored"):
        check_state_dir(work / "st")


def test_git_dir_in_the_environment_does_not_change_the_answer(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_DIR/GIT_WORK_TREE naming another repository (with an ignore-all rule) are dropped."""
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    (other / ".git" / "info" / "exclude").write_text("*\n")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(work))
    with pytest.raises(UsageError, match="not git-ignored"):
        check_state_dir(work / "st")


def test_a_symlink_into_a_work_tree_is_judged_where_it_points(work: Path, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(work)
    with pytest.raises(UsageError, match="not git-ignored"):
        check_state_dir(tmp_path / "link" / "st")


def test_when_git_cannot_answer_the_state_is_refused(work: Path) -> None:
    """A broken repository: fail closed."""
    (work / ".git" / "HEAD").write_text("garbage\n")
    with pytest.raises(UsageError, match="cannot say"):
        check_state_dir(work / "st")


def test_outside_any_work_tree_is_accepted(tmp_path: Path) -> None:
    check_state_dir(tmp_path / "plain" / "state")


def test_a_socket_path_too_long_for_a_unix_address_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="107 bytes"):
        check_state_dir(tmp_path / ("d" * 100))


@pytest.mark.parametrize("odd", ['quo"te', "new\nline", "back\\slash", "tab\tand ' single"])
def test_settings_round_trip_any_character_of_a_path(tmp_path: Path, odd: str) -> None:
    state = tmp_path / odd
    state.mkdir()
    table = {"signer": f"unix:{state}/signer/signer.sock", "executor": [f"unix:{state}/e.sock"],
             "operator_keyring": f"{state}/operator.key.pub"}  # fmt: skip
    path = write_settings(state, table)
    assert path.name == "check.toml"
    assert path.read_text().startswith(MARKER)
    assert tomllib.loads(path.read_text())["check"] == table
    assert load_defaults(path) == table
    assert path.stat().st_mode & 0o777 == 0o600


def test_lane_settings_file_takes_a_name_or_a_directory(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    assert lane_settings_file(None, env) == tmp_path / "patchgate" / "local" / "check.toml"
    assert lane_settings_file("ci", env) == tmp_path / "patchgate" / "ci" / "check.toml"
    assert lane_settings_file("./st", env) == Path("st") / "check.toml"


def _lane(tmp_path: Path, name: str, signer: str) -> None:
    state = tmp_path / "xdg" / "patchgate" / name
    state.mkdir(parents=True)
    write_settings(state, {"signer": signer, "executor": [f"unix:/{name}.sock"]})


def test_check_reads_the_default_lane_when_it_is_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"XDG_STATE_HOME": str(tmp_path / "xdg")}
    assert check_defaults(None, env) == {}
    _lane(tmp_path, "local", "unix:/local-signer.sock")
    assert check_defaults(None, env)["signer"] == "unix:/local-signer.sock"


def test_a_patchgate_toml_check_table_wins_over_the_default_lane_and_loses_to_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"XDG_STATE_HOME": str(tmp_path / "xdg")}
    _lane(tmp_path, "local", "unix:/local.sock")
    _lane(tmp_path, "ci", "unix:/ci.sock")
    (tmp_path / "patchgate.toml").write_text('[check]\nsigner = "unix:/mine.sock"\n')
    assert check_defaults(None, env)["signer"] == "unix:/mine.sock"
    assert check_defaults(None, env)["executor"] == ["unix:/local.sock"]
    assert check_defaults("ci", env)["signer"] == "unix:/ci.sock"


def test_a_named_lane_that_is_not_up_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="is the lane up"):
        check_defaults("nope", {"XDG_STATE_HOME": str(tmp_path)})


def test_a_patchgate_toml_of_an_older_up_is_refused_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old `up` wrote its [check] snippet to ./patchgate.toml, the project's config name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "patchgate.toml").write_text(
        f'{MARKER}; `patchgate down` does not remove it\n[check]\nsigner = "unix:/s"\n'
    )
    with pytest.raises(UsageError, match=r"older `patchgate up`; delete it"):
        check_defaults(None, {"XDG_STATE_HOME": str(tmp_path / "xdg")})
