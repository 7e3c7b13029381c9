"""Refusals before any container starts: each is FAILED_PRECONDITION and creates no container."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path

import grpc
import pytest

from patchgate.envelope import Envelope, Sig, fixture_statement, sign_envelope
from patchgate.errors import RefusedError
from patchgate.executor_client import ExecutorClient
from patchgate.keys import Keyring
from patchgate.ledgers import now_utc
from patchgate.request import ExecuteRequest
from patchgate.v1 import executor_pb2, executor_pb2_grpc
from tests.integration.fixtures_executor import (
    ExecutorProc,
    billing_case,
    containers_created_since,
    prop,
    start_executor,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]


def _refused(
    daemon: ExecutorProc, case, envelope: Envelope | None = None, properties=None
) -> RefusedError:
    t0 = time.time() - 0.5
    with ExecutorClient(daemon.address) as client, pytest.raises(RefusedError) as info:
        client.execute(
            ExecuteRequest(
                envelope=envelope or case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=properties or case.properties,
            )
        )
    time.sleep(0.5)
    assert containers_created_since(t0, daemon.instance) == []
    return info.value


def test_tampered_fixture_blob_is_refused(executor_daemon, operator_key, tmp_path):
    """A stored fixture blob whose bytes changed: the recomputed digest differs; nothing runs."""
    case = billing_case(tmp_path, operator_key.signer)
    with ExecutorClient(executor_daemon.address) as client:
        client.upload({e.sha256: case.workspace / p for p, e in case.manifest.files.items()})
    digest = case.manifest.files["fixtures/orders_min.json"].sha256
    blob = executor_daemon.store_dir / digest[:2] / digest
    blob.chmod(0o644)
    blob.write_bytes(blob.read_bytes().replace(b"1", b"2"))
    err = _refused(executor_daemon, case)
    assert err.code == "FAILED_PRECONDITION"
    assert "digest" in err.reason


def test_wrong_signature_is_refused(executor_daemon, operator_key, tmp_path):
    """An envelope whose signature does not verify."""
    case = billing_case(tmp_path, operator_key.signer)
    bad = dataclasses.replace(
        case.envelope, signatures=(Sig(case.envelope.signatures[0].keyid, b"\0" * 64),)
    )
    err = _refused(executor_daemon, case, envelope=bad)
    assert err.code == "FAILED_PRECONDITION"


def test_executor_signed_envelope_is_refused(docker_engine, operator_key, executor_key, tmp_path):
    """A valid signature by a key the keyring lists as an executor key is refused by role."""
    ring = Keyring([operator_key.signer.keyring_entry(), executor_key.signer.keyring_entry()])
    ring_path = tmp_path / "ring.json"
    ring.write(ring_path)
    daemon = start_executor(tmp_path, ring_path)
    try:
        case = billing_case(tmp_path, operator_key.signer)
        forged = sign_envelope(
            fixture_statement(case.manifest, executor_key.signer, now_utc()), executor_key.signer
        )
        err = _refused(daemon, case, envelope=forged)
    finally:
        daemon.stop()
    assert err.code == "FAILED_PRECONDITION"
    assert "not an operator key" in err.reason


def test_disallowed_command_is_refused(executor_daemon, operator_key, tmp_path):
    """A property command not prefixed by a signed allowed command."""
    case = billing_case(tmp_path, operator_key.signer)
    shell = (prop("escape", "x", command=("python", "-c", "import os; os.system('id')")),)
    err = _refused(executor_daemon, case, properties=shell)
    assert err.code == "FAILED_PRECONDITION"
    assert "not allowed" in err.reason


def test_second_execution_uploads_nothing(executor_daemon, operator_key, tmp_path: Path):
    """Blobs are stored by content: the same repository again uploads zero bytes."""
    case = billing_case(tmp_path, operator_key.signer)
    t0 = time.time() - 0.5
    with ExecutorClient(executor_daemon.address) as client:
        first = client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
                runs=1,
            )
        )
        second = client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
                runs=1,
            )
        )
    assert first.uploaded_bytes > 0
    assert second.uploaded_bytes == 0
    assert [o.outcome for o in second.outcomes] == ["pass"]
    assert len(containers_created_since(t0, executor_daemon.instance)) == 2  # the probe sees runs


def test_upload_whose_bytes_do_not_match_is_invalid_argument(executor_daemon, tmp_path):
    """A blob re-hashed on arrival that does not match its name: INVALID_ARGUMENT, not stored."""
    claimed = hashlib.sha256(b"the real bytes").hexdigest()
    chunk = executor_pb2.BlobChunk(digest=claimed, size=10, offset=0, data=b"evil bytes")
    with grpc.insecure_channel(executor_daemon.address) as ch:
        stub = executor_pb2_grpc.ExecutorStub(ch)
        with pytest.raises(grpc.RpcError) as info:
            stub.UploadBlobs(iter([chunk]), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        missing = stub.FindMissingBlobs(executor_pb2.FindMissingBlobsRequest(digests=[claimed]))
    assert list(missing.missing) == [claimed]
