"""The reset between variants as the supervisor runs it (``executord/inside/resetter.py``): the
helper's arguments per role, and no helper when there is nothing it could remove."""

from __future__ import annotations

import os
from pathlib import Path

from tests.unit._inside_helpers import load

resetter = load("resetter")
zygotepool = load("zygotepool")

ROLE = {"uid": 10001, "env": {"HOME": "/patchgate/judge", "TMPDIR": "/tmp"}}


def _resetter(**cfg: object) -> object:
    config = {"reset_dirs": ["/tmp", "/dev/shm"], **cfg}
    return resetter.Resetter(config, zygotepool.ZygotePool(config))


def test_with_switched_users_the_role_s_own_home_and_sysv_ipc_are_reset() -> None:
    """Two uids: ``--ipc``, the reset directories, then the role's HOME and TMPDIR, each once."""
    args = _resetter().args(ROLE)
    assert args == ["--ipc", "/tmp", "/dev/shm", "/patchgate/judge"]


def test_without_switched_users_only_the_reset_directories_are_reset() -> None:
    """One uid (unit tests): no SysV removal, no HOME (it is the test runner's own)."""
    args = _resetter(switch_users=False, test_only=True).args(ROLE)
    assert args == ["/tmp", "/dev/shm"]


def test_a_role_with_nothing_to_reset_starts_no_helper(tmp_path: Path) -> None:
    """No arguments, or a directory holding nothing of the uid: not needed; an entry: needed."""
    r = _resetter(switch_users=False, test_only=True)
    assert not r._needed([], ROLE, switch=False)
    assert not r._needed([str(tmp_path)], ROLE, switch=False)
    (tmp_path / "left").write_text("x")
    assert r._needed([str(tmp_path)], ROLE, switch=False)
    assert os.stat(tmp_path / "left").st_uid == os.geteuid()
