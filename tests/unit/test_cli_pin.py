"""The operator commands through the real CLI on a freshly generated ``src/``-layout library:
init → pin fixtures → pin properties --from-pytest → pin check, and their refusals."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from client.cli import main
from tests.unit._pinning_helpers import git, make_library, write

ROOT = Path(__file__).resolve().parents[2]


def _pg(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "client", *args, "--repo", str(repo)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def test_a_new_library_is_put_under_patchgate_with_commands_only(tmp_path: Path) -> None:
    """The whole operator path of issue 16, exit codes and output as a person sees them."""
    lib = make_library(tmp_path / "textkit")
    git(lib, "init", "-q")
    before = _snapshot(lib)
    untracked = _pg(lib, "init")  # issue 24: a fixture git does not track is refused
    assert untracked.returncode == 78
    assert "fixtures/words.json: not tracked by git" in untracked.stderr
    assert _snapshot(lib) == before
    git(lib, "add", "fixtures")

    init = _pg(lib, "init")
    assert init.returncode == 0, init.stderr
    assert "wrote pins/fixtures.json" in init.stdout
    assert "source_roots: src" in init.stdout

    write(lib, {"fixtures/words.json": '{"words": ["c"]}\n', "fixtures/more.txt": "m"})
    pin_before = (lib / "pins/fixtures.json").read_bytes()
    refused = _pg(lib, "pin", "fixtures")
    assert refused.returncode == 78
    assert "fixtures/more.txt: not tracked by git" in refused.stderr
    assert (lib / "pins/fixtures.json").read_bytes() == pin_before
    skipped = _pg(lib, "pin", "fixtures", "--skip-untracked", "--json")
    assert skipped.returncode == 0, skipped.stderr
    assert json.loads(skipped.stdout)["skipped_untracked"] == ["fixtures/more.txt"]
    git(lib, "add", "fixtures")
    fx = _pg(lib, "pin", "fixtures")
    assert fx.returncode == 0, fx.stderr
    assert fx.stdout.splitlines()[:1] == ["added fixtures/more.txt"]

    props = _pg(lib, "pin", "properties", "--from-pytest")
    assert props.returncode == 0, props.stderr
    assert "added textkit.slugify.idempotent" in props.stdout
    assert "added tests.test_core.test_count" in props.stdout

    ok = _pg(lib, "pin", "check")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("pins OK (the working tree): 2 fixture files, 2 properties")
    assert ok.stdout.count("\n") == 1

    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "pins")
    assert _pg(lib, "pin", "check", "--rev", "HEAD").returncode == 0

    pins = lib / "pins" / "properties.json"
    pins.write_text(pins.read_text().replace('"textkit.core.slugify"', '"textkit.core.slugfy"'))
    typo = _pg(lib, "pin", "check")
    assert typo.returncode == 78
    assert typo.stdout == ""
    (line,) = typo.stderr.splitlines()
    assert line.startswith("patchgate: configuration error: ")
    assert line.endswith("did you mean textkit.core.slugify?")

    pins.write_text(pins.read_text().replace('"pure_fn"', '"fast"', 1))
    two = _pg(lib, "pin", "check", "--json")
    assert two.returncode == 78
    problems = json.loads(two.stdout)["problems"]
    assert len(problems) == 2
    assert len(two.stderr.splitlines()) == 2
    assert "'fast' is not one of" in problems[0]
    assert "did you mean" in problems[1]

    assert _pg(lib, "pin", "check", "--rev", "HEAD").returncode == 0  # the committed pins


def test_init_twice_is_refused_and_nothing_is_overwritten(tmp_path: Path) -> None:
    lib = make_library(tmp_path / "textkit")
    assert _pg(lib, "init").returncode == 0
    before = _snapshot(lib)
    again = _pg(lib, "init")
    assert again.returncode == 64
    (line,) = again.stderr.splitlines()
    assert line.startswith("patchgate: refused: pins/fixtures.json, pins/properties.json")
    assert _snapshot(lib) == before


def test_init_with_no_fixture_file_warns_that_no_check_is_admitted(tmp_path: Path) -> None:
    lib = make_library(tmp_path / "textkit")
    assert not _pg(lib, "init", "--json").stderr  # one fixture file: no warning
    shutil.rmtree(lib / "pins")
    (lib / "pyproject.toml").unlink()
    shutil.rmtree(lib / "fixtures")
    done = _pg(lib, "init")
    assert done.returncode == 0
    assert "fixture files pinned: 0" in done.stdout
    (warning,) = done.stderr.splitlines()
    assert warning.startswith("patchgate: warning: pins/fixtures.json pins no file under the ")
    assert "never admitted" in warning


def test_init_json_and_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json for machines; a missing --repo directory and an unknown --rev are usage errors."""
    lib = make_library(tmp_path / "textkit", pyproject=False)
    assert main(["init", "--repo", str(lib), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config_file"] == "patchgate.toml"
    assert out["source_roots"] == ["src"]
    assert main(["pin", "check", "--repo", str(tmp_path / "nope")]) == 64
    git(lib, "init", "-q")
    assert main(["pin", "check", "--repo", str(lib), "--rev", "nope"]) == 64
    assert "--rev: revision 'nope': not a commit" in capsys.readouterr().err
    assert main(["pin", "properties", "--repo", str(lib)]) == 64  # --from-pytest is required


def test_pin_fixtures_refuses_an_unsafe_tree_with_exit_2(tmp_path: Path) -> None:
    lib = make_library(tmp_path / "textkit")
    assert _pg(lib, "init").returncode == 0
    (lib / "fixtures" / "link").symlink_to(lib / "pyproject.toml")
    before = _snapshot(lib)
    res = _pg(lib, "pin", "fixtures")
    assert res.returncode == 2
    assert "unsafe: fixtures/link" in res.stderr
    assert _snapshot(lib) == before


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["init"], ["pin"], ["pin", "fixtures"], ["pin", "properties"], ["pin", "check"]):
        assert main([*argv, "--help"]) == 0
        assert "usage: patchgate" in capsys.readouterr().out


def test_the_shipped_example_passes_pin_check(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/billing, the pins the demo runs on, are valid by the operator's own check."""
    assert main(["pin", "check", "--repo", str(ROOT / "examples" / "billing")]) == 0
    assert capsys.readouterr().out.startswith("pins OK (the working tree): ")


def test_pin_commands_print_json_for_machines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json: the changes as lists, the pin file and its count; nothing else on stdout."""
    lib = make_library(tmp_path / "textkit")
    assert main(["init", "--repo", str(lib)]) == 0
    capsys.readouterr()
    write(lib, {"fixtures/new.txt": "n"})
    assert main(["pin", "fixtures", "--repo", str(lib), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["added"], out["removed"], out["changed"], out["files"]) == (
        ["fixtures/new.txt"],
        [],
        [],
        2,
    )
    assert main(["pin", "properties", "--from-pytest", "--repo", str(lib), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["added"] == ["tests.test_core.test_count", "textkit.slugify.idempotent"]
    assert out["properties"] == 2
