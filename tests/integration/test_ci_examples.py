"""The CI examples of examples/ci run as written (issue 16, item 4; issue 43), so they cannot rot.

Each YAML is parsed and its shell steps run in order, in bash as the CI system runs them, on a
temporary repository — a ``src/``-layout library put under patchgate with ``init`` and ``pin
properties --from-pytest``, its base on ``main`` (with the public keyring the recipes read,
``.patchgate/keyring.json``) and a pull request's commit on top (``refs/pull/7/head`` of the
"origin" the runner's checkout came from) — with the variables the CI system would provide
substituted. The real CLI and real sandboxes run; the operator's signer and executor, which the
recipes reach and never start (issue 43), are daemons the test starts in the operator's place,
serving mTLS, reached with a client certificate of role ``client``. Not run: steps that ``uses:``
an action (checkout, setup, artifact upload and download: the test prepares and reads those
itself) and the one that installs patchgate (the test's own patchgate stands in for the venv).
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

from patchgate.keys import Keyring
from tests.conftest import KeyPair
from tests.integration.fixtures_executor import start_executor, stop_everything_under
from tests.integration.fixtures_signer import TestPKI, start_signer
from tests.integration.test_operator_pins import PATCH_LINES
from tests.unit._pinning_helpers import git, make_library

pytestmark = [pytest.mark.integration, pytest.mark.docker]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "ci"
BIN = str(Path(sys.executable).parent)
_EXPR = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


@dataclass(frozen=True)
class PullRequest:
    repo: Path  # the pull request's repository ("origin"; GitLab's job runs in it)
    base: str
    head: str
    temp: Path  # short: socket paths must fit a unix socket address


@dataclass(frozen=True)
class Operator:
    """The operator's signer and executor (mTLS), standing in for remote ones, and the client
    identity a CI job is given: a certificate of role client, no private signing key."""

    signer: str
    executor: str
    ca: Path
    cert: Path
    key: Path
    audit: Path


@pytest.fixture
def operator(
    docker_engine: None,
    operator_key: KeyPair,
    executor_key: KeyPair,
    pki: TestPKI,
    tmp_path: Path,
) -> Iterator[Operator]:
    signer = start_signer([operator_key.key_path], extra_args=pki.server_args())
    tls = ["--tls-cert", str(pki.executor.cert), "--tls-key", str(pki.executor.key),
           "--client-ca", str(pki.ca.cert)]  # fmt: skip
    key = ["--key", str(executor_key.key_path)]
    try:
        executor = start_executor(tmp_path, operator_key.keyring_path, *key, *tls)
    except BaseException:
        signer.stop()
        raise
    try:
        yield Operator(
            signer=signer.address, executor=executor.address, ca=pki.ca.cert,
            cert=pki.client.cert, key=pki.client.key, audit=signer.audit_log,
        )  # fmt: skip
    finally:
        executor.stop()
        signer.stop()
        shutil.rmtree(signer.socket_dir, ignore_errors=True)


def _pg(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [f"{BIN}/patchgate", *argv], capture_output=True, text=True, check=False, timeout=300
    )


@pytest.fixture
def pull_request(
    tmp_path: Path, operator_key: KeyPair, executor_key: KeyPair
) -> Iterator[PullRequest]:
    """A library under patchgate (base on main, with the operator's public keyring) and a pull
    request's commit that its property covers; a short temp directory for the runner."""
    lib = make_library(tmp_path / "textkit")
    for argv in (["init"], ["pin", "properties", "--from-pytest"]):
        done = _pg(*argv, "--repo", str(lib))
        assert done.returncode == 0, done.stdout + done.stderr
    ring = Keyring([operator_key.signer.keyring_entry(), executor_key.signer.keyring_entry()])
    (lib / ".patchgate").mkdir()
    ring.write(lib / ".patchgate" / "keyring.json")
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
    git(lib, "update-ref", "refs/pull/7/head", head)  # where the host keeps a pull request
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


def _github_expressions(pr: PullRequest, op: Operator) -> dict[str, str]:
    return {
        "runner.temp": str(pr.temp),
        "github.event.pull_request.base.sha": pr.base,
        "github.event.pull_request.head.sha": pr.head,
        "github.event.pull_request.number": "7",
        "github.token": "not-needed-for-a-local-origin",
        "vars.PATCHGATE_SIGNER": op.signer,
        "vars.PATCHGATE_EXECUTOR": op.executor,
        "secrets.PATCHGATE_TLS_CA": op.ca.read_text(),
        "secrets.PATCHGATE_TLS_CERT": op.cert.read_text(),
        "secrets.PATCHGATE_TLS_KEY": op.key.read_text(),
    }


def _substitute(text: str, known: dict[str, str]) -> str:
    """``${{ expr }}`` -> its value; an expression the test does not know fails the test."""
    return _EXPR.sub(lambda m: known[m.group(1)], text)


def _run_job(
    workflow: dict[str, Any], name: str, known: dict[str, str], env: dict[str, str], cwd: Path
) -> list[tuple[str, int]]:
    """The job's ``run:`` steps in order (a failed step skips the rest but ``if: always()``);
    (step name, exit code) of each that ran."""
    job = workflow["jobs"][name]
    given = workflow.get("env", {}) | job.get("env", {})
    env = env | {k: _substitute(str(v), known) for k, v in given.items()}
    ran: list[tuple[str, int]] = []
    failed = False
    for step in job["steps"]:
        if "uses" in step or step.get("id") == "install":
            continue
        if failed and step.get("if") != "always()":
            continue
        step_env = {k: _substitute(str(v), known) for k, v in step.get("env", {}).items()}
        done = _bash(_substitute(step["run"], known), cwd, {**env, **step_env})
        label = step.get("name", step["run"][:40])
        ran.append((label, done.returncode))
        verdict = label in ("Check the patch", "Recompute the verdict from the signed evidence")
        assert done.returncode == 0 or (verdict and done.returncode == 1), (
            f"{step}: {done.stdout}\n{done.stderr}"
        )
        failed = failed or done.returncode != 0
    return ran


def test_the_github_actions_workflow_runs_from_the_base_and_the_merge_policy_recomputes(
    pull_request: PullRequest, operator: Operator
) -> None:
    """Both jobs: the gate (base checked out, the pull request fetched as objects, the operator's
    daemons reached with a client certificate) and the merge policy (the verdict re-derived
    from the signed run results)."""
    pr = pull_request
    workflow: dict[str, Any] = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())
    assert list(workflow[True]) == ["pull_request_target"]  # YAML 1.1 reads `on` as True
    work = pr.temp / "work"  # the runner's checkout of the base (actions/checkout's stand-in)
    subprocess.run(["git", "clone", "-q", str(pr.repo), str(work)], check=True)
    git(work, "checkout", "-q", pr.base)
    (pr.temp / "patchgate-venv").symlink_to(Path(BIN).parent)  # the install step's venv
    known = _github_expressions(pr, operator)
    summary = pr.temp / "step-summary.md"
    summary.write_text("")
    env = _env(
        {"GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(pr.temp), "CI": "true",
         "GITHUB_WORKSPACE": str(work)},
        pr,
    )  # fmt: skip
    ran = _run_job(workflow, "gate", known, env, work)
    assert [name for name, _ in ran] == [
        "Fetch the pull request's commits as data",
        "The pull request's patch",
        "The client identity",
        "Build the suite's environment",
        "Self-test the base",
        "Check the patch",
        "Forget the client identity",
    ]
    report = pr.temp / "patchgate-report"
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
    upload = next(st for st in workflow["jobs"]["gate"]["steps"]
                  if "upload-artifact" in st.get("uses", ""))  # fmt: skip
    assert _substitute(upload["with"]["path"], known) == str(report)
    assert (out / "runs" / "textkit.slugify.idempotent" / "1.log").is_file()
    assert list((out / "signed_runs").glob("*.json"))  # the evidence the merge policy reads
    assert (report / "logs" / "self-test.txt").read_text().startswith("SELF-TEST PASSED")
    # the pull request stayed data: the checkout is still the base, nothing written into it
    assert git(work, "rev-parse", "HEAD").strip() == pr.base
    assert git(work, "status", "--porcelain", "--untracked-files=all").strip() == ""
    # the client identity reached the operator's signer as a client, and is gone
    assert not (pr.temp / "patchgate-tls").exists()
    calls = [json.loads(x) for x in operator.audit.read_text().splitlines()]
    assert calls
    assert {c["role"] for c in calls} == {"client"}
    policy = _run_job(workflow, "merge-policy", known, env, work)
    assert [name for name, _ in policy] == [
        "Fetch the pull request's commits as data",
        "The pull request's patch",
        "Recompute the verdict from the signed evidence",
    ]
    recomputed = dict(policy)["Recompute the verdict from the signed evidence"]
    assert recomputed == (0 if receipt["admit"] else 1)
    assert receipt["admit"] is True  # an honest change: the policy's exit 0 path ran


