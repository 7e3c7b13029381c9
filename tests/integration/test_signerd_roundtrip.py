"""Signer round trips over a real unix socket: sign, verify independently, keyring, rotation."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from patchgate.digest import FileEntry, Manifest
from patchgate.envelope import verify_fixture_envelope
from patchgate.errors import VerificationError
from patchgate.keys import Keyring
from patchgate.signer_client import SignerClient
from tests.conftest import make_key
from tests.integration.fixtures_signer import SignerDaemon, run_signerd, start_signer

pytestmark = pytest.mark.integration

VECTOR = Manifest(
    pin_id="fixpin-vector",
    files={
        "fixtures/b.txt": FileEntry(hashlib.sha256(b"hello").hexdigest(), 5),
        "fixtures/a.json": FileEntry(hashlib.sha256(b'{"x": 1}\n').hexdigest(), 9),
    },
    seed=7,
    clock_bound_ms=30000,
    allowed_commands=(
        ("python", "-m", "pytest", "-q"),
        ("python", "-m", "pytest", "-q", "-k", "prorate"),
    ),
)
VECTOR_DIGEST = "6ea8f3fe7ff21bd234d472a92daa33697534e140f1426d7981174b0181b87302"


def _independent_pae(payload_type: str, payload: bytes) -> bytes:
    # written from the DSSE spec, not imported from patchgate
    t = payload_type.encode()
    return (
        b"DSSEv1 "
        + str(len(t)).encode()
        + b" "
        + t
        + b" "
        + str(len(payload)).encode()
        + b" "
        + payload
    )


def test_signed_envelope_verifies_with_only_cryptography_and_pae(
    signer_daemon: SignerDaemon,
) -> None:
    """The envelope verifies with the keyring's raw public key and a hand-written PAE."""
    with SignerClient(signer_daemon.address) as client:
        envelope, digest = client.sign_fixture_digest(VECTOR)
    assert digest == VECTOR_DIGEST
    doc = json.loads(json.dumps(envelope.to_json()))
    ring = json.loads(signer_daemon.keyring_path.read_text())["keys"]
    pub = serialization.load_pem_public_key(ring[0]["public_key_pem"].encode())
    assert isinstance(pub, Ed25519PublicKey)
    raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert hashlib.sha256(raw).hexdigest() == ring[0]["keyid"]
    payload = base64.b64decode(doc["payload"])
    pub.verify(
        base64.b64decode(doc["signatures"][0]["sig"]),
        _independent_pae(doc["payloadType"], payload),
    )  # raises InvalidSignature on failure
    statement = json.loads(payload)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["subject"] == [{"name": "fixpin-vector", "digest": {"sha256": VECTOR_DIGEST}}]
    assert statement["predicate"]["signer"] == {"keyid": ring[0]["keyid"], "role": "operator"}


def test_sign_and_verify_returns_the_statement(signer_daemon: SignerDaemon) -> None:
    """SignerClient.sign_and_verify checks the envelope against the operator keyring."""
    ring = Keyring.load(signer_daemon.keyring_path)
    with SignerClient(signer_daemon.address) as client:
        _, statement = client.sign_and_verify(VECTOR, ring)
    assert statement.digest == VECTOR_DIGEST
    assert statement.manifest.to_json() == VECTOR.to_json()


def test_sign_and_verify_refuses_a_key_that_is_not_in_the_operator_keyring(
    signer_daemon: SignerDaemon, tmp_path: Path
) -> None:
    """An envelope by a key the caller does not list as operator is a VerificationError."""
    other = make_key(tmp_path / "other", "operator")
    with SignerClient(signer_daemon.address) as client, pytest.raises(VerificationError):
        client.sign_and_verify(VECTOR, Keyring.load(other.keyring_path))


