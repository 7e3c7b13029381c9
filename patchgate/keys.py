"""Ed25519 keys: key ids, PKCS8 PEM at rest, the one ``Signer`` that holds a private key, keyrings.

A key id is the sha256 hex of the raw 32-byte public key (docs/signer.md). A keyring maps key id
→ role and is the only source of a key's role; an envelope's ``keyid`` is a hint, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from patchgate.atomicfile import atomic_write_json
from patchgate.errors import KeyFileError, KeyringError

__all__ = [
    "ROLES",
    "KeyEntry",
    "Keyring",
    "Signer",
    "check_private_mode",
    "generate_key_file",
    "keyid_of",
    "load_public_pem",
    "load_signer",
]

ROLES = ("operator", "executor")


def keyid_of(public_key: Ed25519PublicKey) -> str:
    """sha256 hex of the raw 32-byte public key."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def _public_pem(public_key: Ed25519PublicKey) -> str:
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def load_public_pem(pem: str) -> Ed25519PublicKey:
    """Parse an Ed25519 public key from SubjectPublicKeyInfo PEM."""
    try:
        key = serialization.load_pem_public_key(pem.encode("ascii"))
    except (ValueError, UnsupportedAlgorithm, UnicodeEncodeError) as exc:
        raise KeyringError(f"not a PEM public key: {exc}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyringError("public key is not Ed25519")
    return key


class Signer:
    """Holds one Ed25519 private key in a private attribute; signs bytes, never reveals the key."""

    __slots__ = ("__key", "keyid", "public_key", "role")

    def __init__(self, private_key: Ed25519PrivateKey, role: str) -> None:
        if role not in ROLES:
            raise KeyFileError(f"unknown role {role!r}")
        self.__key = private_key
        self.public_key = private_key.public_key()
        self.keyid = keyid_of(self.public_key)
        self.role = role

    @classmethod
    def generate(cls, role: str) -> Signer:
        """A new random key."""
        return cls(Ed25519PrivateKey.generate(), role)

    def sign(self, data: bytes) -> bytes:
        """Ed25519 signature of ``data``."""
        return self.__key.sign(data)

    def public_key_pem(self) -> str:
        """SubjectPublicKeyInfo PEM of the public key."""
        return _public_pem(self.public_key)

    def keyring_entry(self) -> KeyEntry:
        """This key's public keyring entry."""
        return KeyEntry(keyid=self.keyid, role=self.role, public_key=self.public_key)

    def write_private_pem(self, path: Path, passphrase: bytes | None = None) -> None:
        """Write PKCS8 PEM with mode 0600, created exclusively (never overwrites a key)."""
        algorithm: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(passphrase)
            if passphrase
            else serialization.NoEncryption()
        )
        pem = self.__key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, algorithm
        )
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise KeyFileError(f"{path}: already exists; refusing to overwrite a key") from None
        except OSError as exc:
            raise KeyFileError(f"{path}: cannot create: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
            fh.flush()
            os.fsync(fh.fileno())

    def __repr__(self) -> str:
        return f"Signer(keyid={self.keyid!r}, role={self.role!r})"

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a Signer cannot be pickled or copied")


def check_private_mode(path: Path) -> None:
    """Refuse a private key file that group or others may read or write."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise KeyFileError(f"{path}: not a regular file")
    if st.st_mode & 0o077:
        raise KeyFileError(
            f"{path}: mode {stat.S_IMODE(st.st_mode):04o} lets group or others access the key; "
            f"run: chmod 600 {path}"
        )


def load_signer(path: Path, role: str, passphrase: bytes | None = None) -> Signer:
    """Load a PKCS8 PEM Ed25519 private key after checking its file mode."""
    check_private_mode(path)
    data = Path(path).read_bytes()
    try:
        key = serialization.load_pem_private_key(data, password=passphrase)
    except TypeError:
        raise KeyFileError(
            f"{path}: key is encrypted and no passphrase was given"
            if passphrase is None
            else f"{path}: key is not encrypted but a passphrase was given"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        # the library's message may quote input; say only what is wrong
        raise KeyFileError(f"{path}: not a PKCS8 PEM private key, or wrong passphrase") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path}: not an Ed25519 key")
    return Signer(key, role)


def generate_key_file(out: Path, role: str, passphrase: bytes | None = None) -> Signer:
    """Create a new key at ``out`` (0600) and its public keyring at ``out.pub``."""
    signer = Signer.generate(role)
    pub = Path(str(out) + ".pub")
    if pub.exists():
        raise KeyFileError(f"{pub}: already exists; refusing to overwrite")
    signer.write_private_pem(Path(out), passphrase)
    Keyring([signer.keyring_entry()]).write(pub)
    return signer


@dataclass(frozen=True)
class KeyEntry:
    """One public key with its role."""

    keyid: str
    role: str
    public_key: Ed25519PublicKey

    def verify(self, signature: bytes, data: bytes) -> bool:
        """True when ``signature`` over ``data`` is valid for this key."""
        try:
            self.public_key.verify(signature, data)
        except InvalidSignature:
            return False
        return True

    def to_json(self) -> dict[str, str]:
        """The keyring-file form (docs/signer.md)."""
        return {
            "keyid": self.keyid,
            "role": self.role,
            "public_key_pem": _public_pem(self.public_key),
        }


class Keyring:
    """Public keys by key id, each with a role. The role comes from here, never from an envelope."""

    def __init__(self, entries: Iterable[KeyEntry] = ()) -> None:
        self._entries: dict[str, KeyEntry] = {}
        for e in entries:
            self.add(e)

    def add(self, entry: KeyEntry) -> None:
        """Add one key; its id must match its public key and its role be known."""
        if entry.role not in ROLES:
            raise KeyringError(f"key {entry.keyid[:16]}: unknown role {entry.role!r}")
        if keyid_of(entry.public_key) != entry.keyid:
            raise KeyringError(f"key {entry.keyid[:16]}: keyid does not match its public key")
        old = self._entries.get(entry.keyid)
        if old is not None and old.role != entry.role:
            raise KeyringError(f"key {entry.keyid[:16]}: listed with two roles")
        self._entries[entry.keyid] = entry

    def __iter__(self) -> Iterator[KeyEntry]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, keyid: str) -> KeyEntry | None:
        """The entry for ``keyid``, if any."""
        return self._entries.get(keyid)

    def with_role(self, role: str) -> list[KeyEntry]:
        """Every key holding ``role``."""
        return [e for e in self._entries.values() if e.role == role]

    def to_json(self) -> dict[str, list[dict[str, str]]]:
        """The keyring file object (docs/signer.md)."""
        return {"keys": [e.to_json() for e in self._entries.values()]}

    @classmethod
    def from_json(cls, obj: object, source: str = "keyring") -> Keyring:
        """Parse the keyring file object; every problem is a KeyringError naming ``source``."""
        if not isinstance(obj, dict) or not isinstance(obj.get("keys"), list):
            raise KeyringError(f"{source}: expected an object with a 'keys' list")
        ring = cls()
        for i, item in enumerate(obj["keys"]):
            if not isinstance(item, dict):
                raise KeyringError(f"{source}: keys[{i}]: expected an object")
            keyid, role, pem = item.get("keyid"), item.get("role"), item.get("public_key_pem")
            if not (isinstance(keyid, str) and isinstance(role, str) and isinstance(pem, str)):
                raise KeyringError(
                    f"{source}: keys[{i}]: keyid, role and public_key_pem are strings"
                )
            try:
                ring.add(KeyEntry(keyid=keyid, role=role, public_key=load_public_pem(pem)))
            except KeyringError as exc:
                raise KeyringError(f"{source}: keys[{i}]: {exc}") from None
        return ring

    @classmethod
    def load(cls, path: Path) -> Keyring:
        """Read a keyring file."""
        try:
            obj = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise KeyringError(f"{path}: cannot read: {exc.strerror}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise KeyringError(f"{path}: not JSON: {exc}") from None
        return cls.from_json(obj, str(path))

    def write(self, path: Path) -> None:
        """Write the keyring file atomically (it is public: mode 0644)."""
        atomic_write_json(Path(path), self.to_json(), mode=0o644)
