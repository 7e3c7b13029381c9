"""The laptop lane and the demo: `up`, `check` without flags, `down`; `demo` twice in a row; `up`
safe in a repository (issue 16, item 5): state under $XDG_STATE_HOME, refused in a work tree
unless ignored, settings in check.toml (never patchgate.toml), any path round-trips.

Real daemons, real sockets, real Docker; nothing may be left behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.fixtures_executor import labeled_containers, stop_everything_under
from tests.integration.fixtures_gate import CLOCK, PATCHES, BillingRepo

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PATCHGATE = str(Path(sys.executable).parent / "patchgate")
REPO = Path(__file__).resolve().parents[2]


def _run(
    *argv: str, cwd: Path, timeout: float = 900, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PATCHGATE, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        check=False, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.fixture
def short() -> Iterator[Path]:
    """A short directory under /tmp: a socket path must fit in 107 bytes.

    Whatever a test left running under it is stopped before it is removed, even when the test
    failed: each lane by ``down`` (its lane.json), then any process still naming the directory by
    its pid (``up`` cut short by a timeout writes no lane.json). Removing the directory first left
    an orphan ``patchgate-executord`` that no ``down`` could find any more."""
    path = Path(tempfile.mkdtemp(prefix="pgl-", dir="/tmp"))
    try:
        yield path
    finally:
        stop_everything_under(path)
        shutil.rmtree(path, ignore_errors=True)


def _status(repo: Path) -> str:
    """Everything git sees in the work tree that is not committed, ignored files included."""
    return subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--ignored", "--untracked-files=all"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_up_check_without_flags_down(
    docker_engine: None, billing_repo: BillingRepo, short: Path, tmp_path: Path
) -> None:
    """`up` in a repository puts its state under $XDG_STATE_HOME, nothing in the work tree;
    `check` run there finds the lane without flags; `down` stops both and removes check.toml."""
    env = {"XDG_STATE_HOME": str(short / "xdg")}
    repo = billing_repo.path
    up = _run("up", cwd=repo, env=env)
    assert up.returncode == 0, up.stderr
    state = short / "xdg" / "patchgate" / "local"
    lane = json.loads((state / "lane.json").read_text())
    pids = [lane["signer"]["pid"], lane["executor"]["pid"]]
    try:
        assert pids[0] != pids[1]
        assert all(_alive(p) for p in pids)
        assert _status(repo) == ""  # no key, no socket, no settings file in the work tree
        assert (state / "operator.key").is_file()
        assert oct((state / "signer").stat().st_mode & 0o777) == "0o750"
        settings = tomllib.loads((state / "check.toml").read_text())["check"]
        assert settings["signer"] == lane["signer"]["address"]
        check = _run(
            "check", "--repo", ".", "--base", "HEAD",
            "--patch", str(PATCHES / "prorate_refactor.patch"),
            "--draft-id", "laptop-1", "--drafter", "human", "--out", str(tmp_path / "out"),
            "--clock", CLOCK,
            cwd=repo, env=env,
        )  # fmt: skip
        assert check.returncode == 0, check.stderr[-2000:]
        receipt = json.loads((tmp_path / "out" / "receipt.json").read_text())
        assert receipt["admit"] is True
        assert _status(repo) == ""
    finally:
        down = _run("down", cwd=repo, env=env)
    assert down.returncode == 0
    assert not any(_alive(p) for p in pids)
    assert not (state / "signer" / "signer.sock").exists()
    assert not (state / "lane.json").exists()
    assert not (state / "check.toml").exists()


@pytest.mark.parametrize("where", [".patchgate", "sub/state"])
def test_up_in_a_work_tree_without_an_ignore_rule_is_refused_and_writes_nothing(
    billing_repo: BillingRepo, where: str
) -> None:
    """Issue 16: `up` wrote the operator's private key into the work tree and `git add -A`
    committed it. Refused before anything is written (no daemon, no engine needed)."""
    repo = billing_repo.path
    up = _run("up", "--state", where, cwd=repo)
    assert up.returncode == 64, up.stderr
    assert "not git-ignored" in up.stderr
    assert len(up.stderr.splitlines()) == 1
    assert _status(repo) == ""
    assert not (repo / where).exists()


def test_up_in_an_ignored_directory_of_a_work_tree_is_accepted(
    docker_engine: None, billing_repo: BillingRepo
) -> None:
    repo = billing_repo.path
    (repo / ".git" / "info" / "exclude").write_text(".patchgate/\n")
    up = _run("up", "--state", ".patchgate", cwd=repo)
    try:
        assert up.returncode == 0, up.stderr
        assert (repo / ".patchgate" / "operator.key").is_file()
        seen = _status(repo).splitlines()
        assert "!! .patchgate/operator.key" in seen
        assert all(line.startswith("!! .patchgate/") for line in seen)  # ignored, nothing else
        assert not (repo / "patchgate.toml").exists()
    finally:
        _run("down", "--state", ".patchgate", cwd=repo)


def test_a_quote_and_a_newline_in_the_state_path_round_trip(
    docker_engine: None, short: Path
) -> None:
    """The old snippet was an f-string: a `"` in the path made invalid TOML."""
    state = short / 'a"b\nc'
    up = _run("up", "--state", str(state), cwd=short)
    try:
        assert up.returncode == 0, up.stderr
        lane = json.loads((state / "lane.json").read_text())
        settings = tomllib.loads((state / "check.toml").read_text())["check"]
        assert settings == {
            "signer": lane["signer"]["address"],
            "executor": [lane["executor"]["address"]],
            "operator_keyring": str(state / "operator.key.pub"),
        }
        assert settings["signer"] == f"unix:{state}/signer/signer.sock"
    finally:
        _run("down", "--state", str(state), cwd=short)


def test_second_up_is_refused_while_a_lane_runs(docker_engine: None, short: Path) -> None:
    """A second `up` on the same state directory refuses and leaves the first lane running."""
    up = _run("up", "--state", "state", cwd=short)
    assert up.returncode == 0, up.stderr
    lane = json.loads((short / "state" / "lane.json").read_text())
    try:
        again = _run("up", "--state", "state", cwd=short)
        assert again.returncode == 1
        assert "already up" in again.stderr
        assert _alive(lane["signer"]["pid"])
        assert _alive(lane["executor"]["pid"])
    finally:
        _run("down", "--state", "state", cwd=short)


def test_up_writes_nothing_in_the_current_directory(docker_engine: None, short: Path) -> None:
    """A patchgate.toml is the project's own configuration: `up` never writes or reads one."""
    mine = short / "patchgate.toml"
    mine.write_text("[check]\nsigner = 'unix:/elsewhere.sock'\n")
    up = _run("up", "--lane", "t", cwd=short, env={"XDG_STATE_HOME": str(short / "x")})
    try:
        assert up.returncode == 0, up.stderr
        assert mine.read_text() == "[check]\nsigner = 'unix:/elsewhere.sock'\n"
        assert sorted(p.name for p in short.iterdir()) == ["patchgate.toml", "x"]
        assert (short / "x" / "patchgate" / "t" / "check.toml").is_file()
        assert "--lane t" in up.stdout
    finally:
        _run("down", "--lane", "t", cwd=short, env={"XDG_STATE_HOME": str(short / "x")})


