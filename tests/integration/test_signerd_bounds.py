"""Issue 12: the signer's refusals are bounded — a huge field costs a capped audit line, capped log
lines and capped status details; undecodable bytes are refused and audited like any other request.
Real daemon, real unix socket."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from patchgate.v1 import common_pb2, signer_pb2, signer_pb2_grpc
from tests.integration.fixtures_signer import SignerDaemon, run_signerd

pytestmark = pytest.mark.integration

METHOD = "/patchgate.v1.Signer/SignFixtureDigest"
HUGE = 3_900_000  # under the 4 MiB message limit
H = "a" * 64


def _huge_path_request() -> signer_pb2.SignFixtureDigestRequest:
    """A 3.9 MB path that is also unsafe (absolute, a '..' and a newline in it)."""
    path = "/" + "../" * 4 + "x\n" + "A" * (HUGE - 15)
    return signer_pb2.SignFixtureDigestRequest(
        manifest=common_pb2.FixtureManifest(
            pin_id="fixpin-a",
            algorithm="sha256",
            files=[common_pb2.FixtureEntry(path=path, sha256=H, size=1)],
            seed=7,
            clock_bound_ms=30000,
            allowed_commands=[common_pb2.Command(argv=["python", "-m", "pytest"])],
        )
    )


def _audit_lines(daemon: SignerDaemon) -> list[bytes]:
    return daemon.audit_log.read_bytes().splitlines()


def _sign_raw(daemon: SignerDaemon, payload: bytes) -> grpc.RpcError:
    """Send ``payload`` as the request bytes (identity serializers) and return the refusal."""
    with grpc.insecure_channel(daemon.address) as ch:
        call = ch.unary_unary(METHOD, request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as info:
            call(payload, timeout=20)
    return info.value


def test_huge_unsafe_path_is_invalid_argument_with_capped_reason(
    signer_daemon: SignerDaemon,
) -> None:
    """INVALID_ARGUMENT (not RESOURCE_EXHAUSTED); details, audit line and log lines stay small."""
    with grpc.insecure_channel(signer_daemon.address) as ch, pytest.raises(grpc.RpcError) as info:
        signer_pb2_grpc.SignerStub(ch).SignFixtureDigest(_huge_path_request(), timeout=20)
    err = info.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    details = err.details() or ""
    assert "files[0].path" in details
    assert str(HUGE) in details  # the original length is named
    assert len(details.encode()) <= 512
    (line,) = _audit_lines(signer_daemon)
    assert len(line) + 1 <= 1024
    record = json.loads(line)
    assert record["decision"] == "denied"
    assert record["code"] == "INVALID_ARGUMENT"
    assert record["reason"] == details
    log_lines = signer_daemon.stderr().splitlines()
    assert any("files[0].path" in x for x in log_lines)
    assert max(len(x.encode()) for x in log_lines) <= 2048


def test_25_huge_requests_grow_audit_and_log_by_kilobytes(signer_daemon: SignerDaemon) -> None:
    """The amplification of the issue (97.5 MB audit + 195 MB log) is now a few KiB per request."""
    request = _huge_path_request()
    log_before = len(signer_daemon.stderr().encode())
    with grpc.insecure_channel(
        signer_daemon.address, options=[("grpc.max_send_message_length", 8 << 20)]
    ) as ch:
        stub = signer_pb2_grpc.SignerStub(ch)
        for _ in range(25):
            with pytest.raises(grpc.RpcError) as info:
                stub.SignFixtureDigest(request, timeout=20)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(_audit_lines(signer_daemon)) == 25
    assert signer_daemon.audit_log.stat().st_size <= 25 * 1024
    assert len(signer_daemon.stderr().encode()) - log_before <= 25 * 4096
    assert run_signerd("audit-verify", str(signer_daemon.audit_log)).returncode == 0


@pytest.mark.parametrize(
    ("shape", "payload"),
    [
        ("bad tag", b"\xff\xff\xff\xff"),
        ("truncated field", b"\x0a\x64\x0a\x02"),  # manifest claims 100 bytes, 2 follow
        ("invalid UTF-8 in pin_id", b"\x0a\x03\x0a\x01\xff"),
        ("1 MiB of junk", b"\xff" * (1 << 20)),
    ],
)
def test_undecodable_request_is_invalid_argument_and_audited(
    signer_daemon: SignerDaemon, shape: str, payload: bytes
) -> None:
    """Bytes that are no SignFixtureDigestRequest: INVALID_ARGUMENT and one 'denied' audit line
    naming only the size; the chain still verifies and the daemon still signs afterwards."""
    err = _sign_raw(signer_daemon, payload)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (shape, err.code(), err.details())
    assert "cannot be decoded" in (err.details() or "")
    (line,) = _audit_lines(signer_daemon)
    assert len(line) + 1 <= 1024
    record = json.loads(line)
    assert (record["decision"], record["code"]) == ("denied", "INVALID_ARGUMENT")
    assert str(len(payload)) in record["reason"]
    verified = run_signerd("audit-verify", str(signer_daemon.audit_log))
    assert verified.returncode == 0, verified.stderr
    assert "ok, 1 lines" in verified.stdout


def test_undecodable_keyring_request_is_invalid_argument_and_audited(
    signer_daemon: SignerDaemon,
) -> None:
    """GetKeyring takes an empty message; junk in its place is refused and audited too."""
    with grpc.insecure_channel(signer_daemon.address) as ch:
        call = ch.unary_unary(
            "/patchgate.v1.Signer/GetKeyring", request_serializer=None, response_deserializer=None
        )
        with pytest.raises(grpc.RpcError) as info:
            call(b"\xff\xff", timeout=20)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    (line,) = _audit_lines(signer_daemon)
    assert json.loads(line)["method"] == "GetKeyring"


def test_signs_normally_after_refusals(signer_daemon: SignerDaemon, tmp_path: Path) -> None:
    """A huge refusal and a junk refusal leave the daemon signing, the chain whole."""
    _sign_raw(signer_daemon, b"\xff")
    with grpc.insecure_channel(signer_daemon.address) as ch:
        stub = signer_pb2_grpc.SignerStub(ch)
        good = _huge_path_request()
        good.manifest.files[0].path = "fixtures/a.json"
        reply = stub.SignFixtureDigest(good, timeout=20)
    assert len(reply.fixture_digest) == 64
    assert [json.loads(x)["decision"] for x in _audit_lines(signer_daemon)] == [
        "denied",
        "granted",
    ]
    assert run_signerd("audit-verify", str(signer_daemon.audit_log)).returncode == 0
