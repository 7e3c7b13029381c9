"""``run_container`` tells who ended a sandbox: its own exit, the executor's clock bound, the
kernel's OOM killer, or somebody outside the executor (issue 12: transport stays transport)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from executord.errors import SandboxError
from executord.runs.fakeruntime import FakeRun, FakeRuntime
from executord.sandbox.container import (
    ContainerSpec,
    Mount,
    SandboxPolicy,
    _engine_time,
    run_container,
)

POLICY = SandboxPolicy(image="img")


def _run(tmp_path: Path, run: FakeRun, *, bound_s: float = 5.0) -> tuple[FakeRuntime, object]:
    runtime = FakeRuntime(script=lambda _s: run)
    spec = ContainerSpec(
        argv=("python",),
        mounts=(Mount(str(tmp_path), "/results", read_only=False),),
        env={},
        workdir="/workspace",
    )
    try:
        return runtime, run_container(
            runtime, spec, POLICY, clock_bound_s=bound_s, cancel=threading.Event()
        )
    except SandboxError as exc:
        return runtime, exc


def test_kill_from_outside_is_killed_externally_and_removed(tmp_path: Path) -> None:
    """``docker kill`` by someone else: transport ``killed_externally``, never an exit to score."""
    runtime, got = _run(tmp_path, FakeRun(killed_externally=True))
    assert isinstance(got, SandboxError)
    assert got.kind == "killed_externally"
    assert "exit 137" in got.detail
    assert runtime.live == []


def test_container_removed_mid_wait_is_killed_externally(tmp_path: Path) -> None:
    """``docker rm -f``: the engine no longer knows the container; the kind says so."""
    runtime, got = _run(tmp_path, FakeRun(fail_on="wait", fail_kind="killed_externally"))
    assert isinstance(got, SandboxError)
    assert got.kind == "killed_externally"
    assert runtime.live == []


def test_own_clock_bound_kill_is_not_external(tmp_path: Path) -> None:
    """The executor's own kill at the clock bound stays ``timed_out`` (→ exceeded_bound)."""
    runtime, got = _run(tmp_path, FakeRun(hang=True), bound_s=0.05)
    assert not isinstance(got, SandboxError)
    assert got.timed_out  # type: ignore[attr-defined]
    assert runtime.killed
    assert runtime.live == []


def test_oom_is_not_external(tmp_path: Path) -> None:
    """The kernel's OOM kill is reported as such (→ resource_exhausted), not as an outsider."""
    _, got = _run(tmp_path, FakeRun(oom=True))
    assert not isinstance(got, SandboxError)
    assert got.oom_killed  # type: ignore[attr-defined]


def test_exit_137_without_a_kill_request_is_an_exit(tmp_path: Path) -> None:
    """Code that exits 137 by itself does not get to pass as an outside kill."""
    _, got = _run(tmp_path, FakeRun(exit_code=137))
    assert not isinstance(got, SandboxError)
    assert got.exit_code == 137  # type: ignore[attr-defined]


def test_engine_time_keeps_nanoseconds() -> None:
    """The events API's ``seconds.nanoseconds`` is exact (a float would round)."""
    assert _engine_time("2026-12-01T09:12:25.120404175Z") == "1796116345.120404175"
    assert _engine_time("2026-12-01T09:12:25Z") == "1796116345.000000000"


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00Z", "junk", "2026-12-01T09:12:25.x1Z"])
def test_engine_time_refuses_what_it_cannot_read(stamp: str) -> None:
    """A zero or unreadable engine time is an internal transport, not a guess."""
    with pytest.raises(SandboxError, match="engine time"):
        _engine_time(stamp)


def test_engine_time_plus_whole_seconds() -> None:
    """The kill check's second look ends a second after FinishedAt, nanoseconds kept."""
    assert _engine_time("2026-12-01T09:12:25.120404175Z", plus_s=1.0) == "1796116346.120404175"


class _LateKillEvent:
    """An engine that logs the kill only just after the exit it caused."""

    def __init__(self) -> None:
        self.looks: list[float] = []

    def kill_requested(self, cid: str, grace_s: float = 0.0) -> bool:
        self.looks.append(grace_s)
        return grace_s > 0


def test_a_kill_logged_just_after_the_exit_still_counts() -> None:
    """Regression (seen once in six runs under load): docker kill came back as `error`."""
    from executord.sandbox.container import _killed_from_outside  # noqa: PLC0415

    engine = _LateKillEvent()
    assert _killed_from_outside(engine, "c", 137)  # type: ignore[arg-type]
    assert engine.looks == [0.0, 1.0]
    engine.looks.clear()
    assert not _killed_from_outside(engine, "c", 1)  # type: ignore[arg-type]
    assert engine.looks == [0.0]  # only a SIGKILL exit pays for the second look
