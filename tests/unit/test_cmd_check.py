"""client.commands.check: settings from flags > ./patchgate.toml [check] > defaults."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

from client.cli import build_parser, main
from client.commands.check import load_defaults, settings_from_args
from client.errors import ConfigError, exit_code_for
from patchgate.errors import UsageError


def _args(repo: Path, *extra: str) -> argparse.Namespace:
    base = ["check", "--repo", str(repo), "--base", "HEAD", "--patch", "p.diff"]
    return build_parser().parse_args([*base, *extra])


def test_config_file_supplies_signer_and_executors(repo: Path, tmp_path: Path) -> None:
    conf = tmp_path / "patchgate.toml"
    conf.write_text(
        '[check]\nsigner = "unix:/s.sock"\nexecutor = ["unix:/a.sock", "unix:/b.sock"]\n'
    )
    s = settings_from_args(_args(repo), load_defaults(conf))
    assert (s.signer, s.executors) == ("unix:/s.sock", ("unix:/a.sock", "unix:/b.sock"))


def test_flags_win_over_the_config_file(repo: Path) -> None:
    s = settings_from_args(_args(repo, "--signer", "unix:/f.sock", "--executor", "unix:/x.sock"),
                           {"signer": "unix:/s.sock", "executor": ["unix:/a.sock"]})  # fmt: skip
    assert (s.signer, s.executors) == ("unix:/f.sock", ("unix:/x.sock",))


def test_missing_signer_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(UsageError):
        settings_from_args(_args(repo, "--executor", "unix:/x.sock"), {})


def test_unknown_config_key_is_a_usage_error(tmp_path: Path) -> None:
    conf = tmp_path / "patchgate.toml"
    conf.write_text('[check]\nsigner = "x"\nsinger = "typo"\n')
    with pytest.raises(UsageError):
        load_defaults(conf)


def test_absent_config_file_gives_no_defaults(tmp_path: Path) -> None:
    assert load_defaults(tmp_path / "none.toml") == {}


def test_out_inside_pins_is_refused(repo: Path) -> None:
    args = _args(repo, "--signer", "s", "--executor", "e", "--out", str(repo / "pins" / "x"))
    with pytest.raises(UsageError):
        settings_from_args(args, {})


def test_partial_tls_flags_are_a_usage_error(repo: Path, tmp_path: Path) -> None:
    args = _args(repo, "--signer", "s", "--executor", "e", "--signer-tls-ca", str(tmp_path / "ca"))
    with pytest.raises(UsageError):
        settings_from_args(args, {})


def _commit(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    who = ["-c", "user.name=t", "-c", "user.email=t@e"]
    for args in (["add", "-A"], [*who, "commit", "-qm", "pins"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


FLAGS = ("--signer", "unix:/s.sock", "--executor", "unix:/x.sock")


def test_unknown_base_is_a_usage_error_64(repo: Path) -> None:
    """Issue 13: an unknown --base exits 64, not 1 ("git show failed")."""
    args = build_parser().parse_args(
        ["check", "--repo", str(repo), "--base", "no-such-rev", "--patch", "p.diff", *FLAGS]
    )
    with pytest.raises(UsageError, match="no-such-rev") as info:
        settings_from_args(args, {})
    assert exit_code_for(info.value) == 64


def test_the_base_is_resolved_to_its_commit(repo: Path) -> None:
    s = settings_from_args(_args(repo, *FLAGS), {})
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert s.base == head


def test_invalid_base_pins_are_a_config_error_78_listing_every_problem(repo: Path) -> None:
    _commit(
        repo,
        {
            "pins/fixtures.json": '{"pin_id": "bad id!", "algorithm": "md5", "files": {},'
            ' "seed": 7, "clock_bound_ms": 1, "allowed_commands": [["python"]]}',
        },
    )
    with pytest.raises(ConfigError) as info:
        settings_from_args(_args(repo, *FLAGS), {})
    problems = info.value.problems
    assert any("pin_id" in p for p in problems)
    assert any("algorithm" in p for p in problems)
    assert exit_code_for(info.value) == 78


def test_invalid_base_config_is_a_config_error(repo: Path) -> None:
    _commit(repo, {"patchgate.toml": '[tool.patchgate]\npins_dirr = "pins"\n'})
    with pytest.raises(ConfigError, match="pins_dirr"):
        settings_from_args(_args(repo, *FLAGS), {})


def test_the_cli_prints_each_config_problem_on_its_own_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _commit(
        repo,
        {"pins/properties.json": '{"properties": [{"id": "a"}, {"id": "b"}]}'},
    )
    argv = ["check", "--repo", str(repo), "--base", "HEAD", "--patch", "p.diff", *FLAGS]
    assert main(argv) == 78
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 2
    assert all(line.startswith("patchgate: configuration error: ") for line in lines)
    assert any("properties[0]" in line for line in lines)
    assert any("properties[1]" in line for line in lines)
