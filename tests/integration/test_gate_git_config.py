"""A hostile repository's own git configuration runs nothing on the host (issue 25, item 1).

The target repository's ``.git/config`` names a command in every place git would run one — smudge,
clean and process filters (with attributes naming them, committed in the base), a textconv driver,
``core.fsmonitor``, ``core.hooksPath`` and every hook in ``.git/hooks``, ``core.sshCommand``,
``core.pager``, ``diff.external``, ``core.askPass``, and an ``include.path`` to a file naming more
— each a script that leaves a marker file. ``pin check --rev``, ``check``, ``check --self-test`` and
``verify-receipt`` run against it with real daemons; no marker appears. A control first proves the
plant is live: plain ``git archive`` (what the gate used to run) and ``git status`` leave markers.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.integration.fixtures_gate import CLOCK, PATCHGATE, BillingRepo, Gate

HOOKS = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "prepare-commit-msg",
    "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
    "pre-auto-gc", "post-rewrite", "post-index-change", "reference-transaction",
    "fsmonitor-watchman", "push-to-checkout", "sendemail-validate",
)  # fmt: skip


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=p", "-c", "user.email=p@e", *args],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip


def _plant(repo: Path, marks: Path, tmp: Path) -> None:
    marks.mkdir()
    script = tmp / "evil.sh"
    script.write_text(f'#!/bin/sh\ntouch "{marks}/$1"\nshift\ncat "$@" 2>/dev/null\nexit 0\n')
    script.chmod(0o755)
    # the repository's own attributes file (not in the commit: a committed filter attribute makes
    # the base a configuration error, issue 22, tested at the end)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=evil diff=evil\n")
    included = tmp / "included.cfg"
    included.write_text(f'[core]\n\tfsmonitor = "{script} fsmonitor-included"\n'
                        f'[diff "evil"]\n\tcommand = "{script} diffcmd"\n')  # fmt: skip
    hooks = tmp / "hooks"
    hooks.mkdir()
    for name in HOOKS:
        for where in (hooks, repo / ".git" / "hooks"):
            hook = where / name
            hook.write_text(f'#!/bin/sh\ntouch "{marks}/hook-{name}"\n')
            hook.chmod(0o755)
    with (repo / ".git" / "config").open("a") as cfg:
        cfg.write(
            f'[filter "evil"]\n\tsmudge = "{script} smudge"\n\tclean = "{script} clean"\n'
            f'\tprocess = "{script} process"\n'
            f'[diff "evil"]\n\ttextconv = "{script} textconv"\n'
            f'[core]\n\tfsmonitor = "{script} fsmonitor"\n\thooksPath = {hooks}\n'
            f'\tsshCommand = "{script} ssh"\n\tpager = "{script} pager"\n'
            f'\taskPass = "{script} askpass"\n'
            f'[diff]\n\texternal = "{script} external"\n'
            f"[include]\n\tpath = {included}\n"
        )


def _pg(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PATCHGATE, *argv], capture_output=True, text=True, check=False, cwd=cwd, timeout=600,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_no_repository_configured_command_runs(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    repo = billing_repo.path
    marks = tmp_path / "marks"
    _plant(repo, marks, tmp_path)

    # The control: the plant is live for git itself.
    _git(repo, "archive", "--format=tar", "-o", str(tmp_path / "a.tar"), "HEAD")
    _git(repo, "status")
    live = {p.name for p in marks.iterdir()}
    assert live & {"smudge", "process"}, live  # archive ran the filter
    assert live & {"fsmonitor", "fsmonitor-included"}, live  # status ran the monitor
    for p in marks.iterdir():
        p.unlink()

    pin = _pg("pin", "check", "--repo", str(repo), "--rev", "HEAD", cwd=tmp_path)
    assert pin.returncode == 0, pin.stdout + pin.stderr
    check = gate.check(billing_repo, "prorate_refactor.patch")
    assert check.code == 0, check.stdout + check.stderr
    out = tmp_path / "self-test"
    self_test = _pg(
        "check", "--self-test", "--repo", str(repo), "--base", "HEAD",
        "--signer", gate.signer, "--executor", gate.executor,
        "--operator-keyring", str(gate.keyring), "--out", str(out), "--clock", CLOCK,
        cwd=tmp_path,
    )  # fmt: skip
    assert self_test.returncode == 0, self_test.stdout + self_test.stderr
    verify = gate.verify(check.out / "receipt.json", billing_repo)
    assert verify.code == 0, verify.stdout + verify.stderr
    assert sorted(p.name for p in marks.iterdir()) == [], "a repository-configured command ran"
    # committed, the attribute is a configuration error of the base (78), and still runs nothing
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    assert _git(repo, "add", ".gitattributes").returncode == 0
    assert _git(repo, "commit", "-qm", "attributes naming the driver").returncode == 0
    for p in marks.iterdir():  # git's own add and commit ran the plant (hooks, fsmonitor)
        p.unlink()
    refused = gate.check(billing_repo, "prorate_refactor.patch")
    assert refused.code == 78, refused.stdout + refused.stderr
    assert "filter=evil" in refused.stderr
    assert sorted(p.name for p in marks.iterdir()) == [], "a repository-configured command ran"
