"""The signer refuses non-canonical manifests (each audited) and refuses to start when unsafe."""

from __future__ import annotations

import json
import os
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from patchgate.digest import FileEntry, Manifest
from patchgate.errors import RefusedError
from patchgate.signer_client import SignerClient
from patchgate.v1 import common_pb2, signer_pb2, signer_pb2_grpc
from tests.conftest import KeyPair
from tests.integration.fixtures_signer import SignerDaemon, run_signerd

pytestmark = pytest.mark.integration

H = "a" * 64


def _good() -> common_pb2.FixtureManifest:
    return common_pb2.FixtureManifest(
        pin_id="fixpin-a",
        algorithm="sha256",
        files=[common_pb2.FixtureEntry(path="fixtures/a.json", sha256=H, size=9)],
        seed=7,
        clock_bound_ms=30000,
        allowed_commands=[common_pb2.Command(argv=["python", "-m", "pytest", "-q"])],
    )


def _with(**changes: object) -> common_pb2.FixtureManifest:
    m = _good()
    for field, value in changes.items():
        if field in ("files", "allowed_commands"):
            m.ClearField(field)
            getattr(m, field).extend(value)  # type: ignore[attr-defined]
        else:
            setattr(m, field, value)
    return m


def _file(path: str = "fixtures/a.json", sha: str = H, size: int = 1) -> common_pb2.FixtureEntry:
    return common_pb2.FixtureEntry(path=path, sha256=sha, size=size)


def _cmd(*argv: str) -> common_pb2.Command:
    return common_pb2.Command(argv=list(argv))


NON_CANONICAL = {
    "absolute path": _with(files=[_file("/etc/passwd")]),
    "dot-dot segment": _with(files=[_file("fixtures/../x")]),
    "empty segment": _with(files=[_file("fixtures//x")]),
    "backslash": _with(files=[_file("fixtures\\x")]),
    "newline in path": _with(files=[_file("fixtures/a\nfile b 1 c")]),
    "duplicate path": _with(files=[_file(), _file()]),
    "uppercase hex": _with(files=[_file(sha="A" * 64)]),
    "short hash": _with(files=[_file(sha="a" * 63)]),
    "wrong algorithm": _with(algorithm="sha1"),
    "empty pin id": _with(pin_id=""),
    "negative seed": _with(seed=-1),
    "seed too large": _with(seed=1 << 40),
    "zero clock bound": _with(clock_bound_ms=0),
    "no commands": _with(allowed_commands=[]),
    "empty argv": _with(allowed_commands=[_cmd()]),
    "duplicate command": _with(allowed_commands=[_cmd("python"), _cmd("python")]),
    "argv too long": _with(allowed_commands=[_cmd("python", *["x"] * 300)]),
    "too many files": _with(files=[_file(f"f/{i}") for i in range(10_001)]),
}


def _audit(daemon: SignerDaemon) -> list[dict[str, object]]:
    return [json.loads(x) for x in daemon.audit_log.read_text().splitlines()]


@pytest.mark.parametrize("shape", sorted(NON_CANONICAL))
def test_non_canonical_manifest_is_refused_and_audited(
    signer_daemon: SignerDaemon, shape: str
) -> None:
    """INVALID_ARGUMENT with a reason, nothing signed, one 'denied' audit line with that reason."""
    with grpc.insecure_channel(signer_daemon.address) as ch:
        stub = signer_pb2_grpc.SignerStub(ch)
        with pytest.raises(grpc.RpcError) as info:
            stub.SignFixtureDigest(
                signer_pb2.SignFixtureDigestRequest(manifest=NON_CANONICAL[shape]), timeout=10
            )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    lines = _audit(signer_daemon)
    assert len(lines) == 1
    assert lines[0]["decision"] == "denied"
    assert lines[0]["code"] == "INVALID_ARGUMENT"
    assert lines[0]["reason"] == info.value.details()
    assert "digest" not in lines[0]


def test_client_maps_invalid_argument_to_refused_error(signer_daemon: SignerDaemon) -> None:
    """SignerClient turns INVALID_ARGUMENT into RefusedError, never a bare RpcError."""
    bad = Manifest(
        pin_id="p",
        files={"f": FileEntry("A" * 64, 1)},
        clock_bound_ms=1,
        allowed_commands=(("x",),),
    )
    with SignerClient(signer_daemon.address) as c, pytest.raises(RefusedError) as info:
        c.sign_fixture_digest(bad)
    assert info.value.code == "INVALID_ARGUMENT"
    assert "sha256" in info.value.reason


def _serve(key: Path, tmp: Path, *extra: str) -> tuple[int, str]:
    sock_dir = tmp / "sock"
    sock_dir.mkdir(mode=0o700, exist_ok=True)
    res = run_signerd(
        "serve", "--key", str(key), "--listen", f"unix:{sock_dir}/s.sock",
        "--audit-log", str(tmp / "audit.jsonl"), *extra,
    )  # fmt: skip
    return res.returncode, res.stderr


def test_group_readable_key_refuses_to_start(operator_key: KeyPair, tmp_path: Path) -> None:
    """A key file with mode 0640 is refused with a one-line error and exit 1."""
    operator_key.key_path.chmod(0o640)
    code, err = _serve(operator_key.key_path, tmp_path)
    assert code == 1
    assert "group or others" in err
    assert len(err.strip().splitlines()) == 1


def test_non_ed25519_key_refuses_to_start(tmp_path: Path) -> None:
    """An EC P-256 PKCS8 key is refused."""
    key = tmp_path / "ec.key"
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    key.write_bytes(pem)
    key.chmod(0o600)
    code, err = _serve(key, tmp_path)
    assert code == 1
    assert "not an Ed25519 key" in err


def test_unwritable_audit_log_refuses_to_start(operator_key: KeyPair, tmp_path: Path) -> None:
    """An audit log in a missing directory stops the daemon before it listens."""
    code, err = _serve(
        operator_key.key_path, tmp_path, "--audit-log", str(tmp_path / "nope" / "audit.jsonl")
    )
    assert code == 1
    assert "audit log" in err


def test_tcp_without_tls_refuses_to_start(operator_key: KeyPair) -> None:
    """A TCP listen address without --tls-cert/--tls-key/--client-ca is refused."""
    res = run_signerd("serve", "--key", str(operator_key.key_path), "--listen", "127.0.0.1:0")
    assert res.returncode == 1
    assert "refusing TCP without TLS" in res.stderr


def test_world_accessible_socket_dir_refuses_to_start(
    operator_key: KeyPair, tmp_path: Path
) -> None:
    """Without TLS, a socket directory others may enter is refused."""
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o755)  # noqa: S103 - the unsafe mode under test
    res = run_signerd(
        "serve", "--key", str(operator_key.key_path), "--listen", f"unix:{open_dir}/s.sock",
        "--audit-log", str(tmp_path / "a.jsonl"),
    )  # fmt: skip
    assert res.returncode == 1
    assert "patchgate-clients" in res.stderr
    assert not (open_dir / "s.sock").exists()
