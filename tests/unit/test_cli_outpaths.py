"""Issue 23 item 1: no command writes where it reads. Every output path of every command is
refused (64, nothing written) inside the pins directory, the fixture tree or an oracle path of the
repository it reads (or, for a command that reads none, of the work tree the path lies in), onto
one of its inputs, or where it cannot write. The pin files' bytes are unchanged after each."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from client.cli import main
from patchgate.ledgers import FixtureLedger, PropertyLedger
from patchgate.results import RunOutcome

TEST = "tests/test_w.py::test_w"

FIXTURE_PIN = {
    "pin_id": "fixpin-a",
    "algorithm": "sha256",
    "files": {"fixtures/a.json": hashlib.sha256(b"a").hexdigest()},
    "seed": 7,
    "clock_bound_ms": 30000,
    "allowed_commands": [["python", "-m", "pytest"]],
}
FLAKES = {
    "flakes": [
        {
            "id": "FLK-1",
            "signature": "TimeoutError: w",
            "opened_on": "2026-09-02",
            "expires_on": "2026-10-16",
            "tests": ["tests/test_w.py::test_w"],
        }
    ]
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """A committed target repository: pins, one fixture, tests/ and properties/, and ledgers."""
    r = tmp_path / "target"
    for d in ("pins", "fixtures", "tests", "properties", "ledgers"):
        (r / d).mkdir(parents=True)
    (r / "pins" / "fixtures.json").write_text(json.dumps(FIXTURE_PIN))
    (r / "pins" / "properties.json").write_text('{"properties": []}')
    (r / "pins" / "flakes.json").write_text(json.dumps(FLAKES))
    (r / "fixtures" / "a.json").write_text("a")
    (r / "tests" / "test_w.py").write_text("def test_w():\n    assert 1 + 1 == 2\n")
    (r / "properties" / "test_p.py").write_text("def test_p():\n    assert 2 > 1\n")
    PropertyLedger(pin_id="left", fixture_digest="a" * 64, status_by_id={"x": "pass"}).write(
        r / "ledgers" / "left.json"
    )
    PropertyLedger(pin_id="right", fixture_digest="b" * 64, status_by_id={"x": "fail"}).write(
        r / "ledgers" / "right.json"
    )
    FixtureLedger(pin_id="fixpin-a", digest="c" * 64).write(r / "ledgers" / "fixture.json")
    runs = [
        {**RunOutcome.make("w", i, "fail", "TimeoutError: w").to_json(), "test_id": TEST}
        for i in (1, 2)
    ]
    PropertyLedger(pin_id="fixpin-a", fixture_digest="c" * 64, runs=runs).write(
        r / "ledgers" / "prop.json"
    )
    (r / ".gitignore").write_text("ledgers/\n")
    _git(r, "init", "-q")
    _git(r, "add", "-A")
    _git(r, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    return r


def _snapshot(repo: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }


Argv = Callable[[Path, str], list[str]]


def _digest(r: Path, out: str) -> list[str]:
    return ["digest", "--pin", str(r / "pins/fixtures.json"), "--root", str(r), "--out", out]


def _dualpin(r: Path, out: str) -> list[str]:
    left, right = r / "ledgers/left.json", r / "ledgers/right.json"
    return ["dual-pin", "--left", str(left), "--right", str(right), "--out", out]


def _flake(r: Path, out: str) -> list[str]:
    return [
        "flake-observe", "--fixture-ledger", str(r / "ledgers/fixture.json"),
        "--property-ledger", str(r / "ledgers/prop.json"),
        "--flake-pin", str(r / "pins/flakes.json"), "--test-id", "tests/test_w.py::test_w",
        "--clock", "2026-09-10T12:00:00Z", "--out", out,
    ]  # fmt: skip


def _check(r: Path, out: str) -> list[str]:
    patch = r.parent / "p.diff"
    patch.write_text("")
    return [
        "check", "--repo", str(r), "--base", "HEAD", "--patch", str(patch), "--draft-id", "d",
        "--drafter", "human", "--signer", "unix:/nonexistent/s.sock",
        "--executor", "unix:/nonexistent/e.sock", "--out", out,
    ]  # fmt: skip


def _properties(r: Path, out: str) -> list[str]:
    return [
        "properties", "--repo", str(r), "--base", "HEAD", "--expect-digest", "0" * 64,
        "--signer", "unix:/nonexistent/s.sock", "--executor", "unix:/nonexistent/e.sock",
        "--out", out,
    ]  # fmt: skip


def _check_junit(r: Path, out: str) -> list[str]:
    return [*_check(r, str(r.parent / "ok-out")), "--junit", out]


COMMANDS: dict[str, Argv] = {
    "digest": _digest,
    "dual-pin": _dualpin,
    "flake-observe": _flake,
    "check": _check,
    "check --junit": _check_junit,
    "properties": _properties,
}
# Where no output may go, relative to the target repository ("{in}" = an input of the command).
PLACES = [
    "pins/properties.json",
    "pins/flakes.json",
    "pins",
    "pins/new.json",
    "fixtures/out.json",
    "tests/out.json",
    "properties/out.json",
    "ledgers/../pins/properties.json",
    "linked/properties.json",
    ".git/hooks/pre-commit",
]


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("place", PLACES)
def test_an_output_where_the_command_reads_is_refused_and_nothing_changes(
    target: Path, command: str, place: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (target / "linked").symlink_to(target / "pins")
    before = _snapshot(target)
    code = main(COMMANDS[command](target, str(target / place)))
    err = capsys.readouterr().err
    assert code == 64, err
    assert "never writes where it reads" in err
    assert _snapshot(target) == before
    assert not (target.parent / "ok-out").exists()


@pytest.mark.parametrize("command", ["dual-pin", "flake-observe"])
def test_an_output_onto_an_input_is_refused(
    target: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(target)
    victim = "ledgers/right.json" if command == "dual-pin" else "ledgers/prop.json"
    assert main(COMMANDS[command](target, str(target / victim))) == 64
    assert "an input of this command" in capsys.readouterr().err
    assert _snapshot(target) == before


def test_a_work_tree_configuration_moves_the_places_refused(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """dual-pin reads no repository: the work tree its --out lies in, with its own
    [tool.patchgate] (here oracle paths spec/), is what it must not write into."""
    (target / "pyproject.toml").write_text('[tool.patchgate]\noracle_paths = ["spec/"]\n')
    (target / "spec").mkdir()
    assert main(_dualpin(target, str(target / "spec" / "drift.json"))) == 64
    assert "oracle path spec/" in capsys.readouterr().err
    assert main(_dualpin(target, str(target / "ledgers" / "drift.json"))) == 3


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("where", ["/proc/x", "/sys/x/y", "/dev/patchgate-out"])
def test_an_output_the_system_owns_is_a_usage_error(
    target: Path, command: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25: --out /proc/x exited 4; every output path there is 64 with a clear line."""
    assert main(COMMANDS[command](target, where)) == 64
    assert "not a place for output" in capsys.readouterr().err


