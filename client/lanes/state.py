"""Where a laptop lane keeps its state, and the settings file ``patchgate check`` reads from it.

A lane's state directory (the operator key, sockets, logs, ``lane.json`` and the settings file) is
``$XDG_STATE_HOME/patchgate/<lane>`` (``~/.local/state/patchgate/<lane>`` when ``XDG_STATE_HOME``
is unset, empty or relative), or the directory given with ``--state``. It is refused inside a git
work tree unless git ignores every file the lane writes there: a private key in a work tree with no
ignore rule is one ``git add -A`` away from a commit.

The settings file is ``check.toml`` — never ``patchgate.toml``, which is the name of the project's
own ``[tool.patchgate]`` configuration — holding the ``[check]`` table that points ``check`` at the
lane, written with a TOML writer (any character of a path round-trips).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w

from patchgate import git
from patchgate.atomicfile import atomic_write_bytes
from patchgate.errors import PatchgateError, UsageError

__all__ = [
    "DEFAULT_LANE",
    "MARKER",
    "SETTINGS_FILE",
    "STATE_FILES",
    "check_state_dir",
    "lane_settings_file",
    "lane_state_dir",
    "resolve_state_dir",
    "settings_path",
    "write_settings",
]

DEFAULT_LANE = "local"
SETTINGS_FILE = "check.toml"
#: First line of every settings file ``up`` writes (an older ``up`` wrote it to ./patchgate.toml).
MARKER = "# written by `patchgate up`"
#: Every file ``up`` writes under the state directory: each one must be git-ignored in a work tree.
STATE_FILES = (
    "operator.key",
    "operator.key.pub",
    "lane.json",
    SETTINGS_FILE,
    "audit.log",
    "logs/signerd.log",
    "logs/executord.log",
    "signer/signer.sock",
    "executor/executor.sock",
)
_SUN_PATH_MAX = 107  # bytes of a unix socket path (sockaddr_un.sun_path less its NUL)
_LANE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_GIT_TIMEOUT = 30


def _state_home(environ: Mapping[str, str]) -> Path:
    xdg = environ.get("XDG_STATE_HOME", "")
    if xdg and Path(xdg).is_absolute():  # the spec: a relative value is to be ignored
        return Path(xdg)
    home = environ.get("HOME", "")
    if not home:
        try:
            home = str(Path.home())
        except (RuntimeError, KeyError):  # no HOME and no passwd entry for this uid
            raise UsageError(
                "no home directory to keep lane state in: set XDG_STATE_HOME or pass --state"
            ) from None
    return Path(home) / ".local" / "state"


def lane_state_dir(lane: str, environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/patchgate/<lane>``; a lane name is letters, digits, ``.``, ``_``, ``-``."""
    if not _LANE_NAME.fullmatch(lane):
        raise UsageError(
            f"--lane {lane!r}: a lane name is 1-64 letters, digits, '.', '_' or '-' "
            "(not starting with '.', '_' or '-')"
        )
    return _state_home(os.environ if environ is None else environ) / "patchgate" / lane


def resolve_state_dir(
    *, lane: str | None, state: Path | None, environ: Mapping[str, str] | None = None
) -> Path:
    """The state directory of ``--state DIR`` or ``--lane NAME`` (default lane: ``local``)."""
    if state is not None:
        if lane is not None:
            raise UsageError("--lane and --state name the same thing; give one")
        return Path(state)
    return lane_state_dir(lane or DEFAULT_LANE, environ)


def lane_settings_file(lane: str | None, environ: Mapping[str, str] | None = None) -> Path:
    """The settings file of ``check --lane``: a NAME (no ``/``) is the lane ``up --lane NAME``
    started, anything with a ``/`` the state directory of ``up --state DIR``; None: the default
    lane."""
    if lane is not None and "/" in lane:
        return settings_path(Path(lane))
    return settings_path(lane_state_dir(lane or DEFAULT_LANE, environ))


def settings_path(state_dir: Path) -> Path:
    """The lane's settings file (``STATE/check.toml``)."""
    return Path(state_dir) / SETTINGS_FILE


def _work_tree_of(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding a ``.git`` (a work tree), if any."""
    for place in (path, *path.parents):
        if (place / ".git").exists() or (place / ".git").is_symlink():
            return place
    return None


def check_state_dir(state_dir: Path) -> None:
    """UsageError unless the lane may write its state in ``state_dir``: a path a TOML file can
    hold (UTF-8), outside every git work tree or with every file the lane writes there ignored by
    git (a tracked file is never ignored). Fails closed when git cannot answer."""
    state = Path(state_dir).resolve()
    try:
        str(state).encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"state directory {state_dir!r}: its path is not valid UTF-8, which the lane's "
            "settings file cannot hold; choose another --state"
        ) from None
    longest = max(
        (state / n for n in STATE_FILES if n.endswith(".sock")), key=lambda p: len(str(p))
    )
    if len(os.fsencode(longest)) > _SUN_PATH_MAX:
        raise UsageError(
            f"state directory {state}: the socket path {longest} is longer than the "
            f"{_SUN_PATH_MAX} bytes a unix socket address holds; choose a shorter --state"
        )
    top = _work_tree_of(state)
    if top is None:
        return
    wanted = [str(state / name) for name in STATE_FILES]
    try:
        proc = git.run(
            top,
            "check-ignore",
            "--stdin",
            "-z",
            stdin=("\0".join(wanted) + "\0").encode("utf-8", "surrogateescape"),
            timeout=_GIT_TIMEOUT,
        )
    except PatchgateError as exc:
        raise UsageError(
            f"state directory {state} is inside the git work tree {top} and git cannot say "
            f"whether it is ignored ({exc}); pass --state outside the work tree"
        ) from None
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode not in (0, 1):  # 1: nothing ignored
        reason = " ".join(stderr.split()) or f"git exited {proc.returncode}"
        raise UsageError(
            f"state directory {state} is inside the git work tree {top} and git cannot say "
            f"whether it is ignored ({reason}); pass --state outside the work tree"
        )
    ignored = {p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p}
    missing = [w for w in wanted if w not in ignored]
    if missing:
        rel = Path(missing[0]).relative_to(top)
        raise UsageError(
            f"state directory {state} is inside the git work tree {top} and {rel} is not "
            "git-ignored (it would hold the operator's private key): add an ignore rule for it "
            "or use the default state directory (no --state)"
        )


def write_settings(state_dir: Path, table: Mapping[str, Any]) -> Path:
    """Write the ``[check]`` table to ``STATE/check.toml`` (atomically, with a TOML writer)."""
    path = settings_path(state_dir)
    text = f"{MARKER}; `patchgate check` reads it (patchgate up --help)\n" + tomli_w.dumps(
        {"check": dict(table)}
    )
    atomic_write_bytes(path, text.encode("utf-8"), mode=0o600)
    return path
