"""The compose lane: signerd and executord as two services from locally built images, mTLS on
both TCP ports, gRPC health checks; a `check` through them admits the refactor; `down -v` leaves
nothing behind."""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

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

PATCHGATE = str(Path(sys.executable).parent / "patchgate")


class ComposeLane:
    """A running compose project and how to reach it from the host."""

    def __init__(self, env: dict[str, str], up_stdout: str) -> None:
        self.env = env
        self.project = env["PATCHGATE_COMPOSE_PROJECT"]
        self.dir = Path(env["PATCHGATE_FLEET_DIR"])
        found = dict(re.findall(r"^(signer|executor):\s+(\S+)$", up_stdout, re.M))
        self.signer, self.executor = found["signer"], found["executor"]

    def container(self, service: str) -> dict:  # type: ignore[type-arg]
        """``docker inspect`` of the service's container."""
        cid = run([str(COMPOSE / "compose.sh"), "ps", "-q", service], env=self.env).stdout.strip()
        return json.loads(run(["docker", "inspect", cid]).stdout)[0]  # type: ignore[no-any-return]

    def tls_flags(self) -> list[str]:
        """The client certificate for both daemons."""
        certs = self.dir / "certs"
        flags = []
        for who in ("signer", "executor"):
            flags += [
                f"--{who}-tls-ca", str(certs / "ca.crt"),
                f"--{who}-tls-cert", str(certs / "client.crt"),
                f"--{who}-tls-key", str(certs / "client.key"),
            ]  # fmt: skip
        return flags


def _leftovers(project: str) -> list[str]:
    label = f"label=com.docker.compose.project={project}"
    found = []
    for kind in ("ps -aq", "network ls -q", "volume ls -q"):
        out = run(["docker", *kind.split(), "--filter", label]).stdout.split()
        found += [f"{kind.split()[0]} {x}" for x in out]
    return found


@pytest.fixture(scope="module")
def compose_lane(
    docker_engine: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ComposeLane]:
    """`compose/up.sh` on a fresh fleet dir (random 127.0.0.1 ports); `down.sh` after the module."""
    ensure_images()
    fleet = prepare_fleet_dir(tmp_path_factory.mktemp("compose") / "fleet")
    env = {
        "PATCHGATE_FLEET_DIR": str(fleet),
        "PATCHGATE_COMPOSE_PROJECT": f"pgtest{unique()}",
        "PATCHGATE_FLEET_INSTANCE": unique(),
        "PATCHGATE_SIGNER_PORT": "0",
        "PATCHGATE_EXECUTOR_PORT": "0",
    }
    try:
        up = run([str(COMPOSE / "up.sh")], env=env, timeout=300)
        yield ComposeLane(env, up.stdout)
    finally:
        run([str(COMPOSE / "down.sh")], env=env, timeout=300)
        assert _leftovers(env["PATCHGATE_COMPOSE_PROJECT"]) == []
        shutil.rmtree(fleet.parent)  # keys, certs, executor state and blob store


def test_check_through_compose_services_admits_the_refactor(
    compose_lane: ComposeLane, tmp_path: Path
) -> None:
    """Both services are healthy (gRPC health over mTLS) and a check through them admits."""
    for svc in ("signerd", "executord"):
        assert compose_lane.container(svc)["State"]["Health"]["Status"] == "healthy"
    repo = billing_git_repo(tmp_path / "billing")
    out = tmp_path / "out"
    check = run(
        [
            PATCHGATE, "check", "--repo", str(repo), "--base", "HEAD",
            "--patch", str(PATCHES / "prorate_refactor.patch"),
            "--draft-id", "compose-1", "--drafter", "human", "--clock", CLOCK, "--out", str(out),
            "--signer", compose_lane.signer, "--executor", compose_lane.executor,
            "--operator-keyring", str(compose_lane.dir / "public" / "operator-keyring.json"),
            *compose_lane.tls_flags(),
        ],
        check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr[-3000:]
    receipt = json.loads((out / "receipt.json").read_text())
    assert receipt["admit"] is True
    assert receipt["lanes"]["local"]["transport"] == 0


def test_only_the_signer_mounts_the_operator_key(compose_lane: ComposeLane) -> None:
    """The executor gets the docker socket and the public keyring; the private key only signerd."""
    key = str(compose_lane.dir / "signer" / "operator.key")
    signer = {m["Source"] for m in compose_lane.container("signerd")["Mounts"]}
    executor = compose_lane.container("executord")
    sources = {m["Source"] for m in executor["Mounts"]}
    assert key in signer
    assert key not in sources
    assert not any(s.startswith(str(compose_lane.dir / "signer")) for s in sources)
    assert "/var/run/docker.sock" in sources
    assert str(compose_lane.dir / "public") in sources
    assert not any("signer.key" in s or "client.key" in s for s in sources)


def test_the_signer_refuses_a_client_without_a_certificate(compose_lane: ComposeLane) -> None:
    """The published signer port speaks mTLS only: plaintext or no certificate is not SERVING."""
    plain = run(
        [sys.executable, "-m", "patchgate.healthcheck", compose_lane.signer, "--timeout", "3"],
        check=False,
    )
    assert plain.returncode == 1
    assert "UNREACHABLE" in plain.stdout
