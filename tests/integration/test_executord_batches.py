"""Batched runs (isolation ``run``) against one sandbox per property run (``property``): real
daemon, real containers; outcomes per property, the per-test clock bound, the fallback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.request import ExecuteRequest
from tests.integration.fixtures_executor import (
    ExecutorProc,
    billing_case,
    containers_created_since,
    prop,
    start_executor,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]

SUITE = """
import time

import pytest

STATE = {"polluted": False}


def test_pass():
    assert sum([1, 2]) == 3


def test_fail():
    assert 1 + 1 == 3, "arithmetic moved"


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_error(broken):
    pass


def test_hang():
    time.sleep(120)


def test_polluter():
    STATE["polluted"] = True


def test_victim():
    assert not STATE["polluted"], "someone polluted the module state"
"""

GENERATED = [
    ("g.pass", "test_pass"),
    ("g.fail", "test_fail"),
    ("g.error", "test_error"),
    ("g.hang", "test_hang"),
    ("g.polluter", "test_polluter"),
    ("g.victim", "test_victim"),
]

HOG = """
def test_hog():
    blocks = []
    while True:
        blocks.append(bytearray(16 << 20))
"""


def _execute(daemon: ExecutorProc, case, isolation: str, judge: str = "on") -> ExecutionResult:  # type: ignore[no-untyped-def]
    with ExecutorClient(daemon.address) as client:
        return client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
                isolation=isolation,
                judge=judge,
            )
        )


def _by(result: ExecutionResult) -> dict[tuple[str, int], tuple[str, str]]:
    return {(o.property_id, o.run_index): (o.outcome, o.outcome_hash) for o in result.outcomes}


def test_billing_outcomes_are_the_same_in_either_isolation(
    executor_daemon: ExecutorProc, operator_key, tmp_path: Path
) -> None:
    """Every billing property: the same outcome and outcome hash per run, batched or not."""
    props = tuple(
        prop(f"b.{name}", f"properties/test_billing.py::{name}")
        for name in (
            "test_prorate_non_negative",
            "test_prorate_bounded_by_amount",
            "test_invoice_total_matches_fixture",
            "test_boundary_orders_total_non_negative",
        )
    )
    case = billing_case(tmp_path, operator_key.signer, properties=props)
    batched = _execute(executor_daemon, case, "run")
    alone = _execute(executor_daemon, case, "property")
    assert batched.transport == alone.transport == ()
    assert _by(batched) == _by(alone)
    assert {o for o, _ in _by(batched).values()} <= {"pass", "fail"}
    assert batched.alone == ()


def test_a_generated_suite_gives_each_property_its_isolated_outcome(
    executor_daemon: ExecutorProc, operator_key, tmp_path: Path
) -> None:
    """Pass, fail, error and a hang: identical outcomes and hashes in both isolations; the hang is
    exceeded_bound without costing its neighbours their outcomes; the order-dependent victim is
    unstable only when batched (its polluter runs before it in exactly one of the two runs)."""
    case = billing_case(
        tmp_path,
        operator_key.signer,
        extra_files={"properties/test_gen.py": SUITE},
        properties=tuple(prop(pid, f"properties/test_gen.py::{fn}") for pid, fn in GENERATED),
        clock_bound_ms=8000,
    )
    t0 = time.time()
    batched = _execute(executor_daemon, case, "run")
    t1 = time.time()
    alone = _execute(executor_daemon, case, "property")
    assert batched.transport == alone.transport == ()
    # one sandbox per run for the whole suite, against one per property run
    assert (
        len(containers_created_since(t0, executor_daemon.instance))
        - len(containers_created_since(t1, executor_daemon.instance))
        == 2
    )
    assert len(containers_created_since(t1, executor_daemon.instance)) == 2 * len(GENERATED)
    b, a = _by(batched), _by(alone)
    assert len(b) == len(a) == 2 * len(GENERATED)
    for pid, _ in GENERATED:
        if pid != "g.victim":
            assert b[pid, 1] == a[pid, 1] == a[pid, 2] == b[pid, 2], pid
    assert [b[f"g.{k}", 1][0] for k in ("pass", "fail", "error", "hang")] == [
        "pass", "fail", "error", "exceeded_bound",
    ]  # fmt: skip
    assert a["g.victim", 1][0] == a["g.victim", 2][0] == "pass"
    assert sorted([b["g.victim", 1][0], b["g.victim", 2][0]]) == ["fail", "pass"]
    assert batched.alone == ()  # the alarm ended the hang inside the batch


def test_an_oom_killed_batch_falls_back_and_still_scores_the_rest(
    docker_engine: None, operator_key, tmp_path: Path
) -> None:
    """One property eats the memory: its batch is OOM-killed, every property it did not score runs
    alone (the report says which and why), the others keep their outcomes, the hog is transport."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--memory", "128m")
    try:
        case = billing_case(
            tmp_path,
            operator_key.signer,
            extra_files={"properties/test_hog.py": HOG},
            properties=(
                prop("ok", "properties/test_billing.py::test_prorate_non_negative"),
                prop("hog", "properties/test_hog.py::test_hog"),
            ),
        )
        # --judge off: under the judge the kernel's OOM killer ends one process (the judge), not
        # the container, and the engine may record no OOM kill: the run is then the judge's crash,
        # an error (fail closed), not transport resource_exhausted (docs/executor.md, a gap)
        result = _execute(daemon, case, "run", judge="off")
    finally:
        daemon.stop()
    by = _by(result)
    assert [by["ok", 1][0], by["ok", 2][0]] == ["pass", "pass"]
    assert ("hog", 1) not in by
    assert {(t.property_id, t.kind) for t in result.transport} == {("hog", "resource_exhausted")}
    alone = {(pid, r): why for pid, r, why in result.alone}
    assert alone["hog", 1].startswith("its batch was OOM-killed")
    assert alone["hog", 2].startswith("its batch was OOM-killed")


SWALLOW = """
import time


def test_swallows_the_alarm():
    while True:
        try:
            time.sleep(60)
        except BaseException:
            pass


def test_fine():
    assert True is not False
"""


def test_a_test_that_swallows_the_alarm_is_ended_by_the_deadline_and_falls_back(
    executor_daemon: ExecutorProc, operator_key, tmp_path: Path
) -> None:
    """The alarm is caught and ignored: the batch runs to its deadline, then every member runs
    alone (the report says why); the swallower is exceeded_bound, its neighbour passes."""
    case = billing_case(
        tmp_path,
        operator_key.signer,
        extra_files={"properties/test_swallow.py": SWALLOW},
        properties=(
            prop("swallow", "properties/test_swallow.py::test_swallows_the_alarm"),
            prop("fine", "properties/test_swallow.py::test_fine"),
        ),
        clock_bound_ms=10000,  # a run alone counts from container start: room for a busy host
        seed=3,
    )
    result = _execute(executor_daemon, case, "run")
    by = _by(result)
    assert [by["swallow", r][0] for r in (1, 2)] == ["exceeded_bound", "exceeded_bound"]
    assert [by["fine", r][0] for r in (1, 2)] == ["pass", "pass"], result.alone
    alone = {(pid, r): why for pid, r, why in result.alone}
    assert alone["swallow", 1].startswith("its batch was past its deadline")
    assert alone["swallow", 2].startswith("its batch was past its deadline")
