"""The operator keys the daemon holds: the first signs (active), all are published.

Loading goes through ``patchgate.keys.load_signer`` (mode check, PKCS8, Ed25519), so a private key
only ever lives inside a ``patchgate.keys.Signer``. Several keys allow rotation: a new key becomes
the active one, the old ones stay in the published keyring so envelopes they signed still verify.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchgate.digest import Manifest
from patchgate.envelope import Envelope, fixture_statement, sign_envelope
from patchgate.errors import KeyFileError
from patchgate.keys import KeyEntry, Signer, load_signer
from signerd.errors import ConfigError

__all__ = ["KeyStore", "PublishedKey"]


@dataclass(frozen=True)
class PublishedKey:
    """One public keyring entry and whether it signs new envelopes."""

    entry: KeyEntry
    active: bool


class KeyStore:
    """Holds ``Signer`` objects (never key bytes); signs fixture statements with the active one."""

    __slots__ = ("_signers",)

    def __init__(self, signers: Sequence[Signer]) -> None:
        if not signers:
            raise ConfigError("no signing key given")
        ids: set[str] = set()
        for s in signers:
            if s.role != "operator":
                raise ConfigError(
                    f"key {s.keyid[:16]}: role {s.role!r}; the signer holds operator keys"
                )
            if s.keyid in ids:
                raise ConfigError(f"key {s.keyid[:16]} is given twice")
            ids.add(s.keyid)
        self._signers = tuple(signers)

    @classmethod
    def load(cls, paths: Sequence[Path], passphrase: bytes | None = None) -> KeyStore:
        """Load every key file (mode 0600, Ed25519, PKCS8 PEM); the first becomes the active key."""
        signers = []
        for path in paths:
            try:
                signers.append(load_signer(Path(path), "operator", passphrase))
            except KeyFileError as exc:
                raise ConfigError(str(exc)) from None
            except OSError as exc:
                raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
        return cls(signers)

    @property
    def active_keyid(self) -> str:
        """Key id of the key that signs new envelopes."""
        return self._signers[0].keyid

    def published(self) -> list[PublishedKey]:
        """Every loaded key's public entry, the active one first."""
        return [PublishedKey(s.keyring_entry(), i == 0) for i, s in enumerate(self._signers)]

    def sign_fixture(self, manifest: Manifest, issued_at: str, digest: str) -> Envelope:
        """A DSSE envelope over the fixture statement of ``manifest`` (whose canonical digest is
        ``digest``), by the active key."""
        signer = self._signers[0]
        return sign_envelope(fixture_statement(manifest, signer, issued_at, digest), signer)

    def __repr__(self) -> str:
        return f"KeyStore(keyids={[s.keyid[:16] for s in self._signers]!r})"
