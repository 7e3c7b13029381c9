"""A patch that edits the CI files that run the gate is a pin mutation (R8) when the base's
``[tool.patchgate] ci_files`` names them (issue 43): the attack (the workflow turned into
``exit 0`` beside an honest-looking change) and the honest control (the same change alone).

The real pipeline on a git copy of examples/billing; these checks stop before any daemon (the
pin mutation) or at the unreachable signer (the control), never reaching a socket that exists.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path

import pytest

from client.gate.pipeline import run_check
from client.gate.settings import CheckSettings
from patchgate.errors import PinError
from patchgate.pins import DirSource, load_config

ROOT = Path(__file__).resolve().parents[2]
BILLING = ROOT / "examples" / "billing"
REFACTOR = (BILLING / "patches" / "prorate_refactor.patch").read_text()
WORKFLOW = ".github/workflows/patchgate.yml"
GATE_STEP = '      - run: patchgate check --repo . --base "$BASE" --patch pr.patch\n'
DISARMED = "      - run: exit 0\n"


def _git(repo: Path, *args: str) -> str:
    who = ["-c", "user.name=p", "-c", "user.email=p@e"]
    done = subprocess.run(["git", "-C", str(repo), *who, *args], check=True, capture_output=True)
    return done.stdout.decode()


def _repo(tmp_path: Path, ci_files: str | None) -> Path:
    repo = tmp_path / "billing"
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    if ci_files is not None:
        with (repo / "pyproject.toml").open("a") as f:
            f.write(f"ci_files = {ci_files}\n")
    (repo / WORKFLOW).parent.mkdir(parents=True)
    (repo / WORKFLOW).write_text(
        "on: pull_request_target\njobs:\n  gate:\n    steps:\n" + GATE_STEP
    )
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        _git(repo, *args)
    return repo


def _workflow_patch(repo: Path) -> str:
    """The workflow's gate step replaced by ``exit 0``, as a git diff."""
    path = repo / WORKFLOW
    path.write_text(path.read_text().replace(GATE_STEP, DISARMED))
    diff = _git(repo, "diff", "--", WORKFLOW)
    _git(repo, "checkout", "-q", "--", WORKFLOW)
    return diff


def _check(repo: Path, tmp: Path, patch: str):  # type: ignore[no-untyped-def]
    path = tmp / "pr.patch"
    path.write_text(patch)
    settings = CheckSettings(
        repo=repo, base="HEAD", patch=path, draft_id="pr-1", drafter="model_lane",
        signer=f"unix:{tmp}/nobody.sock", executors=(f"unix:{tmp}/nobody-either.sock",),
        clock=dt.datetime(2026, 9, 10, 12, tzinfo=dt.UTC), out=tmp / "ledgers",
    )  # fmt: skip
    return run_check(settings, progress=lambda _msg: None).receipt


@pytest.mark.parametrize("named", ['[".github/workflows/patchgate.yml"]', '[".github/"]'])
def test_a_patch_that_disarms_a_named_workflow_is_a_pin_mutation(
    tmp_path: Path, named: str
) -> None:
    repo = _repo(tmp_path, named)
    r = _check(repo, tmp_path, REFACTOR + _workflow_patch(repo))
    assert r.posture == "reject_pin_mutation"
    assert "R8" in r.rejection_codes
    assert r.admit is False


def test_the_same_change_without_a_ci_file_is_not_a_pin_mutation(tmp_path: Path) -> None:
    """The honest control: ``ci_files`` named, the patch changes production code only; it goes
    on to the signer (unreachable here: unavailable, not a pin mutation)."""
    repo = _repo(tmp_path, '[".github/workflows/patchgate.yml"]')
    r = _check(repo, tmp_path, REFACTOR)
    assert "R8" not in r.rejection_codes
    assert r.posture == "unavailable"
    assert r.changed_symbols == ["billing.prorate"]


def test_ci_files_are_read_as_safe_paths_and_a_directory_keeps_its_slash(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.patchgate]\nci_files = [".github/workflows/patchgate.yml", ".gitlab/"]\n'
    )
    config = load_config(DirSource(tmp_path))
    assert config.ci_files == (".github/workflows/patchgate.yml", ".gitlab/")
    for bad in ('["../outside.yml"]', '"one.yml"', "[1]"):
        (tmp_path / "pyproject.toml").write_text(f"[tool.patchgate]\nci_files = {bad}\n")
        with pytest.raises(PinError, match="ci_files"):
            load_config(DirSource(tmp_path))
