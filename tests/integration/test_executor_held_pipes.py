"""A held pipe cannot stall a run or a batch (issue 41, item 3): real executor, real Docker.

The attack: the code under test forks a child that leaves the subject's session and sleeps,
keeping every pipe it inherited (the subject's report pipe, its link to the judge) open. The
supervisor read the subject's report pipe to its end after the judge ended, so it waited on that
child: a plain run was held to its bound, a mutation batch to the sandbox's deadline, and the
batch's later variants never ran. Now the subject is ended by its uid when the judge ends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.request import ExecuteRequest, Variant
from tests.integration.fixtures_executor import ExecutorProc, billing_case, prop

pytestmark = [pytest.mark.integration, pytest.mark.docker]

MODULE = "billing/__init__.py"
CLAMP = "used = min(max(used_days, 0), period_days)"
#: Appended to the module: on import, a child leaves the session and holds every inherited fd.
HOLDER = """
import os as _os
import time as _time

if _os.fork() == 0:
    _os.setsid()
    _time.sleep(3600)
    _os._exit(0)
"""
PROPS = (
    prop("b.non_negative", "properties/test_billing.py::test_prorate_non_negative"),
    prop("b.bounded", "properties/test_billing.py::test_prorate_bounded_by_amount"),
)


def _execute(
    daemon: ExecutorProc, case, variants: tuple[tuple[str, bytes], ...] = ()
) -> ExecutionResult:  # type: ignore[no-untyped-def]
    request = ExecuteRequest(
        envelope=case.envelope,
        workspace=case.workspace,
        fixture_root="fixtures",
        properties=tuple(case.properties),
        runs=1,
        judge="on",
        source_roots=(".",),
        production=("billing",),
        variants=tuple(Variant(path, source) for path, source in variants),
        variant_bound_ms=8000 if variants else 0,
    )
    with ExecutorClient(daemon.address) as client:
        return client.execute(request)


def test_a_child_holding_the_pipes_does_not_stall_a_batch_and_later_variants_run(
    executor_daemon: ExecutorProc, operator_key, tmp_path: Path
) -> None:
    case = billing_case(tmp_path, operator_key.signer, properties=PROPS)
    disk = (case.workspace / MODULE).read_bytes()
    unclamped = disk.replace(CLAMP.encode(), b"used = min(used_days, period_days)")
    assert unclamped != disk
    variants = (
        (MODULE, disk + HOLDER.encode()),  # 1: holds the pipes; its tests pass all the same
        (MODULE, unclamped),  # 2: after it, a mutant non_negative kills
        (MODULE, disk),  # 3: a control
    )
    result = _execute(executor_daemon, case, variants)
    assert result.transport == (), result.transport
    got = {(o.property_id, o.variant): (o.outcome, o.failure_kind) for o in result.outcomes}
    ok = ("pass", "")
    assert got == {
        ("b.non_negative", 1): ok,
        ("b.bounded", 1): ok,
        ("b.non_negative", 2): ("fail", "assertion"),
        ("b.bounded", 2): ok,
        ("b.non_negative", 3): ok,
        ("b.bounded", 3): ok,
    }, result.outcomes  # held to the deadline, every variant was judge_error and none ran after


def test_a_child_holding_the_pipes_does_not_hold_a_plain_run_to_its_bound(
    executor_daemon: ExecutorProc, operator_key, tmp_path: Path
) -> None:
    case = billing_case(tmp_path, operator_key.signer, properties=PROPS[:1], clock_bound_ms=30000)
    module = case.workspace / MODULE
    module.write_bytes(module.read_bytes() + HOLDER.encode())  # the code under test holds them
    result = _execute(executor_daemon, case)
    assert result.transport == (), result.transport
    # held to its bound, the run was exceeded_bound; ended with the judge, it passes
    assert [(o.property_id, o.outcome) for o in result.outcomes] == [("b.non_negative", "pass")]
