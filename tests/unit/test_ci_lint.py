"""The CI examples as their platforms and a workflow linter read them (issue 24): the GitHub
workflow against the built-in workflow schema of check-jsonschema and with no high finding of
zizmor (offline), every action pinned by commit; neither recipe installs an index package named
patchgate. (The recipes *run* in tests/integration/test_ci_examples.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
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
    job = yaml.safe_load(GITLAB.read_text())[".patchgate"]  # what both jobs extend
    assert any("$PATCHGATE_SOURCE" in line for line in job["before_script"])


# -- issue 43: recipes the pull request cannot change ------------------------------------------


def _workflow(text: str | None = None) -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text() if text is None else text)  # type: ignore[no-any-return]


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


_RUNS_TREE = re.compile(
    r"(?<![\w/$\"-])(python3?|pip3?|pytest|make|npm|tox|nox|sh|bash)\s+(?!-I\b)(?:-m\s+)?"
    r"(?:\./|[\w.-]+\.(?:py|sh)\b|install\s+(?:-e\s+)?\.(?:\s|$))"
)


def pull_request_reach(text: str) -> list[str]:
    """How a workflow lets a pull request run its own workflow or code outside the sandbox (empty:
    it cannot): a trigger that runs the pull request's copy of the file, a checkout of its head,
    credentials persisted, a step that runs a file of the work tree, a diff through its filters."""
    wf = _workflow(text)
    found: list[str] = []
    triggers = wf[True] if True in wf else wf.get("on", {})
    names = [triggers] if isinstance(triggers, str) else list(triggers)
    found += [f"trigger {t}" for t in names if t != "pull_request_target"]
    for step in _steps(wf):
        if "actions/checkout" in step.get("uses", ""):
            given = step.get("with", {})
            if given.get("persist-credentials") is not False:
                found.append(f"checkout persists credentials: {step.get('name')}")
            if "head" in str(given.get("ref", "")) or "merge" in str(given.get("ref", "")):
                found.append(f"checkout of the pull request: {given.get('ref')}")
            if given.get("lfs") or given.get("submodules"):
                found.append(f"checkout runs lfs or submodules: {step.get('name')}")
        run = step.get("run", "")
        if re.search(r"\bgit\s+(?:-c\s+\S+\s+)*(?:checkout|switch|worktree|reset|restore)\b", run):
            found.append(f"a git work-tree change: {step.get('name')}")
        if re.search(r"\bgit\s+diff\b", run) and not (
            "--no-textconv" in run and "--no-ext-diff" in run
        ):
            found.append(f"a diff through the tree's filters: {step.get('name')}")
        if re.search(r"\bgit\b[^\n]*\bfetch\b", run) and "core.hooksPath=/dev/null" not in run:
            found.append(f"a fetch with hooks: {step.get('name')}")
        if _RUNS_TREE.search(run):
            found.append(f"runs a file of the work tree: {step.get('name')}")
    return found


def test_the_github_recipe_runs_the_bases_workflow_and_treats_the_pull_request_as_data() -> None:
    assert pull_request_reach(WORKFLOW.read_text()) == []
    wf = _workflow()
    assert list(wf[True]) == ["pull_request_target"]
    assert wf["permissions"] == {}
    for job in wf["jobs"].values():
        assert job["permissions"] == {"contents": "read"}


@pytest.mark.parametrize(
    ("attack", "finding"),
    [
        (lambda t: t.replace("  pull_request_target:", "  pull_request:"), "trigger pull_request"),
        (lambda t: t.replace("ref: ${{ github.event.pull_request.base.sha }}",
                             "ref: ${{ github.event.pull_request.head.sha }}", 1),
         "checkout of the pull request"),
        (lambda t: t.replace("persist-credentials: false", "persist-credentials: true", 1),
         "persists credentials"),
        (lambda t: t.replace("test \"$(git rev-parse refs/patchgate/head)\"",
                             "git checkout refs/patchgate/head && test \"$(git rev-parse HEAD)\"",
                             1), "a git work-tree change"),
        (lambda t: t.replace("git diff --binary --no-textconv --no-ext-diff", "git diff --binary",
                             1), "a diff through the tree's filters"),
        (lambda t: t.replace('          python -I -m venv "$VENV"',
                             '          python -I -m venv "$VENV"\n          python ./setup.py', 1),
         "runs a file of the work tree"),
    ],
)  # fmt: skip
def test_each_way_a_pull_request_could_reach_outside_the_sandbox_is_found(
    attack: Any, finding: str
) -> None:
    """The check above can fail: each edit that would let the pull request in is named."""
    found = pull_request_reach(attack(WORKFLOW.read_text()))
    assert any(finding in f for f in found), found


def test_the_github_recipe_has_no_finding_at_all_and_its_one_ignore_is_explained() -> None:
    """zizmor's auditor persona (every audit, every confidence): nothing but the trigger, which
    is ignored in place with the reason beside it."""
    done = _run(str(BIN / "zizmor"), "--offline", "--persona", "auditor", str(WORKFLOW))
    assert done.returncode == 0, done.stdout + done.stderr
    ignores = re.findall(r"# zizmor: ignore\[([\w-]+)\](.*)", WORKFLOW.read_text())
    assert [name for name, _ in ignores] == ["dangerous-triggers"]
    assert all(len(why.strip()) > 20 for _, why in ignores)


def test_the_gitlab_recipe_passes_the_gitlab_ci_schema() -> None:
    done = _run(str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci",
                "--data-transform", "gitlab-ci", str(GITLAB))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gitlab_recipe_runs_nothing_of_the_merge_requests_tree() -> None:
    """Python isolated (-I) from a directory of its own, a diff without filters, no LFS smudge or
    submodules: the merge request's files are data."""
    config = yaml.safe_load(GITLAB.read_text())
    base = config[".patchgate"]
    assert (
        base["variables"]["GIT_LFS_SKIP_SMUDGE"],
        base["variables"]["GIT_SUBMODULE_STRATEGY"],
    ) == ("1", "none")
    lines = [
        line
        for name in (".patchgate", "patchgate-check", "patchgate-merge-policy")
        for key in ("before_script", "script")
        for line in config[name].get(key, [])
    ]
    text = "\n".join(lines)
    assert re.findall(r"python (?!-I)", text) == []
    assert all("--no-textconv --no-ext-diff" in x for x in lines if "git diff" in x)
    assert all(x.lstrip().startswith('(cd "$WORK"') for x in lines if "patchgate " in x)


