"""client.commands.check: settings from flags > ./patchgate.toml [check] > defaults."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from client.cli import build_parser
from client.commands.check import load_defaults, settings_from_args
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
