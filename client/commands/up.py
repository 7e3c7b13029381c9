"""``patchgate up`` / ``patchgate down``: the laptop lane: two daemons, two processes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from client.lanes.local import LaneSettings, lane_down, lane_up
from client.lanes.state import DEFAULT_LANE, resolve_state_dir, settings_path

__all__ = ["register", "run", "run_down", "run_up"]

_UP = """\
Start patchgate-signerd and patchgate-executord in the background as two separate processes on unix
sockets under the lane's state directory (pid files, logs and the operator key there too). The
signer gets the operator key (created on first use); the executor gets only the public keyring.

The state directory is $XDG_STATE_HOME/patchgate/LANE (~/.local/state/patchgate/LANE when
XDG_STATE_HOME is unset), or --state DIR. Inside a git work tree it is refused unless git ignores
it: it holds a private key. `up` writes the lane's [check] settings to STATE/check.toml; `patchgate
check` reads those of the lane "local" by default, and another lane's with --lane NAME (or
--lane DIR for a --state directory). The Docker engine must answer (scripts/docker.sh start).
"""

_DOWN = """\
Stop both daemons of the lane by the pids `up` recorded (SIGTERM, SIGKILL after 15 s; never by
name), remove their sockets, lane.json and the lane's check.toml.
"""


def _say(msg: str) -> None:
    sys.stderr.write(f"patchgate: {msg}\n")


def _where(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lane",
        metavar="NAME",
        help=f"the lane's name: state in $XDG_STATE_HOME/patchgate/NAME (default {DEFAULT_LANE})",
    )
    p.add_argument(
        "--state",
        "--state-dir",
        dest="state",
        type=Path,
        metavar="DIR",
        help="the state directory itself (instead of --lane); refused in a git work tree "
        "unless git-ignored",
    )


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``up`` and ``down``."""
    up = subparsers.add_parser("up", help="start the laptop lane's two daemons", description=_UP)
    _where(up)
    up.add_argument("--image", default="host", help="sandbox image ('host' or a local image name)")
    up.add_argument("--runtime", choices=("runc", "runsc"), default="runc")
    up.add_argument("--max-parallel", type=int, metavar="N")
    up.set_defaults(func=run)
    down = subparsers.add_parser("down", help="stop what `patchgate up` started", description=_DOWN)
    _where(down)
    down.set_defaults(func=run)


def _check_hint(args: argparse.Namespace, state: Path) -> str:
    if args.state is not None:
        return f"patchgate check ... --lane {state.resolve()}"
    if args.lane and args.lane != DEFAULT_LANE:
        return f"patchgate check ... --lane {args.lane}"
    return "patchgate check ... (no daemon flags needed)"


def run_up(args: argparse.Namespace) -> int:
    """Start the lane and print how to use it."""
    state = resolve_state_dir(lane=args.lane, state=args.state)
    lane = lane_up(
        LaneSettings(
            state_dir=state,
            image=args.image,
            runtime=args.runtime,
            max_parallel=args.max_parallel,
        ),
        _say,
    )
    sys.stdout.write(
        f"signer    {lane.signer.address}  (pid {lane.signer.pid})\n"
        f"executor  {lane.executor.address}  (pid {lane.executor.pid}, instance {lane.instance})\n"
        f"keyring   {lane.operator_keyring}\n"
        f"settings  {settings_path(Path(lane.state_dir))}\n"
        f"use       {_check_hint(args, state)}\n"
    )
    return 0


def run_down(args: argparse.Namespace) -> int:
    """Stop the lane; exit 0 either way (nothing running is not an error)."""
    lane_down(resolve_state_dir(lane=args.lane, state=args.state), _say)
    return 0


def run(args: argparse.Namespace) -> int:
    """Dispatch ``up`` or ``down``."""
    return run_up(args) if args.command == "up" else run_down(args)
