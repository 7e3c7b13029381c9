"""``patchgate up`` / ``patchgate down``: the laptop lane: two daemons, two processes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from client.lanes.local import LaneSettings, config_snippet, lane_down, lane_up

__all__ = ["register", "run", "run_down", "run_up"]

_UP = """\
Start patchgate-signerd and patchgate-executord in the background as two separate processes on unix
sockets under the state directory (pid files and logs there too). The signer gets the operator key
(created on first use); the executor gets only the public keyring. Prints the addresses to pass to
`patchgate check` and writes a patchgate.toml [check] snippet so `check` finds them without flags.
The Docker engine must answer (scripts/docker.sh start).
"""


def _say(msg: str) -> None:
    sys.stderr.write(f"patchgate: {msg}\n")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``up`` and ``down``."""
    up = subparsers.add_parser("up", help="start the laptop lane's two daemons", description=_UP)
    up.add_argument("--state-dir", type=Path, default=Path(".patchgate"), metavar="DIR")
    up.add_argument("--image", default="host", help="sandbox image ('host' or a local image name)")
    up.add_argument("--runtime", choices=("runc", "runsc"), default="runc")
    up.add_argument("--max-parallel", type=int, metavar="N")
    up.add_argument(
        "--config",
        type=Path,
        default=Path("patchgate.toml"),
        metavar="FILE",
        help="where to write the [check] snippet (never over a file `up` did not write)",
    )
    up.set_defaults(func=run)
    down = subparsers.add_parser(
        "down", help="stop what `patchgate up` started", description="Stop both daemons by pid."
    )
    down.add_argument("--state-dir", type=Path, default=Path(".patchgate"), metavar="DIR")
    down.set_defaults(func=run)


def run_up(args: argparse.Namespace) -> int:
    """Start the lane and print how to use it."""
    lane = lane_up(
        LaneSettings(
            state_dir=args.state_dir,
            image=args.image,
            runtime=args.runtime,
            max_parallel=args.max_parallel,
            write_config=args.config,
        ),
        _say,
    )
    sys.stdout.write(
        f"signer    {lane.signer.address}  (pid {lane.signer.pid})\n"
        f"executor  {lane.executor.address}  (pid {lane.executor.pid}, instance {lane.instance})\n"
        f"keyring   {lane.operator_keyring}\n\n{config_snippet(lane)}"
    )
    return 0


def run_down(args: argparse.Namespace) -> int:
    """Stop the lane; exit 0 either way (nothing running is not an error)."""
    lane_down(args.state_dir, _say)
    return 0


def run(args: argparse.Namespace) -> int:
    """Dispatch ``up`` or ``down``."""
    return run_up(args) if args.command == "up" else run_down(args)
