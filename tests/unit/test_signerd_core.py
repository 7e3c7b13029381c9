"""signerd.core and keystore without a server: deny by default, audit everything, fail closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from patchgate.envelope import verify_fixture_envelope
from patchgate.keys import Keyring, Signer
from signerd.canonical import RawFile, RawManifest
from signerd.core import Caller, SignerCore
from signerd.errors import (
    AuditError,
    AuditUnavailable,
    ConfigError,
    InvalidArgument,
    PermissionDenied,
    Unauthenticated,
)
from signerd.keystore import KeyStore
from tests.conftest import make_key

CLIENT = Caller("spiffe://patchgate/role/client", "client")
GOOD = RawManifest(
    pin_id="fixpin-a",
    algorithm="sha256",
    files=[RawFile("fixtures/a.json", "1" * 64, 4)],
    seed=3,
    clock_bound_ms=1000,
    allowed_commands=[["python", "-m", "pytest"]],
)


class FakeAudit:
    """Records entries; can be told to fail like a full disk."""

    def __init__(self, fail: bool = False) -> None:
        self.entries: list[dict[str, Any]] = []
        self.fail = fail

    def append(self, fields: dict[str, Any]) -> str:
        if self.fail:
            raise AuditError("disk full")
        self.entries.append(fields)
        return "0" * 64


def _core(audit: FakeAudit, *signers: Signer) -> SignerCore:
    keys = KeyStore(signers or [Signer.generate("operator")])
    return SignerCore(keys, audit, clock=lambda: "2026-01-01T00:00:00Z")


def test_client_gets_an_envelope_over_the_recomputed_digest() -> None:
    """A client's canonical manifest is signed; the statement verifies under the published key."""
    audit = FakeAudit()
    signer = Signer.generate("operator")
    result = _core(audit, signer).sign_fixture(CLIENT, GOOD)
    st = verify_fixture_envelope(result.envelope, Keyring([signer.keyring_entry()]))
    assert st.digest == result.digest
    assert st.issued_at == "2026-01-01T00:00:00Z"
    assert audit.entries[0]["decision"] == "granted"
    assert audit.entries[0]["digest"] == result.digest


@pytest.mark.parametrize("role", ["executor", "operator", "signer", "drafter"])
def test_any_role_but_client_is_denied_and_audited(role: str) -> None:
    """Deny by default: every other role gets PermissionDenied and a denied audit line."""
    audit = FakeAudit()
    core = _core(audit)
    with pytest.raises(PermissionDenied):
        core.sign_fixture(Caller(f"spiffe://patchgate/role/{role}", role), GOOD)
    with pytest.raises(PermissionDenied):
        core.keyring(Caller(f"spiffe://patchgate/role/{role}", role))
    assert [(e["decision"], e["code"], e["role"]) for e in audit.entries] == [
        ("denied", "PERMISSION_DENIED", role)
    ] * 2


def test_caller_without_a_role_is_unauthenticated() -> None:
    """No SPIFFE role → Unauthenticated, audited."""
    audit = FakeAudit()
    with pytest.raises(Unauthenticated):
        _core(audit).sign_fixture(Caller("tls:no-spiffe-id", None), GOOD)
    assert audit.entries[0]["code"] == "UNAUTHENTICATED"


def test_invalid_manifest_is_audited_with_its_reason() -> None:
    """The audit line carries the same reason the caller gets."""
    audit = FakeAudit()
    bad = RawManifest(**{**GOOD.__dict__, "seed": -5})
    with pytest.raises(InvalidArgument) as info:
        _core(audit).sign_fixture(CLIENT, bad)
    assert audit.entries[0]["reason"] == info.value.reason
    assert "digest" not in audit.entries[0]


def test_audit_failure_refuses_to_sign() -> None:
    """Fail closed: when the audit line cannot be written, no envelope is returned."""
    with pytest.raises(AuditUnavailable) as info:
        _core(FakeAudit(fail=True)).sign_fixture(CLIENT, GOOD)
    assert info.value.grpc_code == "UNAVAILABLE"


def test_rotation_signs_with_the_first_key_and_publishes_all() -> None:
    """KeyStore: first key active, all published, active flagged."""
    new, old = Signer.generate("operator"), Signer.generate("operator")
    store = KeyStore([new, old])
    assert [(p.entry.keyid, p.active) for p in store.published()] == [
        (new.keyid, True),
        (old.keyid, False),
    ]
    env = SignerCore(store, FakeAudit()).sign_fixture(CLIENT, GOOD).envelope
    assert env.signatures[0].keyid == new.keyid
    assert store.active_keyid == new.keyid


def test_keystore_refuses_executor_keys_and_duplicates() -> None:
    """Only operator keys, each once."""
    with pytest.raises(ConfigError, match="operator"):
        KeyStore([Signer.generate("executor")])
    s = Signer.generate("operator")
    with pytest.raises(ConfigError, match="twice"):
        KeyStore([s, s])
    with pytest.raises(ConfigError):
        KeyStore([])


def test_group_readable_key_file_is_a_config_error(tmp_path: Path) -> None:
    """KeyStore.load refuses a key others may read."""
    pair = make_key(tmp_path, "operator")
    pair.key_path.chmod(0o640)
    with pytest.raises(ConfigError, match="group or others"):
        KeyStore.load([pair.key_path])


def test_no_private_material_in_reprs_or_errors(tmp_path: Path) -> None:
    """Neither the store's repr nor a load error carries PEM or key bytes."""
    pair = make_key(tmp_path, "operator")
    store = KeyStore.load([pair.key_path])
    pem = pair.key_path.read_text()
    assert "PRIVATE" not in repr(store)
    assert pem.splitlines()[1] not in repr(store)
    pair.key_path.write_text(pem.replace("A", "B"))
    with pytest.raises(ConfigError) as info:
        KeyStore.load([pair.key_path])
    assert pem.splitlines()[1][:20] not in str(info.value)
