"""The one run path (``executord/runs/runpath.py``): a slot, a sandbox, its records, and every
infrastructure failure on the way as a transport record of the sandbox's properties."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

from executord.runs.fakeruntime import FakeRun, FakeRuntime
from executord.runs.records import RecordLog
from executord.runs.runpath import Progress, Ran, RunPath, RunState
from executord.sandbox.container import ContainerExit
from patchgate.results import RunOutcome, TransportRecord
from tests.unit.test_executord_runs import OK, Rig, _input, _rig


def _path(rig: Rig, slots: threading.BoundedSemaphore, cancel: threading.Event) -> RunPath:
    prepared = rig.executor.prepare(_input(rig, runs=1))
    events: list[Progress] = []
    return RunPath(
        prepared=prepared,
        layout=rig.executor.layout,
        labels={"patchgate.executord": "t"},
        runtime=rig.runtime,
        policy=rig.executor.policy,
        slots=slots,
        channels=rig.runtime.channel,
        state=RunState(tail=1024),
        emit=events.append,
        cancel=cancel,
    )


def test_a_cancel_while_every_slot_is_taken_is_a_transport_record(tmp_path: Path) -> None:
    """No slot frees and the request is cancelled: no container, a ``cancelled`` record."""
    rig = _rig(tmp_path)
    slots = threading.BoundedSemaphore(1)
    slots.acquire()  # the one slot is someone else's
    cancel = threading.Event()
    cancel.set()
    path = _path(rig, slots, cancel)
    path.alone(0, 1, "")
    got = path.state.results[(OK.id, 1, 0)]
    assert isinstance(got, TransportRecord)
    assert (got.kind, got.detail) == ("internal", "cancelled")
    assert rig.runtime.created == []


def test_a_free_slot_runs_the_sandbox_and_gives_its_outcome(tmp_path: Path) -> None:
    """The same run with a slot free: one container, an outcome, the slot given back."""
    rig = _rig(tmp_path)
    slots = threading.BoundedSemaphore(1)
    path = _path(rig, slots, threading.Event())
    path.alone(0, 1, "")
    got = path.state.results[(OK.id, 1, 0)]
    assert isinstance(got, RunOutcome)
    assert got.outcome == "pass"
    assert len(rig.runtime.created) == 1
    assert slots.acquire(blocking=False)


def test_an_oom_kill_of_a_single_run_is_a_transport_record_and_frees_the_slot(
    tmp_path: Path,
) -> None:
    """A single run killed for memory is the infrastructure's record, not an outcome."""
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(oom=True, exitstatus=None)))
    slots = threading.BoundedSemaphore(1)
    path = _path(rig, slots, threading.Event())
    path.alone(0, 1, "")
    got = path.state.results[(OK.id, 1, 0)]
    assert isinstance(got, TransportRecord)
    assert got.kind == "resource_exhausted"
    assert slots.acquire(blocking=False)


def test_an_unexpected_error_is_an_internal_transport_record(tmp_path: Path) -> None:
    """A failure the run path did not foresee is ``internal`` with its type, never raised."""
    rig = _rig(tmp_path)

    def broken(directory: Path, nonce: str, *, judged: bool = False, variants: int = 0) -> Any:
        raise LookupError(directory, nonce, judged, variants)

    slots = threading.BoundedSemaphore(1)
    path = dataclasses.replace(_path(rig, slots, threading.Event()), channels=broken)
    path.alone(0, 1, "")
    got = path.state.results[(OK.id, 1, 0)]
    assert isinstance(got, TransportRecord)
    assert (got.kind, got.detail) == ("internal", "LookupError")
    assert slots.acquire(blocking=False)


def test_a_sandbox_that_exited_by_itself_did_not_end_otherwise() -> None:
    """``ended`` names an OOM kill or the deadline, and nothing for a clean exit."""

    def ran(*, oom: bool = False, timed_out: bool = False) -> Ran:
        return Ran(ContainerExit(0, oom, timed_out, 1, 2), RecordLog("n"), 0.0)

    assert ran().ended(100, 1.5) == ""
    assert ran(oom=True).ended(100, 1.5) == "OOM-killed at 100 bytes"
    assert ran(timed_out=True).ended(100, 1.5) == "past its deadline of 1500 ms"
