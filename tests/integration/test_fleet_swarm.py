"""The fleet: the stack deployed on a Docker swarm with two executord replicas on an attachable
overlay network; a client container dials dns:///tasks.executord with gRPC round robin.

One check spreads its properties over both replicas (each result names its executor key id);
killing one replica mid-run leaves transport records and a re-run on the survivor, never a failed
property. The stack, its network, volume, secrets and any orphaned sandbox are removed afterwards,
and the swarm is left only if this test initialized it."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.compose_support import (
    CLOCK,
    COMPOSE,
    PATCHES,
    billing_git_repo,
    ensure_images,
    prepare_fleet_dir,
    run,
    unique,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker, pytest.mark.slow]


@dataclass
class Fleet:
    """A deployed stack and the environment its scripts read."""

    env: dict[str, str]
    stack: str
    instance: str
    repo: Path

    def check(self, out: Path, draft: str) -> subprocess.Popen[str]:
        """`compose/fleet-check.sh` of the refactor patch, started in the background."""
        argv = [
            str(COMPOSE / "fleet-check.sh"), "--repo", str(self.repo),
            "--patch", str(PATCHES / "prorate_refactor.patch"), "--out", str(out),
            "--draft-id", draft, "--drafter", "human", "--clock", CLOCK,
        ]  # fmt: skip

        return subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL, env={**os.environ, **self.env},
        )  # fmt: skip

    def executor_tasks(self) -> dict[str, str]:
        """Task slot -> container id of the running executord tasks."""
        out = run(
            [
                "docker", "ps", "--filter", f"label=com.docker.stack.namespace={self.stack}",
                "--filter", f"label=com.docker.swarm.service.name={self.stack}_executord",
                "--format", '{{.ID}} {{.Label "com.docker.swarm.task.name"}}',
            ]
        ).stdout  # fmt: skip
        tasks = {}
        for line in out.splitlines():
            cid, task = line.split()
            tasks[task.split(".")[1]] = cid
        return tasks


def _finish(proc: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str, str]:
    stdout, stderr = proc.communicate(timeout=timeout)
    return proc.returncode, stdout, stderr


def _receipt(out: Path) -> dict[str, Any]:
    return json.loads((out / "receipt.json").read_text())  # type: ignore[no-any-return]


def _first_sandbox(events: subprocess.Popen[bytes], prefix: str, timeout: float) -> str:
    """The sweep label of the first sandbox started by this fleet (others share the engine)."""
    assert events.stdout is not None
    fd, pending = events.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if line.decode().strip().startswith(prefix):
                return line.decode().strip()
    raise AssertionError(f"no sandbox of {prefix}* started within {timeout}s")


def _swarm_state() -> str:
    return run(["docker", "info", "--format", "{{.Swarm.LocalNodeState}}"]).stdout.strip()


@pytest.fixture(scope="module")
def fleet(docker_engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """`compose/fleet-up.sh` with 2 replicas; `fleet-down.sh` and a leftover check afterwards."""
    ensure_images()
    tmp = tmp_path_factory.mktemp("fleet")
    fleet_dir = prepare_fleet_dir(tmp / "fleet")
    stack, instance = f"pgt{unique()}", unique()
    env = {
        "PATCHGATE_FLEET_DIR": str(fleet_dir),
        "PATCHGATE_STACK": stack,
        "PATCHGATE_FLEET_INSTANCE": instance,
        "PATCHGATE_EXECUTOR_REPLICAS": "2",
    }
    swarm_before = _swarm_state()
    try:
        run([str(COMPOSE / "fleet-up.sh")], env=env, timeout=300)
        yield Fleet(env=env, stack=stack, instance=instance, repo=billing_git_repo(tmp / "repo"))
    finally:
        run([str(COMPOSE / "fleet-down.sh")], env=env, timeout=300)
        left = run(
            ["docker", "ps", "-aq", "--filter", f"label=com.docker.stack.namespace={stack}"]
        ).stdout.split()
        sandboxes = run(
            ["docker", "ps", "-a", "--filter", "label=patchgate.executord",
             "--format", '{{.Label "patchgate.executord"}}'],
        ).stdout.split()  # fmt: skip
        assert left == []
        assert [s for s in sandboxes if s.startswith(f"fleet-{instance}-")] == []
        assert run(["docker", "network", "ls", "-q", "--filter", f"name={stack}_"]).stdout == ""
        assert run(["docker", "volume", "ls", "-q", "--filter", f"name={stack}_"]).stdout == ""
        assert _swarm_state() == swarm_before
        shutil.rmtree(tmp)  # keys, certs, blob store, repo


def test_one_check_spreads_over_two_replicas(fleet: Fleet, tmp_path: Path) -> None:
    """Each result names its executor key id; one check's results carry at least two of them."""
    code, _out, err = _finish(fleet.check(tmp_path / "out", "fleet-1"))
    assert code == 0, err[-3000:]
    receipt = _receipt(tmp_path / "out")
    local = receipt["lanes"]["local"]
    keyids = {r["executor_keyid"] for r in local["results"] if r["outcomes"]}
    assert "" not in keyids
    assert len(keyids) >= 2, local["results"]
    assert receipt["admit"] is True


def test_killing_a_replica_mid_run_reruns_on_the_survivor(fleet: Fleet, tmp_path: Path) -> None:
    """A replica killed while it runs a property: transport records, a re-run elsewhere, no fail."""
    events = subprocess.Popen(
        ["docker", "events", "--filter", "type=container", "--filter", "event=start",
         "--filter", "label=patchgate.executord",
         "--format", '{{index .Actor.Attributes "patchgate.executord"}}'],
        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    check = fleet.check(tmp_path / "out", "fleet-2")
    try:
        label = _first_sandbox(events, f"fleet-{fleet.instance}-", timeout=120)
        victim = fleet.executor_tasks()[label.rsplit("-", 1)[1]]
        run(["docker", "kill", victim])
    finally:
        events.terminate()
        events.wait(10)
        if events.stdout is not None:
            events.stdout.close()
        code, _out, err = _finish(check)
    receipt = _receipt(tmp_path / "out")
    local = receipt["lanes"]["local"]
    failed = [r for r in local["results"] if "fail" in r["outcomes"].values()]
    assert failed == []
    assert local["retried"] >= 1, local
    reruns = [r for r in local["results"] if r["attempt"] == 2 and r["outcomes"]]
    assert reruns, local["results"]
    assert code == 0, err[-3000:]
    assert receipt["admit"] is True
