"""ExecutorClient against real sockets: transport failures are returned as records, never raised."""

from __future__ import annotations

import pytest

from patchgate.errors import TransportError
from patchgate.executor_client import ExecutorClient
from patchgate.keys import Keyring
from patchgate.pki import issue, make_ca
from patchgate.request import ExecuteRequest
from patchgate.tls import ClientTLS
from tests.integration.fixtures_executor import billing_case, prop, start_executor

pytestmark = pytest.mark.integration


def test_unreachable_executor_returns_unavailable_records(operator_key, tmp_path):
    """No daemon at the address: one `unavailable` record per (property, run), no outcome."""
    case = billing_case(
        tmp_path, operator_key.signer,
        properties=(prop("a", "properties/test_billing.py::test_prorate_non_negative"),
                    prop("b", "properties/test_billing.py::test_prorate_bounded_by_amount")),
    )  # fmt: skip
    with ExecutorClient(f"unix:{tmp_path}/nobody.sock", timeout=5) as client:
        result = client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
            )
        )
    assert result.outcomes == ()
    assert [(t.property_id, t.run_index, t.kind) for t in result.transport] == [
        ("a", 1, "unavailable"), ("a", 2, "unavailable"),
        ("b", 1, "unavailable"), ("b", 2, "unavailable"),
    ]  # fmt: skip


@pytest.mark.docker
def test_result_signed_by_another_key_is_discarded(
    executor_daemon, operator_key, executor_key, tmp_path
):
    """A result that does not verify under the expected executor keyring becomes `internal`."""
    case = billing_case(tmp_path, operator_key.signer)
    ring = Keyring([executor_key.signer.keyring_entry()])  # not the daemon's key
    with ExecutorClient(executor_daemon.address, executor_keyring=ring) as client:
        result = client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
            )
        )
    assert result.outcomes == ()
    assert {t.kind for t in result.transport} == {"internal"}
    assert result.envelope is None


@pytest.mark.docker
def test_mtls_executor_needs_a_client_certificate(docker_engine, operator_key, tmp_path):
    """mTLS: a client with a CA-issued certificate is served; a plaintext client is not."""
    certs = tmp_path / "pki"
    ca = make_ca(certs)
    server = issue(certs, "executor")
    client_cert = issue(certs, "client")
    daemon = start_executor(
        tmp_path, operator_key.keyring_path,
        "--tls-cert", str(server.cert), "--tls-key", str(server.key), "--client-ca", str(ca.cert),
    )  # fmt: skip
    try:
        tls = ClientTLS(ca_cert=ca.cert, cert=client_cert.cert, key=client_cert.key)
        with ExecutorClient(daemon.address, tls=tls) as client:
            assert client.info().executor_keyid
        with ExecutorClient(daemon.address, timeout=3) as plain, pytest.raises(TransportError):
            plain.info()
    finally:
        daemon.stop()


@pytest.mark.docker
def test_key_flag_signs_results_verifiable_with_a_pinned_keyring(
    docker_engine, operator_key, executor_key, tmp_path
):
    """--key FILE: results verify against that key's keyring (no trust on first use)."""
    daemon = start_executor(
        tmp_path, operator_key.keyring_path, "--key", str(executor_key.key_path)
    )
    try:
        case = billing_case(tmp_path, operator_key.signer)
        ring = Keyring.load(executor_key.keyring_path)
        with ExecutorClient(daemon.address, executor_keyring=ring) as client:
            assert client.info().executor_keyid == executor_key.signer.keyid
            result = client.execute(
                ExecuteRequest(
                    envelope=case.envelope,
                    workspace=case.workspace,
                    fixture_root="fixtures",
                    properties=case.properties,
                )
            )
    finally:
        daemon.stop()
    assert result.executor_keyid == executor_key.signer.keyid
    assert [o.outcome for o in result.outcomes] == ["pass", "pass"]
