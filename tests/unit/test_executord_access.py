"""mTLS access to the executor: only the ``client`` role may call the Executor service."""

from __future__ import annotations

import pytest

from executord.service.access import refusal


@pytest.mark.parametrize("method", ["GetInfo", "FindMissingBlobs", "UploadBlobs", "Execute"])
def test_client_role_may_call_every_executor_method(method: str) -> None:
    assert refusal(f"/patchgate.v1.Executor/{method}", "client") is None


@pytest.mark.parametrize("role", ["executor", "signer", "operator", "clientx"])
def test_other_roles_are_refused(role: str) -> None:
    why = refusal("/patchgate.v1.Executor/Execute", role)
    assert why is not None
    assert role in why


def test_certificate_without_role_is_refused() -> None:
    assert refusal("/patchgate.v1.Executor/GetInfo", None) == (
        "the caller's certificate carries no patchgate role"
    )


@pytest.mark.parametrize("method", ["/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"])
def test_health_stays_open(method: str) -> None:
    assert refusal(method, None) is None
    assert refusal(method, "executor") is None
