"""Make sure a Docker engine answers, for the demo and the laptop lane.

If the engine already answers, nothing is started and nothing will be stopped. Otherwise the
repository's ``scripts/docker.sh start`` installs (Debian's docker.io) and starts ``dockerd``; the
returned handle stops only that one (``scripts/docker.sh stop``, by pid).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException

from patchgate.errors import TransportError

__all__ = ["EngineHandle", "engine_answers", "ensure_engine", "repo_root"]


def repo_root() -> Path:
    """The patchgate checkout this package runs from (editable install from a clone)."""
    return Path(__file__).resolve().parents[2]  # client/lanes/engine.py -> the checkout


def engine_answers() -> bool:
    """True when the local Docker engine answers a ping."""
    try:
        client = docker.from_env(timeout=5)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except DockerException:
        return False


@dataclass(frozen=True)
class EngineHandle:
    """Whether we started the engine; ``stop`` stops it only then."""

    started: bool
    script: Path | None

    def stop(self) -> None:
        """Stop the engine if (and only if) we started it."""
        if self.started and self.script is not None:
            subprocess.run(
                ["bash", str(self.script), "stop"], check=False, stdin=subprocess.DEVNULL
            )


def ensure_engine(say: object = print) -> EngineHandle:
    """An answering engine, started with ``scripts/docker.sh`` when needed."""
    if engine_answers():
        return EngineHandle(started=False, script=None)
    script = repo_root() / "scripts" / "docker.sh"
    if not script.is_file():
        raise TransportError(
            "unavailable", "no Docker engine answers and scripts/docker.sh is not here to start one"
        )
    if callable(say):
        say("no Docker engine answers; starting one with scripts/docker.sh (may install docker.io)")
    proc = subprocess.run(["bash", str(script), "start"], check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0 or not engine_answers():
        raise TransportError("unavailable", "could not start a Docker engine (scripts/docker.sh)")
    return EngineHandle(started=True, script=script)
