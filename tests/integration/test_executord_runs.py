"""Executor end to end: real daemon, real containers, the billing example."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchgate.executor_client import ExecutorClient
from patchgate.request import ExecuteRequest
from tests.integration.fixtures_executor import ExecutorProc, billing_case, prop

pytestmark = [pytest.mark.integration, pytest.mark.docker]

FAILING = """
def test_always_fails():
    assert 1 + 1 == 3, "arithmetic moved"
"""


def test_pass_and_fail_twice_with_equal_hashes(
    executor_daemon: ExecutorProc, operator_key, tmp_path: Path
):
    """A passing and a failing property: pass/fail in both runs, equal hashes per property."""
    case = billing_case(
        tmp_path,
        operator_key.signer,
        extra_files={"properties/test_extra_fail.py": FAILING},
        properties=(
            prop("ok", "properties/test_billing.py::test_prorate_non_negative"),
            prop("bad", "properties/test_extra_fail.py::test_always_fails"),
        ),
    )
    with ExecutorClient(executor_daemon.address) as client:
        result = client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
            )
        )
    assert result.transport == ()
    by = {(o.property_id, o.run_index): o for o in result.outcomes}
    assert [by["ok", 1].outcome, by["ok", 2].outcome] == ["pass", "pass"]
    assert [by["bad", 1].outcome, by["bad", 2].outcome] == ["fail", "fail"]
    assert by["ok", 1].outcome_hash == by["ok", 2].outcome_hash
    assert by["bad", 1].outcome_hash == by["bad", 2].outcome_hash
    assert "arithmetic moved" in by["bad", 1].failure_signature
    assert result.observed_fixture_digest == case.manifest.digest()
    assert result.envelope is not None
    assert result.executor_keyid
    assert result.sandbox["network_mode"] == "none"
