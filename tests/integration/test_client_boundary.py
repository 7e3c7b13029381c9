"""The client's boundary through the real CLI (issue 16, item 5): a bad --out is a usage error with
nothing written, an unreadable patch or a permission error is one line, and SIGINT/SIGTERM during a
running check stop it within seconds, leave no temp workspace and no container, exit 130/143."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.fixtures_executor import (
    ExecutorProc,
    containers_created_since,
    labeled_containers,
)
from tests.integration.fixtures_gate import CLOCK, PATCHES, BillingRepo, Gate

pytestmark = [pytest.mark.integration]

PATCHGATE = str(Path(sys.executable).parent / "patchgate")
NO_DAEMON = "unix:/nonexistent/patchgate.sock"


def _check(
    repo: Path, cwd: Path, *extra: str, patch: Path = PATCHES / "prorate_refactor.patch"
) -> subprocess.CompletedProcess[str]:
    """`check` with daemons that do not exist: these cases must stop before any is dialled."""
    argv = [
        PATCHGATE, "check", "--repo", str(repo), "--base", "HEAD", "--patch", str(patch),
        "--draft-id", "d-1", "--drafter", "human", "--signer", NO_DAEMON,
        "--executor", NO_DAEMON, *extra,
    ]  # fmt: skip
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _status(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--ignored", "--untracked-files=all"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert "Traceback" not in stderr
    assert len(lines) == 1, stderr
    return lines[0]


def test_out_naming_an_existing_file_is_a_usage_error_and_the_file_is_kept(
    billing_repo: BillingRepo, tmp_path: Path
) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("mine\n")
    run = _check(billing_repo.path, tmp_path, "--out", str(mine))
    assert run.returncode == 64, run.stderr
    assert "exists and is not a directory" in _one_line(run.stderr)
    assert mine.read_text() == "mine\n"


@pytest.mark.parametrize(
    ("inside", "what"),
    [("fixtures/ledgers", "fixture tree"), ("fixtures", "fixture tree"), ("pins/out", "pins")],
)
def test_out_inside_the_fixture_tree_or_the_pins_is_a_usage_error_and_nothing_is_written(
    billing_repo: BillingRepo, tmp_path: Path, inside: str, what: str
) -> None:
    before = _status(billing_repo.path)
    run = _check(billing_repo.path, tmp_path, "--out", str(billing_repo.path / inside))
    assert run.returncode == 64, run.stderr
    assert what in _one_line(run.stderr)
    assert _status(billing_repo.path) == before == ""


def test_out_through_a_link_into_the_fixture_tree_is_refused(
    billing_repo: BillingRepo, tmp_path: Path
) -> None:
    (tmp_path / "ledgers").symlink_to(billing_repo.path / "fixtures")
    run = _check(billing_repo.path, tmp_path, "--out", "ledgers/x")
    assert run.returncode == 64, run.stderr
    assert "fixture tree" in _one_line(run.stderr)
    assert _status(billing_repo.path) == ""


def test_an_unreadable_patch_is_one_line(billing_repo: BillingRepo, tmp_path: Path) -> None:
    (tmp_path / "dir.patch").mkdir()
    out = tmp_path / "out"
    run = _check(billing_repo.path, tmp_path, "--out", str(out), patch=tmp_path / "dir.patch")
    assert run.returncode == 64, run.stderr
    assert "--patch" in _one_line(run.stderr)
    assert not out.exists()


def test_an_output_path_under_sys_is_one_line_usage_error(
    billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """mkdir in /sys is refused even to root (EPERM): the output-path check refuses it first, as
    usage (issue 25: ``--out`` errors are 64), one line and no traceback (it was exit 4)."""
    run = _check(billing_repo.path, tmp_path, "--out", "/sys/patchgate-ledgers")
    assert run.returncode == 64, run.stderr
    assert _one_line(run.stderr) == (
        "patchgate: error: --out /sys/patchgate-ledgers: under /sys, not a place for output"
    )
    assert "Traceback" not in run.stderr


# --- signals during a running check --------------------------------------------------------------

SLOW = "import time\n" + "".join(
    f"\n\ndef test_slow_{i}():\n    time.sleep(60)\n" for i in range(4)
)


def _slow_base(repo: BillingRepo, n: int) -> None:
    """A base whose suite is ``n`` properties that each sleep a minute."""
    (repo.path / "properties" / "test_slow.py").write_text(SLOW)
    props = [
        {
            "id": f"billing.slow.{i}",
            "claim": "takes its time",
            "class": "pure_fn",
            "covers": ["billing.prorate"],
            "command": [
                "python",
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"properties/test_slow.py::test_slow_{i}",
            ],
        }
        for i in range(n)
    ]
    (repo.path / "pins" / "properties.json").write_text(json.dumps({"properties": props}))
    git = ["git", "-C", str(repo.path), "-c", "user.name=p", "-c", "user.email=p@example.org"]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "slow suite"], check=True, capture_output=True)


def _wait_for(what: str, cond: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.docker
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_running_check_and_leaves_nothing_behind(
    gate: Gate,
    executor_daemon: ExecutorProc,
    billing_repo: BillingRepo,
    tmp_path: Path,
    signum: int,
    code: int,
) -> None:
    """Four one-minute properties, one in flight at a time: without cancellation the check would
    run four minutes (queued properties still started) and SIGTERM left the workspace behind."""
    _slow_base(billing_repo, 4)
    private_tmp = tmp_path / "tmp"  # this check's temp dirs only (other tests run beside it)
    private_tmp.mkdir()
    out = tmp_path / "out"
    argv = [
        PATCHGATE, "check", "--repo", str(billing_repo.path), "--base", "HEAD",
        "--patch", str(PATCHES / "prorate_refactor.patch"), "--draft-id", "d-sig",
        "--drafter", "human", "--signer", gate.signer, "--executor", gate.executor,
        "--operator-keyring", str(gate.keyring), "--clock", CLOCK, "--out", str(out),
    ]  # fmt: skip
    with open(tmp_path / "stderr", "w+", encoding="utf-8") as err:
        since = time.time()
        proc = subprocess.Popen(
            argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, text=True,
            env={**os.environ, "TMPDIR": str(private_tmp)}, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            _wait_for(
                "a running sandbox",
                lambda: proc.poll() is not None or labeled_containers(executor_daemon.instance),
                180,
            )
            err.seek(0)
            assert proc.poll() is None, f"the check ended before the signal: {err.read()[-3000:]}"
            workspaces = list(private_tmp.glob("patchgate-ws-*"))
            assert workspaces, "the check is mid-run, so its workspace exists"
            time.sleep(1.0)
            sent = time.monotonic()
            proc.send_signal(signum)
            got = proc.wait(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        err.seek(0)
        stderr = err.read()
    assert got == code, stderr[-3000:]
    assert took < 10, f"took {took:.1f}s to stop"
    assert f"interrupted ({signal.Signals(signum).name})" in stderr
    assert "Traceback" not in stderr
    assert not [w for w in workspaces if w.exists()]
    assert list(private_tmp.glob("patchgate-*")) == []
    _wait_for(
        "the executor to remove its sandboxes",
        lambda: not labeled_containers(executor_daemon.instance),
        10,
    )
    # the first property's two runs, and nothing of the three queued behind it
    assert len(containers_created_since(since, executor_daemon.instance)) <= 2
