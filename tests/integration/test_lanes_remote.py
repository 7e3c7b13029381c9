"""The remote lane: a second executor serving mTLS over TCP, reached with a pinned CA.

Its results are recorded under ``lanes.remote`` and signed by its own executor key; they confirm
and never credit; a run whose only evidence is remote gets R6; an unreachable remote lane is an
availability miss (``receipt.transport``, lane ``remote``) that changes no verdict and opens no
freeze. Over mTLS the executor serves only the ``client`` role (health stays open).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.errors import RefusedError
from patchgate.executor_client import ExecutorClient
from patchgate.pki import issue, make_ca
from patchgate.tls import ClientTLS
from tests.conftest import KeyPair
from tests.integration.fixtures_executor import ExecutorProc, start_executor
from tests.integration.fixtures_gate import BillingRepo, Gate
from tests.integration.fixtures_signer import TestPKI

pytestmark = [pytest.mark.integration, pytest.mark.docker]


@pytest.fixture
def remote_executor(
    docker_engine: None, operator_key: KeyPair, executor_key: KeyPair, pki: TestPKI, tmp_path: Path
) -> Iterator[ExecutorProc]:
    """An executor with its own key, serving mTLS on 127.0.0.1 (a port the kernel picks)."""
    work = tmp_path / "remote"
    work.mkdir()
    daemon = start_executor(
        work, operator_key.keyring_path,
        "--listen", "127.0.0.1:0",
        "--key", str(executor_key.key_path),
        "--tls-cert", str(pki.executor.cert),
        "--tls-key", str(pki.executor.key),
        "--client-ca", str(pki.ca.cert),
    )  # fmt: skip
    yield daemon
    daemon.stop()


def _remote_flags(pki: TestPKI, who: str = "client") -> tuple[str, ...]:
    paths = getattr(pki, who)
    return (
        "--remote-tls-ca", str(pki.ca.cert),
        "--remote-tls-cert", str(paths.cert),
        "--remote-tls-key", str(paths.key),
    )  # fmt: skip


# -- the executor's mTLS access rule --------------------------------------------------------------


def test_client_role_may_call_the_tls_executor(
    remote_executor: ExecutorProc, pki: TestPKI, executor_key: KeyPair
) -> None:
    with ExecutorClient(remote_executor.address, tls=pki.client_tls(pki.client)) as c:
        assert c.info().executor_keyid == executor_key.signer.keyid


@pytest.mark.parametrize("who", ["executor", "signer"])
def test_other_roles_are_permission_denied(
    remote_executor: ExecutorProc, pki: TestPKI, who: str
) -> None:
    tls = pki.client_tls(getattr(pki, who))
    with ExecutorClient(remote_executor.address, tls=tls) as c, pytest.raises(RefusedError) as info:
        c.info()
    assert info.value.code == "PERMISSION_DENIED"
    assert f"role {who!r} may not call the executor" in info.value.reason


def test_certificate_without_a_role_is_permission_denied(
    remote_executor: ExecutorProc, pki: TestPKI, tmp_path: Path
) -> None:
    """Issued by the right CA, but its SPIFFE role is not a patchgate role name."""
    odd = issue(pki.directory, "Not A Role", name=f"odd-{tmp_path.name}")
    tls = ClientTLS(ca_cert=pki.ca.cert, cert=odd.cert, key=odd.key)
    with ExecutorClient(remote_executor.address, tls=tls) as c, pytest.raises(RefusedError) as info:
        c.info()
    assert info.value.code == "PERMISSION_DENIED"


def test_health_stays_open_to_any_certificate_of_the_ca(
    remote_executor: ExecutorProc, pki: TestPKI
) -> None:
    tls = pki.client_tls(pki.executor)
    target = remote_executor.address
    with grpc.secure_channel(target, tls.channel_credentials(), tls.channel_options()) as ch:
        reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


# -- the remote lane through `patchgate check` ---------------------------------------------------


def test_remote_results_are_recorded_signed_by_its_key_and_never_credit(
    gate: Gate, billing_repo: BillingRepo, remote_executor: ExecutorProc, pki: TestPKI,
    executor_key: KeyPair,
) -> None:  # fmt: skip
    run = gate.check(
        billing_repo, "prorate_refactor.patch", *_remote_flags(pki),
        remote_executor=remote_executor.address,
    )  # fmt: skip
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert r["posture"] == "human_review"
    remote = r["lanes"]["remote"]
    assert set(remote["status_by_id"].values()) == {"pass"}
    assert {x["executor_keyid"] for x in remote["results"]} == {executor_key.signer.keyid}
    assert remote["executors"][remote_executor.address]["executor_keyids"] == [
        executor_key.signer.keyid
    ]
    local_keys = {x["executor_keyid"] for x in r["lanes"]["local"]["results"]}
    assert executor_key.signer.keyid not in local_keys  # the local lane is another executor
    ledger_keys = {x["executor_keyid"] for x in run.file("property_ledger.json")["runs"]}
    assert ledger_keys == local_keys  # the property ledger holds local evidence only


def test_remote_only_run_gets_r6_and_is_never_admitted(
    gate: Gate, billing_repo: BillingRepo, remote_executor: ExecutorProc, pki: TestPKI
) -> None:
    run = gate.check(
        billing_repo, "prorate_refactor.patch", "--remote-only", *_remote_flags(pki),
        executor="", remote_executor=remote_executor.address,
    )  # fmt: skip
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert r["rejection_codes"] == ["R1", "R6"]  # every symbol with credit 0 gets R1
    assert (r["posture"], r["admit"]) == ("reject_credit", False)
    assert r["credits"] == {"billing.prorate": 0}
    assert r["uncredited"] == {"billing.prorate": "only a remote lane passed (R6)"}
    assert set(r["lanes"]["remote"]["status_by_id"].values()) == {"pass"}
    assert r["lanes"]["local"]["results"] == []
    assert "property_ledger.json" not in run.files()
    assert "remote only" in run.stdout


def test_remote_executor_without_local_executor_is_a_usage_error(
    gate: Gate, billing_repo: BillingRepo, remote_executor: ExecutorProc, pki: TestPKI
) -> None:
    """Forgetting --executor must not silently turn a gate into a confirmation-only run."""
    run = gate.check(
        billing_repo, "prorate_refactor.patch", *_remote_flags(pki),
        executor="", remote_executor=remote_executor.address,
    )  # fmt: skip
    assert run.code == 64
    assert "--remote-only" in run.stderr
    assert "receipt.json" not in run.files()


def test_unreachable_remote_lane_is_an_availability_miss_only(
    gate: Gate, billing_repo: BillingRepo, pki: TestPKI
) -> None:
    run = gate.check(
        billing_repo, "prorate_refactor.patch", *_remote_flags(pki),
        remote_executor="127.0.0.1:1",
    )  # fmt: skip
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert (r["posture"], r["admit"], r["rejection_codes"]) == ("human_review", True, [])
    remote = [t for t in r["transport"] if t["lane"] == "remote"]
    assert remote
    assert {t["kind"] for t in remote} == {"unavailable"}
    assert all(t["lane"] == "remote" for t in r["transport"])
    assert "freeze_proposal.json" not in run.files()
    assert "fail" not in r["lanes"]["remote"]["status_by_id"].values()


def test_remote_server_from_another_ca_is_not_trusted(
    gate: Gate, billing_repo: BillingRepo, remote_executor: ExecutorProc, pki: TestPKI,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The pinned CA is the only one: a server cert of another CA is an availability miss."""
    other = tmp_path / "other-ca"
    make_ca(other)
    client = issue(other, "client")
    flags = ("--remote-tls-ca", str(other / "ca.crt"), "--remote-tls-cert", str(client.cert),
             "--remote-tls-key", str(client.key))  # fmt: skip
    run = gate.check(
        billing_repo, "prorate_refactor.patch", *flags, remote_executor=remote_executor.address
    )
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert r["posture"] == "human_review"
    assert {t["lane"] for t in r["transport"]} == {"remote"}
    assert r["lanes"]["remote"]["results"]
    assert all(x["executor_keyid"] == "" for x in r["lanes"]["remote"]["results"])
