"""``patchgate down`` signals only the process ``up`` started (issue 25): a daemon that ended and
whose pid now names another process is left alone, identified by boot id and start time, and
held by a pidfd while it is checked and signalled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from client.lanes.daemons import DaemonProc, LaneState, is_running, process_identity, stop_pid
from client.lanes.local import lane_down


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def _lane(tmp_path: Path, pid: int, identity: str) -> None:
    d = DaemonProc(name="patchgate-signerd", pid=pid, address="unix:/nonexistent/x", log="/x",
                   identity=identity)  # fmt: skip
    LaneState(state_dir=str(tmp_path), operator_keyring="k", signer=d, executor=d).save()


def test_a_reused_pid_is_not_signalled(tmp_path: Path) -> None:
    """The recorded identity is of a process that has ended; the pid now names a bystander."""
    bystander = _sleeper()
    try:
        identity = process_identity(bystander.pid)
        assert identity is not None
        boot, _, start = identity.rpartition(":")
        _lane(tmp_path, bystander.pid, f"{boot}:{int(start) - 1}")  # another process's start
        said: list[str] = []
        assert lane_down(tmp_path, said.append) is False
        assert bystander.poll() is None, "down killed a process it did not start"
        assert any("no longer" in line for line in said), said
    finally:
        bystander.kill()
        bystander.wait()


def test_an_older_lane_state_without_identity_signals_nothing(tmp_path: Path) -> None:
    bystander = _sleeper()
    try:
        _lane(tmp_path, bystander.pid, "")
        assert lane_down(tmp_path, lambda _line: None) is False
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_the_process_up_started_is_stopped(tmp_path: Path) -> None:
    daemon = _sleeper()
    identity = process_identity(daemon.pid) or ""
    assert is_running(daemon.pid, identity)
    _lane(tmp_path, daemon.pid, identity)
    said: list[str] = []
    assert lane_down(tmp_path, said.append) is True
    assert daemon.poll() is not None  # a long sleeper gone: down ended it (our child: reaped it)
    assert process_identity(daemon.pid) is None
    assert not is_running(daemon.pid, identity)
    assert stop_pid(daemon.pid, identity=identity) is False  # gone: nothing to signal
