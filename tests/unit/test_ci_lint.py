"""The CI examples as their platforms and a workflow linter read them (issue 24): the GitHub
workflow against the built-in workflow schema of check-jsonschema and with no high finding of
zizmor (offline), every action pinned by commit; neither recipe installs an index package named
patchgate. (The recipes *run* in tests/integration/test_ci_examples.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
GITLAB = ROOT / "examples" / "ci" / "gitlab-ci.yml"
BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, check=False, timeout=120, stdin=subprocess.DEVNULL
    )


def test_the_workflow_passes_the_workflow_schema() -> None:
    done = _run(str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                str(WORKFLOW))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_has_no_high_finding_and_the_linter_can_find_one(tmp_path: Path) -> None:
    """No high finding now; the same workflow with an action by tag (what it had) has one, so the
    check can fail."""
    zizmor = str(BIN / "zizmor")
    done = _run(zizmor, "--offline", "--min-severity", "high", str(WORKFLOW))
    assert done.returncode == 0, done.stdout + done.stderr
    by_tag = tmp_path / "by-tag.yml"
    by_tag.write_text(re.sub(r"actions/checkout@[0-9a-f]{40}", "actions/checkout@v4",
                             WORKFLOW.read_text()))  # fmt: skip
    worse = _run(zizmor, "--offline", "--min-severity", "high", str(by_tag))
    assert worse.returncode != 0
    assert "unpinned-uses" in worse.stdout + worse.stderr


def test_every_action_is_pinned_by_commit_with_its_release_named() -> None:
    uses = re.findall(r"uses: (\S+)(.*)", WORKFLOW.read_text())
    assert uses
    for ref, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), ref
        assert re.fullmatch(r" # v\d+\.\d+\.\d+", comment), (ref, comment)


def test_no_recipe_installs_patchgate_from_an_index() -> None:
    """`pip install patchgate` cannot work (no such index package of ours): each recipe installs
    from the repository (a checkout or a wheel), with pytest for the suite."""
    for path in (WORKFLOW, GITLAB):
        text = path.read_text()
        assert not re.search(r"pip install[^\n]*\bpatchgate\b(?![-./\w])", text), path
        assert "pytest" in text
    job = yaml.safe_load(GITLAB.read_text())["patchgate"]
    assert any("$PATCHGATE_SOURCE" in line for line in job["before_script"])
