"""The laptop lane and the demo: `up`, `check` without flags, `down`; `demo` twice in a row.

Real daemons, real sockets, real Docker; nothing may be left behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.fixtures_gate import PATCHES, BillingRepo

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PATCHGATE = str(Path(sys.executable).parent / "patchgate")
REPO = Path(__file__).resolve().parents[2]


def _run(*argv: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PATCHGATE, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_up_check_without_flags_down(
    docker_engine: None, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """`up` starts two processes; `check` finds them through patchgate.toml; `down` stops both."""
    work = tmp_path / "laptop"
    work.mkdir()
    up = _run("up", "--state-dir", "state", cwd=work)
    assert up.returncode == 0, up.stderr
    lane = json.loads((work / "state" / "lane.json").read_text())
    pids = [lane["signer"]["pid"], lane["executor"]["pid"]]
    try:
        assert pids[0] != pids[1]
        assert all(_alive(p) for p in pids)
        assert "[check]" in (work / "patchgate.toml").read_text()
        assert oct((work / "state" / "signer").stat().st_mode & 0o777) == "0o750"
        check = _run(
            "check", "--repo", str(billing_repo.path), "--base", "HEAD",
            "--patch", str(PATCHES / "prorate_refactor.patch"),
            "--draft-id", "laptop-1", "--drafter", "human", "--out", "out", cwd=work,
        )  # fmt: skip
        assert check.returncode == 0, check.stderr[-2000:]
        receipt = json.loads((work / "out" / "receipt.json").read_text())
        assert receipt["admit"] is True
    finally:
        down = _run("down", "--state-dir", "state", cwd=work)
    assert down.returncode == 0
    assert not any(_alive(p) for p in pids)
    assert not (work / "state" / "signer" / "signer.sock").exists()
    assert not (work / "state" / "lane.json").exists()


def test_second_up_is_refused_while_a_lane_runs(docker_engine: None, tmp_path: Path) -> None:
    """A second `up` on the same state directory refuses and leaves the first lane running."""
    up = _run("up", "--state-dir", "state", cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    lane = json.loads((tmp_path / "state" / "lane.json").read_text())
    try:
        again = _run("up", "--state-dir", "state", cwd=tmp_path)
        assert again.returncode == 1
        assert "already up" in again.stderr
        assert _alive(lane["signer"]["pid"])
        assert _alive(lane["executor"]["pid"])
    finally:
        _run("down", "--state-dir", "state", cwd=tmp_path)


def test_up_never_overwrites_a_users_patchgate_toml(docker_engine: None, tmp_path: Path) -> None:
    """A patchgate.toml that `up` did not write is left as it was."""
    mine = tmp_path / "patchgate.toml"
    mine.write_text("[check]\nsigner = 'unix:/elsewhere.sock'\n")
    up = _run("up", "--state-dir", "state", cwd=tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        assert mine.read_text() == "[check]\nsigner = 'unix:/elsewhere.sock'\n"
        assert "not writing" in up.stderr
        assert (tmp_path / "state" / "patchgate.toml").read_text().startswith("# written by")
    finally:
        _run("down", "--state-dir", "state", cwd=tmp_path)


def test_down_with_nothing_up_is_not_an_error(tmp_path: Path) -> None:
    """`down` on a directory with no lane says so and exits 0."""
    down = _run("down", "--state-dir", "nothing", cwd=tmp_path)
    assert down.returncode == 0
    assert "nothing to stop" in down.stderr


@pytest.mark.slow
def test_demo_passes_twice_and_leaves_nothing_running(docker_engine: None, tmp_path: Path) -> None:
    """`demo` exits 0 with both expected verdicts, twice in a row, and stops its daemons."""
    for attempt in (1, 2):
        demo = _run("demo", "--out", str(tmp_path / f"demo-{attempt}"), cwd=tmp_path)
        assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
        assert "both verdicts as expected" in demo.stdout
        pids = [int(p) for p in re.findall(r"stopped patchgate-\w+ \(pid (\d+)\)", demo.stderr)]
        assert len(pids) == 2
        assert not any(_alive(p) for p in pids)
        worked = json.loads(
            (tmp_path / f"demo-{attempt}" / "worked-example" / "receipt.json").read_text()
        )
        assert worked["credits"] == {"billing.invoice_total": 0, "billing.prorate": 1}
        assert set(worked["rejection_codes"]) >= {"R1", "R5"}
    leftovers = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=patchgate.executord=default"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert leftovers == []


def test_two_lanes_on_one_engine_get_two_instances(docker_engine: None, tmp_path: Path) -> None:
    """`up` in two state directories: each executor runs with the instance of its own directory
    (issue 12), so neither one's start-up sweep can remove the other's sandboxes."""
    lanes: list[dict[str, object]] = []
    try:
        for name in ("a", "b"):
            up = _run("up", "--state-dir", name, "--config", f"{name}.toml", cwd=tmp_path)
            assert up.returncode == 0, up.stderr
            lanes.append(json.loads((tmp_path / name / "lane.json").read_text()))
        instances = [lane["instance"] for lane in lanes]
        assert instances[0] != instances[1]
        for lane, instance in zip(lanes, instances, strict=True):
            assert re.fullmatch(r"lane-[0-9a-f]{12}", str(instance))
            pid = lane["executor"]["pid"]  # type: ignore[index]
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            assert argv[argv.index(b"--instance") + 1].decode() == instance
    finally:
        for name in ("a", "b"):
            _run("down", "--state-dir", name, cwd=tmp_path)