def test_every_recipe_has_a_merge_policy_job_that_recomputes_the_verdict() -> None:
    wf = _workflow()
    policy = wf["jobs"]["merge-policy"]
    assert policy["needs"] == "gate"
    assert any("verify-receipt --recompute" in st.get("run", "") for st in policy["steps"])
    gitlab = yaml.safe_load(GITLAB.read_text())["patchgate-merge-policy"]
    assert gitlab["needs"] == [{"job": "patchgate-check", "artifacts": True}]
    assert any("verify-receipt --recompute" in line for line in gitlab["script"])


_OPERATOR_KEY = re.compile(
    r"patchgate up\b|signerd|keygen|generate_key|BEGIN [A-Z ]*PRIVATE KEY|--key\b"
    r"|operator[-_]key(?!ring)|\.key\b(?![\w\"])"
)


def test_no_recipe_makes_or_reads_an_operator_private_key() -> None:
    """The job reaches the operator's signer with a client identity; it never starts a signer,
    makes a key, or names an operator key file. (The client certificate's key is a TLS key of role
    client, named client.key / PATCHGATE_TLS_KEY.)"""
    for path in (WORKFLOW, GITLAB):
        config = yaml.safe_load(path.read_text())
        jobs = config["jobs"].values() if path == WORKFLOW else [
            v for v in config.values() if isinstance(v, dict)
        ]  # fmt: skip
        for job in jobs:
            steps = job.get("steps") or [{"run": "\n".join(job.get(k, []))} for k in
                                         ("before_script", "script", "after_script")]  # fmt: skip
            for step in steps:
                run = step.get("run", "").replace("client.key", "").replace("tls_key", "")
                assert not _OPERATOR_KEY.search(run), (path.name, run)
    assert _OPERATOR_KEY.search('patchgate up --state "$LANE"')  # what the recipes had