def test_an_unwritable_directory_is_a_usage_error(
    target: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        code = main(_dualpin(target, str(locked / "drift.json")))
    finally:
        locked.chmod(0o700)
    import os  # noqa: PLC0415

    if os.geteuid() == 0:  # root writes anywhere: the access check cannot refuse
        assert code == 3
    else:
        assert code == 64
        assert "is not writable" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["digest", "dual-pin", "flake-observe"])
def test_outside_the_places_each_command_writes(target: Path, tmp_path: Path, command: str) -> None:
    out = tmp_path / "elsewhere" / "out.json"
    assert main(COMMANDS[command](target, str(out))) == (3 if command == "dual-pin" else 0)
    assert out.is_file()


# issue 24 item 5: check's --out default is outside the repository, printed ----------------------


def _check_args(repo: Path, *extra: str) -> list[str]:
    return ["check", "--repo", str(repo), "--base", "HEAD", "--self-test",
            "--signer", "unix:/s", "--executor", "unix:/e", *extra]  # fmt: skip


def test_the_default_out_is_under_the_temp_dir_without_a_lane(
    target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from client.cli import build_parser  # noqa: PLC0415
    from client.commands.check import settings_from_args  # noqa: PLC0415

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.delenv("PATCHGATE_OUT", raising=False)
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(target)
    import tempfile  # noqa: PLC0415

    monkeypatch.setattr(tempfile, "tempdir", None)
    s = settings_from_args(build_parser().parse_args(_check_args(target)), {})
    assert s.out.parent == tmp_path / "tmp"
    assert s.out.name.startswith("patchgate-check-")
    assert not s.out.resolve().is_relative_to(target.resolve())
    assert not (target / "ledgers" / "receipt.json").exists()


def test_the_default_out_is_under_the_lane_state_when_a_lane_is_up(
    target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from client.commands.check import default_out  # noqa: PLC0415

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    lane = tmp_path / "state" / "patchgate" / "local"
    lane.mkdir(parents=True)
    (lane / "check.toml").write_text("[check]\n")
    out = default_out(target, None)
    assert out.parent == (lane / "ledgers").resolve()
    # a lane whose state lies inside the repository: the temp dir instead
    assert not default_out(tmp_path, None).is_relative_to(tmp_path / "state")


def test_check_prints_where_the_default_ledgers_go(
    target: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The message comes before anything runs (here the unreachable signer stops the run)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("PATCHGATE_OUT", raising=False)
    monkeypatch.chdir(target)
    main(_check_args(target))
    err = capsys.readouterr().err
    assert "ledgers go to" in err
    assert not (target / "ledgers" / "receipt.json").exists()
    assert _git_status(target) == ""


def _git_status(repo: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--ignored"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return "\n".join(
        line for line in proc.stdout.splitlines() if line.strip() not in ("!! ledgers/",)
    )


PLAIN_PLACES = [
    "pins/properties.json",
    "pins/flakes.json",
    "fixtures/out.json",
    "tests/out.json",
    "properties/out.json",
]


@pytest.mark.parametrize("command", ["digest", "dual-pin", "flake-observe"])
@pytest.mark.parametrize("place", PLAIN_PLACES)
def test_in_a_plain_directory_no_command_writes_into_the_pins_either(
    target: Path, tmp_path: Path, command: str, place: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed 004: inside a git work tree every attempt was refused, but in a plain directory
    dual-pin and digest overwrote pins/properties.json and pins/flakes.json. Here the output goes
    into another project, a plain directory (no .git) with its pins, fixtures and oracle paths."""
    plain = tmp_path / "plain"
    for d in ("pins", "fixtures", "tests", "properties"):
        (plain / d).mkdir(parents=True)
    (plain / "pins" / "properties.json").write_text('{"properties": []}')
    (plain / "pins" / "flakes.json").write_text(json.dumps(FLAKES))
    before = _snapshot(plain)
    code = main(COMMANDS[command](target, str(plain / place)))
    err = capsys.readouterr().err
    assert code == 64, err
    assert "never writes where it reads" in err
    assert _snapshot(plain) == before


def test_in_a_plain_directory_an_output_beside_the_pins_is_written(
    target: Path, tmp_path: Path
) -> None:
    """The honest shape: the same plain project's ledgers/ directory takes the output."""
    plain = tmp_path / "plain"
    (plain / "pins").mkdir(parents=True)
    (plain / "ledgers").mkdir()
    assert main(_dualpin(target, str(plain / "ledgers" / "drift.json"))) == 3  # drift: written
    assert (plain / "ledgers" / "drift.json").is_file()
    assert main(_digest(target, str(plain / "ledgers" / "fixture.json"))) == 0
    assert (plain / "ledgers" / "fixture.json").is_file()
