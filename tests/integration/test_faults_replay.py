"""Attack: replay a valid operator-signed fixture envelope over other fixture bytes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from patchgate.errors import RefusedError
from patchgate.executor_client import ExecutorClient
from patchgate.request import ExecuteRequest
from tests.integration.fixtures_executor import ExecutorProc, billing_case, containers_created_since

pytestmark = [pytest.mark.integration, pytest.mark.docker]


def test_replayed_envelope_over_rewritten_fixture_is_refused(
    executor_daemon: ExecutorProc, operator_key, tmp_path: Path
) -> None:
    """An old, valid envelope sent with a rewritten fixture: refused, no container created."""
    case = billing_case(tmp_path, operator_key.signer)
    fixture = case.workspace / "fixtures" / "orders_min.json"
    fixture.write_bytes(fixture.read_bytes().replace(b"1", b"9"))
    t0 = time.time() - 0.5
    with ExecutorClient(executor_daemon.address) as client, pytest.raises(RefusedError) as info:
        client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
                runs=1,
            )
        )
    time.sleep(0.5)
    assert info.value.code in {"FAILED_PRECONDITION", "INVALID_ARGUMENT"}, info.value
    assert "hash" in info.value.reason or "digest" in info.value.reason
    assert containers_created_since(t0, executor_daemon.instance) == []