def _processes_naming(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_up_leaves_no_daemon_running(
    docker_engine: None, short: Path, signum: int, code: int
) -> None:
    """Interrupted after the signer answered, while the executor starts: both are stopped by pid
    (a daemon without lane.json could never be stopped by `down`)."""
    state = short / "st"
    proc = subprocess.Popen(
        [PATCHGATE, "up", "--state", str(state)], cwd=short, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (state / "signer" / "signer.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (state / "signer" / "signer.sock").exists()
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == code, stderr
    left = {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _processes_naming(str(state))}
    assert left == {}, stderr
    assert not (state / "lane.json").exists()
    assert not (state / "signer" / "signer.sock").exists()


def test_a_key_that_cannot_be_made_is_one_line_and_starts_nothing(short: Path) -> None:
    """keygen failing (here: its .pub path is a directory) was a CalledProcessError traceback."""
    (short / "st" / "operator.key.pub").mkdir(parents=True)
    up = _run("up", "--state", "st", cwd=short)
    assert up.returncode == 1
    assert up.stderr.startswith("patchgate: error: could not create the operator key")
    assert len(up.stderr.splitlines()) == 1
    assert _processes_naming(str(short / "st")) == []


def test_down_with_nothing_up_is_not_an_error(tmp_path: Path) -> None:
    """`down` on a directory with no lane says so and exits 0."""
    down = _run("down", "--state", "nothing", cwd=tmp_path)
    assert down.returncode == 0
    assert "nothing to stop" in down.stderr


@pytest.mark.slow
def test_demo_passes_twice_and_leaves_nothing_running(docker_engine: None, tmp_path: Path) -> None:
    """`demo` exits 0 with both expected verdicts, twice in a row, stops its daemons and leaves
    no container of its executor's instance (read from its own progress line) behind."""
    instances: list[str] = []
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
        found = re.findall(
            r"starting patchgate-executord on .*, (lane-[0-9a-f]{12})\)", demo.stderr
        )
        assert len(found) == 1, demo.stderr[-2000:]
        instances.append(found[0])
    assert instances[0] != instances[1]  # each demo's own temporary state, its own instance
    for instance in instances:
        assert labeled_containers(instance) == [], instance


def test_two_lanes_on_one_engine_get_two_instances(docker_engine: None, short: Path) -> None:
    """`up` in two state directories: each executor runs with the instance of its own directory
    (issue 12), so neither one's start-up sweep can remove the other's sandboxes; `down` of one
    leaves the other running with its settings."""
    lanes: list[dict[str, object]] = []
    try:
        for name in ("a", "b"):
            up = _run("up", "--state", name, cwd=short)
            assert up.returncode == 0, up.stderr
            lanes.append(json.loads((short / name / "lane.json").read_text()))
        instances = [lane["instance"] for lane in lanes]
        assert instances[0] != instances[1]
        for lane, instance in zip(lanes, instances, strict=True):
            assert re.fullmatch(r"lane-[0-9a-f]{12}", str(instance))
            pid = lane["executor"]["pid"]  # type: ignore[index]
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            assert argv[argv.index(b"--instance") + 1].decode() == instance
        b_settings = (short / "b" / "check.toml").read_text()
        assert _run("down", "--state", "a", cwd=short).returncode == 0
        assert not _alive(lanes[0]["executor"]["pid"])  # type: ignore[index]
        assert _alive(lanes[1]["executor"]["pid"])  # type: ignore[index]
        assert _alive(lanes[1]["signer"]["pid"])  # type: ignore[index]
        assert (short / "b" / "check.toml").read_text() == b_settings
    finally:
        for name in ("a", "b"):
            _run("down", "--state", name, cwd=short)
