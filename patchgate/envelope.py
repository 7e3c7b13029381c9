"""DSSE envelopes signed with Ed25519, carrying in-toto Statement v1 payloads (docs/signer.md).

Verification checks a signature before anything parses the payload, and takes the signer's role
from the verifier's own keyring, never from the envelope's ``keyid`` hint.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from patchgate.digest import SHA256_HEX, FileEntry, Manifest, fixture_digest
from patchgate.errors import EnvelopeError, UnsafePathError, VerificationError
from patchgate.keys import Keyring, Signer
from patchgate.v1 import common_pb2

__all__ = [
    "FIXTURE_PREDICATE_TYPE",
    "PAYLOAD_TYPE",
    "STATEMENT_TYPE",
    "TEST_RESULT_PREDICATE_TYPE",
    "Envelope",
    "FixtureStatement",
    "Sig",
    "Verified",
    "build_statement",
    "fixture_statement",
    "pae",
    "parse_fixture_statement",
    "parse_statement",
    "sign_envelope",
    "verify_envelope",
    "verify_fixture_envelope",
]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
FIXTURE_PREDICATE_TYPE = "https://patchgate.dev/fixture-digest/v1"
TEST_RESULT_PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
MAX_PAYLOAD_BYTES = 8 << 20


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: lengths are byte lengths of the UTF-8 type and body."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


@dataclass(frozen=True)
class Sig:
    """One DSSE signature; ``keyid`` is only a hint."""

    keyid: str
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    """A DSSE envelope."""

    payload: bytes
    payload_type: str
    signatures: tuple[Sig, ...]

    def to_json(self) -> dict[str, Any]:
        """The standard DSSE JSON form (base64 payload and signatures)."""
        return {
            "payload": base64.b64encode(self.payload).decode("ascii"),
            "payloadType": self.payload_type,
            "signatures": [
                {"keyid": s.keyid, "sig": base64.b64encode(s.sig).decode("ascii")}
                for s in self.signatures
            ],
        }

    @classmethod
    def from_json(cls, obj: object) -> Envelope:
        """Parse the DSSE JSON form; every problem is an EnvelopeError."""
        if not isinstance(obj, dict):
            raise EnvelopeError("envelope: expected a JSON object")
        payload, ptype, sigs = obj.get("payload"), obj.get("payloadType"), obj.get("signatures")
        if not isinstance(payload, str) or not isinstance(ptype, str) or not isinstance(sigs, list):
            raise EnvelopeError("envelope: payload, payloadType and signatures are required")
        parsed = []
        for i, s in enumerate(sigs):
            if not isinstance(s, dict) or not isinstance(s.get("sig"), str):
                raise EnvelopeError(f"envelope: signatures[{i}]: expected an object with 'sig'")
            keyid = s.get("keyid", "")
            if not isinstance(keyid, str):
                raise EnvelopeError(f"envelope: signatures[{i}].keyid: expected a string")
            parsed.append(Sig(keyid=keyid, sig=_b64(s["sig"], f"signatures[{i}].sig")))
        return cls(payload=_b64(payload, "payload"), payload_type=ptype, signatures=tuple(parsed))

    def to_proto(self) -> common_pb2.Envelope:
        """The wire form."""
        return common_pb2.Envelope(
            payload=self.payload,
            payload_type=self.payload_type,
            signatures=[common_pb2.Signature(keyid=s.keyid, sig=s.sig) for s in self.signatures],
        )

    @classmethod
    def from_proto(cls, msg: common_pb2.Envelope) -> Envelope:
        """From the wire form."""
        return cls(
            payload=bytes(msg.payload),
            payload_type=msg.payload_type,
            signatures=tuple(Sig(keyid=s.keyid, sig=bytes(s.sig)) for s in msg.signatures),
        )


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise EnvelopeError(f"envelope: {what}: not valid base64") from None


def sign_envelope(payload: bytes, signer: Signer, payload_type: str = PAYLOAD_TYPE) -> Envelope:
    """Sign the PAE of ``payload`` with ``signer``."""
    sig = signer.sign(pae(payload_type, payload))
    return Envelope(
        payload=payload, payload_type=payload_type, signatures=(Sig(signer.keyid, sig),)
    )


@dataclass(frozen=True)
class Verified:
    """A payload whose signature verified, and the key (from the keyring) that made it."""

    payload: bytes
    keyid: str
    role: str


def verify_envelope(envelope: Envelope, keyring: Keyring, role: str) -> Verified:
    """Return the payload if one signature verifies under a keyring key holding ``role``.

    Every keyring key is tried for every signature (the ``keyid`` hint only orders the attempts), so
    a signature's role is whatever the keyring says of the key that verifies it. A valid signature
    by a key of another role is refused with a message that says so.
    """
    if envelope.payload_type != PAYLOAD_TYPE:
        raise VerificationError(f"unexpected payloadType {envelope.payload_type!r}")
    if len(envelope.payload) > MAX_PAYLOAD_BYTES:
        raise VerificationError("payload too large")
    if not envelope.signatures:
        raise VerificationError("envelope carries no signature")
    message = pae(envelope.payload_type, envelope.payload)
    wrong_role: list[str] = []
    for s in envelope.signatures:
        keys = sorted(keyring, key=lambda e: e.keyid != s.keyid)
        for entry in keys:
            if entry.verify(s.sig, message):
                if entry.role == role:
                    return Verified(payload=envelope.payload, keyid=entry.keyid, role=entry.role)
                wrong_role.append(f"{entry.keyid[:16]} ({entry.role})")
    if wrong_role:
        raise VerificationError(
            f"signed by a key that is not an {role} key in the keyring: {', '.join(wrong_role)}"
        )
    raise VerificationError(f"no signature verifies under any {role} key of the keyring")


def build_statement(
    subject_name: str, sha256: str, predicate_type: str, predicate: dict[str, Any]
) -> bytes:
    """An in-toto Statement v1 as compact, key-sorted JSON bytes."""
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject_name, "digest": {"sha256": sha256}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    }
    return json.dumps(statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def parse_statement(payload: bytes, predicate_type: str) -> dict[str, Any]:
    """Parse an in-toto Statement v1 of the expected predicate type (call only after verifying)."""
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise EnvelopeError(f"statement: not UTF-8 JSON: {exc}") from None
    if not isinstance(obj, dict) or obj.get("_type") != STATEMENT_TYPE:
        raise EnvelopeError("statement: not an in-toto Statement v1")
    if obj.get("predicateType") != predicate_type:
        raise EnvelopeError(f"statement: predicateType is {obj.get('predicateType')!r}")
    subject = obj.get("subject")
    if not isinstance(subject, list) or len(subject) != 1 or not isinstance(subject[0], dict):
        raise EnvelopeError("statement: expected exactly one subject")
    if not isinstance(obj.get("predicate"), dict):
        raise EnvelopeError("statement: predicate must be an object")
    return obj


@dataclass(frozen=True)
class FixtureStatement:
    """A verified fixture statement: the manifest, its digest, who signed it and when."""

    manifest: Manifest
    digest: str
    keyid: str
    role: str
    issued_at: str


def fixture_statement(
    manifest: Manifest, signer: Signer, issued_at: str, digest: str | None = None
) -> bytes:
    """The fixture statement (docs/signer.md) for ``manifest`` (subject: pin id and digest v1).

    ``digest``, when given, must be ``manifest.digest()`` already computed by the caller (the
    signer replies with it too); a wrong one makes a statement every verifier refuses.
    """
    predicate = {
        "manifest": manifest.to_json(),
        "signer": {"keyid": signer.keyid, "role": signer.role},
        "issuedAt": issued_at,
    }
    if manifest.environment_digest is not None:
        predicate["environment_digest"] = manifest.environment_digest
    subject_digest = fixture_digest(manifest) if digest is None else digest
    return build_statement(manifest.pin_id, subject_digest, FIXTURE_PREDICATE_TYPE, predicate)


def parse_fixture_statement(payload: bytes) -> tuple[Manifest, str, str]:
    """Manifest, subject digest and issuedAt of a fixture statement; the digest must recompute."""
    obj = parse_statement(payload, FIXTURE_PREDICATE_TYPE)
    subject = obj["subject"][0]
    digest = (
        subject.get("digest", {}).get("sha256") if isinstance(subject.get("digest"), dict) else None
    )
    pred = obj["predicate"]
    m = pred.get("manifest")
    if not isinstance(m, dict):
        raise EnvelopeError("statement: predicate.manifest must be an object")
    try:
        files = {
            str(p): FileEntry(sha256=str(e["sha256"]), size=int(e["size"]))
            for p, e in dict(m["files"]).items()
        }
        manifest = Manifest(
            pin_id=str(m["pin_id"]),
            algorithm=str(m["algorithm"]),
            files=files,
            seed=int(m["seed"]),
            clock_bound_ms=int(m["clock_bound_ms"]),
            allowed_commands=tuple(tuple(str(a) for a in c) for c in m["allowed_commands"]),
            environment_digest=_environment_digest(pred),
        )
        recomputed = fixture_digest(manifest)
    except (KeyError, TypeError, ValueError, UnsafePathError) as exc:
        raise EnvelopeError(f"statement: malformed manifest: {exc}") from None
    if subject.get("name") != manifest.pin_id or digest != recomputed:
        raise EnvelopeError("statement: subject does not match the manifest's pin id and digest")
    issued = pred.get("issuedAt", "")
    return manifest, recomputed, issued if isinstance(issued, str) else ""


def _environment_digest(predicate: dict[str, Any]) -> str | None:
    """``predicate.environment_digest``: absent (no environment configured) or 64 lowercase hex."""
    if "environment_digest" not in predicate:
        return None
    value = predicate["environment_digest"]
    if not isinstance(value, str) or not SHA256_HEX.fullmatch(value):
        raise EnvelopeError("statement: predicate.environment_digest is not 64 lowercase hex")
    return value


def verify_fixture_envelope(envelope: Envelope, operator_keyring: Keyring) -> FixtureStatement:
    """Verify a fixture envelope by an operator key, then parse and re-check its manifest."""
    verified = verify_envelope(envelope, operator_keyring, "operator")
    manifest, digest, issued = parse_fixture_statement(verified.payload)
    return FixtureStatement(
        manifest=manifest, digest=digest, keyid=verified.keyid, role=verified.role, issued_at=issued
    )
