"""check's output side (issue 16): PATCHGATE_* settings, --self-test and --patch, --format,
progress on stderr, --version."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from client.cli import build_parser, main
from client.commands._output import Progress, env_settings
from client.commands.check import settings_from_args
from patchgate.errors import UsageError


def _args(repo: Path, *extra: str) -> argparse.Namespace:
    return build_parser().parse_args(["check", "--repo", str(repo), "--base", "HEAD", *extra])


ENV = {
    "PATCHGATE_SIGNER": "unix:/env-signer.sock",
    "PATCHGATE_EXECUTOR": "unix:/e1.sock, unix:/e2.sock",
    "PATCHGATE_OPERATOR_KEYRING": "/env/keyring.json",
    "PATCHGATE_OUT": "env-ledgers",
}


def test_the_environment_gives_every_setting_and_splits_executors() -> None:
    assert env_settings(ENV) == {
        "signer": "unix:/env-signer.sock",
        "executor": ["unix:/e1.sock", "unix:/e2.sock"],
        "operator_keyring": "/env/keyring.json",
        "out": "env-ledgers",
    }
    assert env_settings({"PATCHGATE_SIGNER": "  ", "PATCHGATE_EXECUTOR": ","}) == {}


def test_environment_wins_over_the_config_and_flags_win_over_both(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    for var, value in ENV.items():
        monkeypatch.setenv(var, value)
    conf = {"signer": "unix:/conf.sock", "executor": ["unix:/conf-e.sock"], "out": "conf-out"}
    s = settings_from_args(_args(repo, "--patch", "p.diff"), conf)
    assert s.signer == "unix:/env-signer.sock"
    assert s.executors == ("unix:/e1.sock", "unix:/e2.sock")
    assert s.operator_keyring == Path("/env/keyring.json")
    assert s.out == Path("env-ledgers")
    flags = _args(
        repo, "--patch", "p.diff", "--signer", "unix:/flag.sock", "--executor", "unix:/f.sock",
        "--operator-keyring", "/flag/ring.json", "--out", "flag-out",
    )  # fmt: skip
    s = settings_from_args(flags, conf)
    assert (s.signer, s.executors) == ("unix:/flag.sock", ("unix:/f.sock",))
    assert (s.operator_keyring, s.out) == (Path("/flag/ring.json"), Path("flag-out"))


def test_patch_is_required_but_with_self_test(repo: Path) -> None:
    conf = {"signer": "unix:/s.sock", "executor": ["unix:/e.sock"]}
    with pytest.raises(UsageError, match="--patch is required"):
        settings_from_args(_args(repo), conf)
    with pytest.raises(UsageError, match="drop --patch"):
        settings_from_args(_args(repo, "--self-test", "--patch", "p.diff"), conf)
    assert settings_from_args(_args(repo, "--self-test"), conf).signer == "unix:/s.sock"


def test_an_unknown_format_or_a_contradiction_is_a_usage_error(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--repo", str(repo), "--base", "HEAD", "--format", "xml"]) == 64
    code = main([
        "check", "--repo", str(repo), "--base", "HEAD", "--patch", "p", "--signer", "unix:/s",
        "--executor", "unix:/e", "--json", "--format", "markdown",
    ])  # fmt: skip
    assert code == 64
    assert "--json and --format markdown disagree" in capsys.readouterr().err


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("patchgate 0.")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


EVENT = "p.a: p.a#1 verify envelope ok"
DONE = "[local 1/2] p.a on unix:/e.sock: run 1 pass, run 2 pass"


def test_plain_progress_shows_lane_lines_and_warnings_not_executor_events() -> None:
    out = io.StringIO()
    say = Progress(verbose=False, quiet=False, stream=out)
    for line in ("local lane: 2 properties", EVENT, DONE, "warning: covers entry x"):
        say(line)
    assert out.getvalue().splitlines() == [
        "local lane: 2 properties",
        DONE,
        "warning: covers entry x",
    ]


def test_verbose_shows_executor_events_and_quiet_shows_nothing() -> None:
    out = io.StringIO()
    Progress(verbose=True, quiet=False, stream=out)(EVENT)
    assert out.getvalue() == EVENT + "\n"
    quiet = io.StringIO()
    say = Progress(verbose=False, quiet=True, stream=quiet)
    say(DONE)
    say("warning: x")
    assert quiet.getvalue() == ""


def test_a_terminal_gets_one_live_line_with_done_total_and_elapsed() -> None:
    out = _Tty()
    say = Progress(verbose=False, quiet=False, stream=out)
    say(DONE)
    say(DONE.replace("1/2", "2/2"))
    say.end()
    text = out.getvalue()
    assert text.count("\n") == 1  # one line, rewritten in place
    assert "\r\x1b[K[local 2/2 0:00] p.a on" in text


def test_a_junit_file_that_cannot_be_written_is_refused_before_the_check(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["check", "--repo", str(repo), "--base", "HEAD", "--patch", "p", "--signer",
              "unix:/nonexistent/s", "--executor", "unix:/nonexistent/e"]  # fmt: skip
    assert main([*common, "--junit", str(tmp_path / "no" / "such" / "dir" / "j.xml")]) == 64
    assert "is no directory" in capsys.readouterr().err
    assert main([*common, "--junit", str(tmp_path)]) == 64
    assert "is a directory" in capsys.readouterr().err


def test_a_junit_file_inside_the_out_dir_the_check_will_make_is_accepted(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CI examples write --junit into --out before the check has made that directory."""
    out = tmp_path / "report"
    common = ["check", "--repo", str(repo), "--base", "HEAD", "--patch", "p", "--signer",
              "unix:/nonexistent/s", "--executor", "unix:/nonexistent/e"]  # fmt: skip
    main([*common, "--out", str(out), "--junit", str(out / "junit.xml")])
    assert "--junit" not in capsys.readouterr().err


def test_progress_never_passes_an_escape_sequence_through() -> None:
    out = io.StringIO()
    Progress(verbose=True, quiet=False, stream=out)("p: p#1 done \x1b[2Jerror\r")
    assert out.getvalue() == "p: p#1 done ?[2Jerror?\n"
