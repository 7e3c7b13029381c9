"""The signer's decisions, without grpc: authorize → validate → digest → sign → audit → reply.

Deny by default: only the ``client`` role may call the Signer service; any other role (an executor
above all) or a caller without an identity is refused. Every request, granted or denied, leaves one
audit line that is on disk before the reply; if that write fails, nothing is returned (fail closed).

An audit line is at most ``AUDIT_LINE_BYTES``: every free-text field is capped (``signerd.excerpt``)
to a share of it, so a request carrying megabytes costs the audit log and the log a few hundred
bytes. A request whose bytes cannot be decoded is refused here too (``refuse_undecodable``), with
its own audit line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn, Protocol

import structlog

from patchgate.envelope import Envelope
from signerd.audit import MAX_LINE_BYTES
from signerd.canonical import LIMITS, Limits, RawManifest, validate
from signerd.errors import (
    AuditError,
    AuditUnavailable,
    InvalidArgument,
    PermissionDenied,
    RequestError,
    Unauthenticated,
)
from signerd.excerpt import cap
from signerd.keystore import KeyStore, PublishedKey

__all__ = ["ALLOWED_ROLES", "AUDIT_LINE_BYTES", "AuditSink", "Caller", "SignResult", "SignerCore"]

ALLOWED_ROLES = frozenset({"client"})

AUDIT_LINE_BYTES = MAX_LINE_BYTES
# JSON bytes each free-text field may take in an audit line; with the fixed fields (hashes, seq,
# time, names) the longest line, denied or granted, stays under AUDIT_LINE_BYTES (unit-tested).
_CALLER_BYTES = 128
_ROLE_BYTES = 32
# A valid pin id is at most 256 UTF-8 bytes: kept whole unless over 128 of them are '"' or '\\'
# (each costs two bytes in JSON); the signed envelope carries it whole in any case.
_PIN_ID_GRANTED_BYTES = 384
_PIN_ID_DENIED_BYTES = 128

log = structlog.get_logger("signerd")


class AuditSink(Protocol):
    """Where decisions are recorded (``signerd.audit.AuditLog``): durable before it returns."""

    def append(self, fields: dict[str, Any]) -> str:
        """Record one decision; raise ``AuditError`` if it cannot be made durable."""
        ...


@dataclass(frozen=True)
class Caller:
    """Who calls: ``identity`` for the audit line, ``role`` for the decision (None: unknown)."""

    identity: str
    role: str | None


@dataclass(frozen=True)
class SignResult:
    """A signed fixture envelope and the digest the signer computed."""

    envelope: Envelope
    digest: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class SignerCore:
    """Decides and signs; the gRPC service only converts messages and calls in here."""

    def __init__(
        self,
        keys: KeyStore,
        audit: AuditSink,
        *,
        limits: Limits = LIMITS,
        clock: Callable[[], str] = _now,
    ) -> None:
        self._keys = keys
        self._audit = audit
        self._limits = limits
        self._clock = clock

    def sign_fixture(self, caller: Caller, raw: RawManifest) -> SignResult:
        """Sign the fixture statement of a canonical manifest for an allowed caller."""
        method = "SignFixtureDigest"
        try:
            self._authorize(caller)
            manifest = validate(raw, self._limits)
        except RequestError as exc:
            fields = {"method": method, "pin_id": cap(raw.pin_id, _PIN_ID_DENIED_BYTES)}
            self._record(caller, fields, "denied", exc.reason, exc.grpc_code)
            raise
        digest = manifest.digest()
        envelope = self._keys.sign_fixture(manifest, self._clock(), digest)  # computed once
        self._record(
            caller,
            {
                "method": method,
                "pin_id": cap(raw.pin_id, _PIN_ID_GRANTED_BYTES),
                "digest": digest,
                "keyid": self._keys.active_keyid,
                **(
                    {"environment_digest": manifest.environment_digest}
                    if manifest.environment_digest
                    else {}
                ),
            },
            "granted",
            "",
            "OK",
        )
        return SignResult(envelope=envelope, digest=digest)

    def refuse_undecodable(self, caller: Caller, method: str, size: int) -> NoReturn:
        """Refuse (and audit) ``size`` request bytes that are not a message of ``method``:
        INVALID_ARGUMENT for an allowed caller, the caller's own refusal for anyone else."""
        try:
            self._authorize(caller)
            raise InvalidArgument(f"request: {size} bytes that cannot be decoded as {method}")
        except RequestError as exc:
            self._record(caller, {"method": method}, "denied", exc.reason, exc.grpc_code)
            raise

    def keyring(self, caller: Caller) -> list[PublishedKey]:
        """The published public keys, for an allowed caller."""
        base = {"method": "GetKeyring"}
        try:
            self._authorize(caller)
        except RequestError as exc:
            self._record(caller, base, "denied", exc.reason, exc.grpc_code)
            raise
        self._record(caller, base, "granted", "", "OK")
        return self._keys.published()

    def _authorize(self, caller: Caller) -> None:
        if caller.role is None:
            raise Unauthenticated(f"caller {caller.identity!r} carries no patchgate role")
        if caller.role not in ALLOWED_ROLES:
            raise PermissionDenied(f"role {caller.role!r} may not call the signer")

    def _record(
        self, caller: Caller, fields: dict[str, str], decision: str, reason: str, code: str
    ) -> None:
        entry = {
            **fields,
            "caller": cap(caller.identity, _CALLER_BYTES),
            "role": cap(caller.role or "", _ROLE_BYTES),
            "decision": decision,
            "code": code,
            "reason": cap(reason),
        }
        try:
            line_hash = self._audit.append(entry)
        except AuditError as exc:
            log.error("audit write failed; refusing", error=str(exc))
            raise AuditUnavailable("audit log unavailable; the signer refuses to answer") from None
        log.info("decided", **entry, audit_hash=line_hash)
