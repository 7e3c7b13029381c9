"""Ed25519 keys at rest, key ids, the Signer, keyrings."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from hypothesis import given

from patchgate.errors import KeyFileError, KeyringError
from patchgate.keys import Keyring, Signer, generate_key_file, keyid_of, load_signer
from tests.strategies import json_values, junk_json_bytes


def test_keyid_is_sha256_of_raw_public_key() -> None:
    """Key id = sha256 hex of the 32 raw public key bytes."""
    s = Signer.generate("operator")
    raw = s.public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert len(raw) == 32
    assert keyid_of(s.public_key) == s.keyid == hashlib.sha256(raw).hexdigest()


def test_generate_writes_0600_key_and_keyring(tmp_path: Path) -> None:
    """generate_key_file writes a 0600 PKCS8 key and a keyring that holds its public key."""
    s = generate_key_file(tmp_path / "op.key", "operator")
    assert (os.stat(tmp_path / "op.key").st_mode & 0o777) == 0o600
    assert b"BEGIN PRIVATE KEY" in (tmp_path / "op.key").read_bytes()
    ring = Keyring.load(tmp_path / "op.key.pub")
    assert [(e.keyid, e.role) for e in ring] == [(s.keyid, "operator")]
    assert load_signer(tmp_path / "op.key", "operator").keyid == s.keyid


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644, 0o601])
def test_key_readable_by_group_or_others_refused(tmp_path: Path, mode: int) -> None:
    """A key file that group or others may access is refused, naming the fix."""
    generate_key_file(tmp_path / "k", "operator")
    os.chmod(tmp_path / "k", mode)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_signer(tmp_path / "k", "operator")


def test_encrypted_key_round_trip(tmp_path: Path) -> None:
    """A passphrase-encrypted key loads with its passphrase only."""
    s = generate_key_file(tmp_path / "k", "operator", passphrase=b"pw")
    assert b"ENCRYPTED" in (tmp_path / "k").read_bytes()
    assert load_signer(tmp_path / "k", "operator", b"pw").keyid == s.keyid
    with pytest.raises(KeyFileError, match="no passphrase"):
        load_signer(tmp_path / "k", "operator")
    with pytest.raises(KeyFileError, match="wrong passphrase"):
        load_signer(tmp_path / "k", "operator", b"nope")


def test_not_a_key_refused(tmp_path: Path) -> None:
    """Garbage in a 0600 file is a KeyFileError that does not quote the bytes."""
    p = tmp_path / "k"
    p.write_bytes(b"-----BEGIN PRIVATE KEY-----\nSECRETJUNK\n-----END PRIVATE KEY-----\n")
    os.chmod(p, 0o600)
    with pytest.raises(KeyFileError) as err:
        load_signer(p, "operator")
    assert "SECRETJUNK" not in str(err.value)


def test_generate_never_overwrites(tmp_path: Path) -> None:
    """An existing key file is never overwritten."""
    generate_key_file(tmp_path / "k", "operator")
    before = (tmp_path / "k").read_bytes()
    os.unlink(tmp_path / "k.pub")
    with pytest.raises(KeyFileError, match="already exists"):
        generate_key_file(tmp_path / "k", "operator")
    assert (tmp_path / "k").read_bytes() == before


def test_signer_does_not_reveal_key() -> None:
    """repr has no key material; a Signer cannot be pickled."""
    s = Signer.generate("operator")
    assert "PRIVATE" not in repr(s)
    assert s.keyid in repr(s)
    with pytest.raises(TypeError):
        pickle.dumps(s)


def test_unknown_role_refused() -> None:
    """A Signer's role is operator or executor."""
    with pytest.raises(KeyFileError):
        Signer.generate("admin")


def test_keyring_round_trip(tmp_path: Path) -> None:
    """write -> load keeps key ids and roles."""
    a, b = Signer.generate("operator"), Signer.generate("executor")
    Keyring([a.keyring_entry(), b.keyring_entry()]).write(tmp_path / "ring.json")
    ring = Keyring.load(tmp_path / "ring.json")
    assert {(e.keyid, e.role) for e in ring} == {(a.keyid, "operator"), (b.keyid, "executor")}
    assert [e.keyid for e in ring.with_role("executor")] == [b.keyid]


def test_keyring_keyid_must_match_key() -> None:
    """A keyring entry whose keyid is not its key's id is refused."""
    a = Signer.generate("operator")
    entry = a.keyring_entry().to_json()
    entry["keyid"] = "0" * 64
    with pytest.raises(KeyringError, match="does not match"):
        Keyring.from_json({"keys": [entry]})


def test_keyring_one_key_two_roles_refused() -> None:
    """The same key listed as operator and executor is refused."""
    a = Signer.generate("operator")
    entry = a.keyring_entry().to_json()
    with pytest.raises(KeyringError, match="two roles"):
        Keyring.from_json({"keys": [entry, {**entry, "role": "executor"}]})


@given(json_values)
def test_keyring_junk_raises_keyring_error(obj: object) -> None:
    """Keyring.from_json on any JSON value: a Keyring or KeyringError."""
    with contextlib.suppress(KeyringError):
        Keyring.from_json(obj)


@given(junk_json_bytes)
def test_keyring_file_junk_raises_keyring_error(
    tmp_path_factory: pytest.TempPathFactory, raw: bytes
) -> None:
    """A junk keyring file is a KeyringError."""
    p = tmp_path_factory.mktemp("ring") / "ring.json"
    p.write_bytes(raw)
    with contextlib.suppress(KeyringError):
        Keyring.load(p)


def test_keyring_bad_pem_refused() -> None:
    """A public_key_pem that is not a PEM key is a KeyringError."""
    with pytest.raises(KeyringError):
        Keyring.from_json({"keys": [{"keyid": "a", "role": "operator", "public_key_pem": "x"}]})
    assert json.dumps(Keyring().to_json()) == '{"keys": []}'
