"""The CLI boundary: usage errors exit 64, one readable line per error, --verbose tracebacks."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from client.cli import _COMMANDS, build_parser, main
from client.errors import CommandRefused, exit_code_for
from patchgate.errors import (
    FixtureScanError,
    LedgerError,
    PatchgateError,
    PinError,
    RefusedError,
    TransportError,
    UsageError,
    VerificationError,
)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (UsageError("x"), 64),
        (FixtureScanError(missing=["a"]), 2),
        (TransportError("unavailable", "down"), 4),
        (CommandRefused("no"), 3),
        (CommandRefused("drift", exit_code=3), 3),
        (PinError("f", "k", "why"), 1),
        (VerificationError("bad"), 1),
        (RefusedError("FAILED_PRECONDITION", "no"), 1),
        (LedgerError("x"), 1),
        (PatchgateError("x"), 1),
    ],
)
def test_exit_code_for(exc: PatchgateError, code: int) -> None:
    """Each error maps to its documented exit code."""
    assert exit_code_for(exc) == code


@pytest.mark.parametrize(
    "argv", [[], ["nope"], ["digest"], ["digest", "--pin"], ["dual-pin", "--left", "a", "--bogus"]]
)
def test_usage_errors_exit_64(argv: list[str]) -> None:
    """No command, an unknown command, missing or unknown flags: 64."""
    assert main(argv) == 64


def test_help_exits_0_and_explains_commands(capsys: pytest.CaptureFixture[str]) -> None:
    """--help lists every command with a one-line explanation and the exit codes."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("digest", "dual-pin", "flake-observe"):
        assert command in out
    assert "64" in out


@pytest.mark.parametrize("command", ["digest", "dual-pin", "flake-observe"])
def test_command_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's --help describes what it writes and when it refuses."""
    assert main([command, "--help"]) == 0
    assert "exit" in capsys.readouterr().out


def test_every_registered_module_has_register_and_run() -> None:
    """The registry's modules follow the interface (register + run)."""
    for name in _COMMANDS:
        module = importlib.import_module(name)
        assert callable(module.register)
        assert callable(module.run)
    assert build_parser().prog == "patchgate"


def test_error_is_one_line_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PatchgateError prints one line on stderr and no traceback."""
    argv = ["dual-pin", "--left", str(tmp_path / "a"), "--right", str(tmp_path / "b")]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("patchgate: error:")
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("position", ["before", "after"])
def test_verbose_prints_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], position: str
) -> None:
    """--verbose before or after the command name adds the traceback; the exit code is the same."""
    argv = ["dual-pin", "--left", str(tmp_path / "a"), "--right", str(tmp_path / "b")]
    argv += ["--out", str(tmp_path / "o")]
    argv = ["--verbose", *argv] if position == "before" else [*argv, "--verbose"]
    assert main(argv) == 1
    assert "Traceback" in capsys.readouterr().err


def test_console_script_exit_code(tmp_path: Path) -> None:
    """The installed entry point exits with main()'s code, with no stdin."""
    proc = subprocess.run(
        [sys.executable, "-m", "client.cli", "digest"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 64
    assert b"usage" in proc.stderr