def _gitlab_job(config: dict[str, Any], name: str) -> dict[str, Any]:
    """A job with what it ``extends`` merged in (one level, as the recipe uses it)."""
    job = dict(config[name])
    base = config.get(str(job.pop("extends", "")), {})
    merged = {**base, **job}
    merged["variables"] = {**base.get("variables", {}), **job.get("variables", {})}
    return merged


def test_the_gitlab_jobs_scripts_run_in_bash_as_the_shell_executor_runs_them(
    pull_request: PullRequest, operator: Operator
) -> None:
    """Without gitlab-ci-local (the test below): each job's before_script and script in one bash
    (``-eo pipefail``, as the shell executor), its after_script in another, the job's variables
    expanded from the CI's, in the merge request's checkout — and the merge policy's job after the
    check's, on its artifacts."""
    pr = pull_request
    config: dict[str, Any] = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())
    ci = {
        "CI_PIPELINE_SOURCE": "merge_request_event", "CI_MERGE_REQUEST_DIFF_BASE_SHA": pr.base,
        "CI_MERGE_REQUEST_IID": "7", "CI_COMMIT_SHA": pr.head, "PATCHGATE_SOURCE": str(ROOT),
        "PATCHGATE_SIGNER": operator.signer, "PATCHGATE_EXECUTOR": operator.executor,
        "PATCHGATE_TLS_CA": str(operator.ca), "PATCHGATE_TLS_CERT": str(operator.cert),
        "PATCHGATE_TLS_KEY": str(operator.key),
    }  # fmt: skip
    assert git(pr.repo, "rev-parse", "HEAD").strip() == pr.head  # the runner's checkout
    codes: dict[str, int] = {}
    for n, name in enumerate(("patchgate-check", "patchgate-merge-policy"), start=1):
        job = _gitlab_job(config, name)
        env = _env(ci | {"CI_JOB_ID": str(n)}, pr)
        env |= {k: os.path.expandvars(str(v)) if not str(v).startswith("$") else
                env.get(str(v)[1:], "") for k, v in job["variables"].items()}  # fmt: skip
        # the venv the before_script makes: this test's patchgate stands in (no index here)
        venv = Path(env["TMPDIR"]) / f"patchgate-{n}" / "venv"
        venv.parent.mkdir(parents=True)
        venv.symlink_to(Path(BIN).parent)
        lines = [x for x in job["before_script"] if "pip install" not in x and "-m venv" not in x]
        done = _bash("\n".join([*lines, *job["script"]]), pr.repo, env)
        codes[name] = done.returncode
        after = _bash("\n".join(job.get("after_script", [])), pr.repo, env)
        assert after.returncode == 0, after.stderr
        assert done.returncode in (0, 1), f"{name}: {done.stdout}\n{done.stderr}"
    receipt = json.loads((pr.repo / "patchgate-report" / "check" / "receipt.json").read_text())
    assert receipt["admit"] is True  # an honest change
    assert codes == {"patchgate-check": 0, "patchgate-merge-policy": 0}
    assert list((pr.repo / "patchgate-report" / "check" / "signed_runs").glob("*.json"))
    assert (pr.repo / "patchgate-logs" / "self-test.txt").read_text().startswith("SELF-TEST PASSED")
    assert not list(Path(pr.temp).glob("patchgate-[0-9]"))  # after_script removed the job's files
    calls = [json.loads(x) for x in operator.audit.read_text().splitlines()]
    assert {c["role"] for c in calls} == {"client"}


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


