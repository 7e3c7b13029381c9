"""The CI examples of examples/ci run as written (issue 16, item 4), so they cannot rot.

Each YAML is parsed and its shell steps run in order, in bash as the CI system runs them, on a
temporary repository — a ``src/``-layout library put under patchgate with ``init`` and ``pin
properties --from-pytest``, its base on ``main`` and a pull request's commit on top — with the
variables the CI system would provide substituted. The real CLI, the real daemons (``patchgate
up``, a lane of its own) and real sandboxes run. Not run: steps that ``uses:`` an action (checkout,
setup, artifact upload: the test prepares and reads those itself) and the one that installs
patchgate (the test runs the patchgate installed here, first on ``PATH``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.fixtures_executor import stop_everything_under
from tests.integration.test_operator_pins import PATCH_LINES
from tests.unit._pinning_helpers import git, make_library

pytestmark = [pytest.mark.integration, pytest.mark.docker]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "ci"
BIN = str(Path(sys.executable).parent)
_EXPR = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


@dataclass(frozen=True)
class PullRequest:
    repo: Path
    base: str
    head: str
    temp: Path  # short: the lane's socket paths must fit a unix socket address


def _pg(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [f"{BIN}/patchgate", *argv], capture_output=True, text=True, check=False, timeout=300
    )


@pytest.fixture
def pull_request(tmp_path: Path) -> Iterator[PullRequest]:
    """A library under patchgate (base on main) and a pull request's commit that its property
    covers; a short temp directory for the runner."""
    lib = make_library(tmp_path / "textkit")
    for argv in (["init"], ["pin", "properties", "--from-pytest"]):
        done = _pg(*argv, "--repo", str(lib))
        assert done.returncode == 0, done.stdout + done.stderr
    git(lib, "init", "-q", "-b", "main")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "base: pins made by commands")
    base = git(lib, "rev-parse", "HEAD").strip()
    git(lib, "checkout", "-qb", "feature")
    patch = tmp_path / "pr.patch"
    patch.write_text("\n".join(PATCH_LINES) + "\n")
    git(lib, "apply", str(patch))
    git(lib, "commit", "-qam", "slugify: a generator")
    head = git(lib, "rev-parse", "HEAD").strip()
    temp = Path(tempfile.mkdtemp(prefix="pgci-", dir="/tmp"))
    try:
        yield PullRequest(lib, base, head, temp)
    finally:
        stop_everything_under(temp)  # only if a failed step left a lane up
        shutil.rmtree(temp, ignore_errors=True)


def _env(extra: dict[str, str], pr: PullRequest) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "XDG_STATE_HOME": str(pr.temp / "state"),
        "TMPDIR": str(pr.temp),
        **extra,
    }


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip


def _github_expressions(pr: PullRequest) -> dict[str, str]:
    return {
        "runner.temp": str(pr.temp),
        "github.event.pull_request.base.sha": pr.base,
        "github.event.pull_request.head.sha": pr.head,
        "github.event.pull_request.number": "7",
    }


def _substitute(text: str, known: dict[str, str]) -> str:
    """``${{ expr }}`` -> its value; an expression the test does not know fails the test."""
    return _EXPR.sub(lambda m: known[m.group(1)], text)


def test_the_github_actions_workflow_runs_and_publishes_the_report(
    pull_request: PullRequest,
) -> None:
    pr = pull_request
    workflow: dict[str, Any] = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    job = workflow["jobs"]["gate"]
    known = _github_expressions(pr)
    summary = pr.temp / "step-summary.md"
    summary.write_text("")
    env = _env(
        {k: _substitute(str(v), known) for k, v in job.get("env", {}).items()}
        | {"GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(pr.temp), "CI": "true"},
        pr,
    )
    ran: list[tuple[str, int]] = []
    failed = False
    for step in job["steps"]:
        if "uses" in step or step.get("id") == "install":
            continue
        if failed and step.get("if") != "always()":
            continue
        step_env = {k: _substitute(str(v), known) for k, v in step.get("env", {}).items()}
        done = _bash(_substitute(step["run"], known), pr.repo, {**env, **step_env})
        name = step.get("name", step["run"][:40])
        ran.append((name, done.returncode))
        verdict = name == "Check the patch" and done.returncode in (0, 1)  # admitted / rejected
        assert done.returncode == 0 or verdict, f"{step}: {done.stdout}\n{done.stderr}"
        failed = failed or done.returncode != 0
    names = [name for name, _ in ran]
    assert names == [
        "Start the signer and the executor",
        "Build the suite's environment",
        "Self-test the base",
        "The pull request's patch",
        "Check the patch",
        "Stop the daemons",
    ]
    report = Path(env["REPORT"])
    out = report / "check"
    receipt = json.loads((out / "receipt.json").read_text())
    # the job's result is the verdict: the step fails exactly when the patch is not admitted
    assert dict(ran)["Check the patch"] == (0 if receipt["admit"] else 1)
    headline = "ADMITTED" if receipt["admit"] else "REJECTED: "
    assert summary.read_text().startswith(f"## patchgate: {headline}")
    cases = ET.parse(report / "junit.xml").getroot().iter("testcase")  # noqa: S314 - our own file
    assert {c.get("name") for c in cases} == {
        "textkit.slugify.idempotent",
        "tests.test_core.test_count",
    }
    # the uploaded artifact holds both commands' ledgers, run logs and output
    upload = next(st for st in job["steps"] if "upload-artifact" in st.get("uses", ""))
    assert _substitute(upload["with"]["path"], known) == str(report)
    assert (out / "runs" / "textkit.slugify.idempotent" / "1.log").is_file()
    assert (report / "self-test" / "runs" / "textkit.slugify.idempotent" / "1.log").is_file()
    assert (report / "logs" / "self-test.txt").read_text().startswith("SELF-TEST PASSED")
    assert (report / "logs" / "check.stderr.txt").is_file()
    assert not (pr.temp / "patchgate-lane" / "lane.json").exists()  # down ran


@pytest.fixture(scope="module")
def gitlab_ci_local() -> str:
    """gitlab-ci-local (pinned) and rsync, installed by the project's own scripts/ci-tools.sh
    (idempotent; cached per version outside the checkout)."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "ci-tools.sh")], capture_output=True, text=True, check=False,
        timeout=1200, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_gitlab_ci_job_runs_under_gitlab_ci_local_and_keeps_the_report(
    pull_request: PullRequest, gitlab_ci_local: str
) -> None:
    """The job as written — its rules, variables, before_script (patchgate installed into a venv of
    its own from this repository, PATCHGATE_SOURCE), script and after_script — run by
    gitlab-ci-local with its shell executor on a merge request's commit."""
    pr = pull_request
    job_file = os.path.relpath(EXAMPLES / "gitlab-ci.yml", pr.repo)
    argv = [
        gitlab_ci_local, "--file", job_file, "--force-shell-executor",
        "--home", str(pr.temp / "gcl-home"),
        "--variable", "CI_PIPELINE_SOURCE=merge_request_event",
        "--variable", f"CI_MERGE_REQUEST_DIFF_BASE_SHA={pr.base}",
        "--variable", "CI_MERGE_REQUEST_IID=7",
        "--variable", f"PATCHGATE_SOURCE={ROOT}",
        "--variable", f"TMPDIR={pr.temp}",  # the lane's state, found and stopped by the fixture
        "patchgate",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CI", "GITLAB"))}
    env |= {"TMPDIR": str(pr.temp), "XDG_STATE_HOME": str(pr.temp / "state"), "NO_COLOR": "1"}
    run = subprocess.run(
        argv, cwd=pr.repo, env=env, capture_output=True, text=True, timeout=1200, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    log = run.stdout + run.stderr
    out, logs = pr.repo / "patchgate-report", pr.repo / "patchgate-logs"
    assert (out / "check" / "receipt.json").is_file(), log[-6000:]
    receipt = json.loads((out / "check" / "receipt.json").read_text())
    # the job's result is the verdict: it fails exactly when the patch is not admitted
    assert (run.returncode == 0) == receipt["admit"], log[-6000:]
    headline = "## patchgate: " + ("ADMITTED" if receipt["admit"] else "REJECTED: ")
    assert headline in log  # the summary, also in the job log
    assert (out / "summary.md").read_text().startswith(headline)
    assert (logs / "self-test.txt").read_text().startswith("SELF-TEST PASSED")
    assert (logs / "check.stderr.txt").is_file()
    assert (out / "self-test" / "runs" / "textkit.slugify.idempotent" / "1.log").is_file()
    assert (out / "check" / "runs" / "textkit.slugify.idempotent" / "1.log").is_file()
    config: dict[str, Any] = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())
    artifacts = config["patchgate"]["artifacts"]
    assert artifacts["paths"] == ["patchgate-report/", "patchgate-logs/"]  # what is uploaded
    root = ET.parse(pr.repo / artifacts["reports"]["junit"]).getroot()  # noqa: S314
    assert len(list(root.iter("testcase"))) == 2
    assert not list(pr.temp.glob("patchgate-lane-*/lane.json"))  # after_script ran down
