"""The batch's zygotes as the supervisor holds them (``executord/inside/zygotepool.py``): keys
and roles, a zygote that ended is dropped and noted, and the kills between pairs spare the
zygotes and only them. (Zygotes forking real pairs run in ``test_inside_variants.py``.)"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.unit._inside_helpers import load

pair = load("pair")
zygotepool = load("zygotepool")


def test_each_zygote_key_belongs_to_its_role() -> None:
    """A role's lean resets zygote and the collecting zygote are that role's (the judge's)."""
    assert zygotepool.role_of("subject") == "subject"
    assert zygotepool.role_of("judge" + zygotepool.RESETS) == "judge"
    assert zygotepool.role_of(zygotepool.COLLECTED) == "judge"


#: A pid past the largest ``pid_max`` Linux allows (2**22): no process can have it, so a kill
#: of it by a dropped zygote (``Zygote.close``) reaches nothing.
_NO_PID = 2**22 + 11


@pytest.fixture
def pool() -> Iterator[zygotepool.ZygotePool]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    theirs.close()
    got = zygotepool.ZygotePool({})
    got.zygotes["subject"] = zygotepool.Zygote(pair.Forked(_NO_PID), ours)
    yield got
    ours.close()


def test_the_kills_between_pairs_spare_the_zygotes(pool: zygotepool.ZygotePool) -> None:
    """The zygotes' pids, and nothing else."""
    assert pool.spared() == frozenset({_NO_PID})


def test_a_zygote_that_ended_is_dropped_and_noted(pool: zygotepool.ZygotePool) -> None:
    """Reaped: no longer forks, no longer spared, and why goes to the supervisor's stderr."""
    pool.reaped(12345, 0)  # not a zygote's pid: nothing changes
    assert "subject" in pool.zygotes
    pool.reaped(_NO_PID, 9 << 8)
    assert pool.zygotes == {}
    assert pool.spared() == frozenset()
    assert pool.unfit == ["subject: it ended (9)"]