def test_the_gitlab_ci_pipeline_runs_under_gitlab_ci_local_and_the_merge_policy_recomputes(
    pull_request: PullRequest, operator: Operator, gitlab_ci_local: str
) -> None:
    """Both jobs as written — rules, variables, before_script (patchgate installed into a venv of
    its own from this repository, PATCHGATE_SOURCE, Python isolated from the merge request's
    tree), script, after_script, artifacts passed by ``needs`` — run by gitlab-ci-local with its
    shell executor on a merge request's commit; the operator's daemons reached with a client
    certificate (File-type variables: their values are paths)."""
    pr = pull_request
    job_file = os.path.relpath(EXAMPLES / "gitlab-ci.yml", pr.repo)
    argv = [
        gitlab_ci_local, "--file", job_file, "--force-shell-executor",
        "--home", str(pr.temp / "gcl-home"),
        "--variable", "CI_PIPELINE_SOURCE=merge_request_event",
        "--variable", f"CI_MERGE_REQUEST_DIFF_BASE_SHA={pr.base}",
        "--variable", "CI_MERGE_REQUEST_IID=7",
        "--variable", f"PATCHGATE_SOURCE={ROOT}",
        "--variable", f"PATCHGATE_SIGNER={operator.signer}",
        "--variable", f"PATCHGATE_EXECUTOR={operator.executor}",
        "--variable", f"PATCHGATE_TLS_CA={operator.ca}",
        "--variable", f"PATCHGATE_TLS_CERT={operator.cert}",
        "--variable", f"PATCHGATE_TLS_KEY={operator.key}",
        "--variable", f"TMPDIR={pr.temp}",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CI", "GITLAB"))}
    env |= {"TMPDIR": str(pr.temp), "XDG_STATE_HOME": str(pr.temp / "state"), "NO_COLOR": "1"}
    run = subprocess.run(
        argv, cwd=pr.repo, env=env, capture_output=True, text=True, timeout=1800, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    log = run.stdout + run.stderr
    out, logs = pr.repo / "patchgate-report", pr.repo / "patchgate-logs"
    assert (out / "check" / "receipt.json").is_file(), log[-6000:]
    receipt = json.loads((out / "check" / "receipt.json").read_text())
    # the pipeline's result is the verdict, re-derived by the merge policy
    assert (run.returncode == 0) == receipt["admit"], log[-6000:]
    assert ("RECOMPUTED ADMIT" in log) == receipt["admit"], log[-6000:]
    headline = "## patchgate: " + ("ADMITTED" if receipt["admit"] else "REJECTED: ")
    assert headline in log  # the summary, also in the job log
    assert (out / "summary.md").read_text().startswith(headline)
    assert (logs / "self-test.txt").read_text().startswith("SELF-TEST PASSED")
    assert (logs / "check.stderr.txt").is_file()
    assert (out / "self-test" / "runs" / "textkit.slugify.idempotent" / "1.log").is_file()
    assert (out / "check" / "runs" / "textkit.slugify.idempotent" / "1.log").is_file()
    assert list((out / "check" / "signed_runs").glob("*.json"))
    config: dict[str, Any] = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())
    artifacts = config["patchgate-check"]["artifacts"]
    assert artifacts["paths"] == ["patchgate-report/", "patchgate-logs/"]  # what is uploaded
    root = ET.parse(pr.repo / artifacts["reports"]["junit"]).getroot()  # noqa: S314
    assert len(list(root.iter("testcase"))) == 2
    calls = [json.loads(x) for x in operator.audit.read_text().splitlines()]
    assert {c["role"] for c in calls} == {"client"}
    assert not list(pr.temp.glob("patchgate-[0-9]*"))  # after_script removed the job's files