def test_get_keyring_publishes_the_public_key_only(signer_daemon: SignerDaemon) -> None:
    """GetKeyring equals the keygen keyring file and carries no private material."""
    with SignerClient(signer_daemon.address) as client:
        ring = client.get_keyring()
    assert ring.to_json() == Keyring.load(signer_daemon.keyring_path).to_json()
    assert "PRIVATE" not in json.dumps(ring.to_json())


def test_rotation_publishes_all_keys_and_signs_with_the_first(tmp_path: Path) -> None:
    """With two --key flags the first signs and both are published; old envelopes still verify."""
    old = make_key(tmp_path / "old", "operator")
    new = make_key(tmp_path / "new", "operator")
    d1 = start_signer([old.key_path], workdir=tmp_path)
    try:
        with SignerClient(d1.address) as c:
            old_env, _ = c.sign_fixture_digest(VECTOR)
    finally:
        assert d1.stop() == 0
    d2 = start_signer([new.key_path, old.key_path], workdir=tmp_path)
    try:
        with SignerClient(d2.address) as c:
            ring = c.get_keyring()
            new_env, _ = c.sign_fixture_digest(VECTOR)
    finally:
        assert d2.stop() == 0
        shutil.rmtree(d1.socket_dir, ignore_errors=True)
        shutil.rmtree(d2.socket_dir, ignore_errors=True)
    assert {e.keyid for e in ring} == {old.signer.keyid, new.signer.keyid}
    assert verify_fixture_envelope(new_env, ring).keyid == new.signer.keyid
    assert verify_fixture_envelope(old_env, ring).keyid == old.signer.keyid


def test_keygen_prints_the_key_id_and_writes_a_0600_key(tmp_path: Path) -> None:
    """keygen: key id on stdout, key 0600, FILE.pub an operator keyring with that id."""
    out = tmp_path / "op.key"
    res = run_signerd("keygen", "--out", str(out))
    assert res.returncode == 0, res.stderr
    keyid = res.stdout.strip()
    assert out.stat().st_mode & 0o777 == 0o600
    ring = Keyring.load(Path(f"{out}.pub"))
    assert [(e.keyid, e.role) for e in ring] == [(keyid, "operator")]


def test_encrypted_key_serves_with_its_passphrase_file(tmp_path: Path) -> None:
    """keygen --passphrase-file then serve --passphrase-file signs; without it, serve refuses."""
    pw = tmp_path / "pw"
    pw.write_text("correct horse\n")
    pw.chmod(0o600)
    key = tmp_path / "enc.key"
    assert run_signerd("keygen", "--out", str(key), "--passphrase-file", str(pw)).returncode == 0
    assert b"ENCRYPTED" in key.read_bytes()
    refused = run_signerd("serve", "--key", str(key), "--listen", f"unix:{tmp_path}/x.sock")
    assert refused.returncode == 1
    assert "encrypted" in refused.stderr
    daemon = start_signer([key], workdir=tmp_path, extra_args=["--passphrase-file", str(pw)])
    try:
        with SignerClient(daemon.address) as c:
            _, st = c.sign_and_verify(VECTOR, Keyring.load(Path(f"{key}.pub")))
        assert st.digest == VECTOR_DIGEST
    finally:
        assert daemon.stop() == 0
        shutil.rmtree(daemon.socket_dir, ignore_errors=True)


def test_logs_are_json_lines_without_key_material(signer_daemon: SignerDaemon) -> None:
    """The daemon's stderr is JSON lines with per-RPC context and never the private key."""
    with SignerClient(signer_daemon.address) as client:
        client.sign_fixture_digest(VECTOR)
    key_path = Path(str(signer_daemon.keyring_path).removesuffix(".pub"))
    secret_lines = key_path.read_text().splitlines()[1:-1]
    assert signer_daemon.stop() == 0
    log = signer_daemon.stderr()
    records = [json.loads(line) for line in log.splitlines()]
    decided = [r for r in records if r["event"] == "decided"]
    assert decided[0]["rpc"] == "/patchgate.v1.Signer/SignFixtureDigest"
    assert decided[0]["rpc_id"]
    assert all(s not in log for s in secret_lines)
