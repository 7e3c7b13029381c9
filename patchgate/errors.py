"""Errors of the shared contract library.

Hierarchy::

    PatchgateError                 base of everything patchgate raises on purpose
    ├── UsageError                 bad flags or arguments (CLI exit 64)
    ├── UnsafePathError            a path that is not a safe relative POSIX path
    ├── UnsafeTreeError            a revision whose tree cannot be materialized safely (an absolute
    │                              symlink, a link leaving the tree, a .git path): exit 78
    ├── FixtureScanError           missing / extra / unsafe / mismatched fixture files (exit 2)
    ├── PinError                   a pin file that is missing, malformed or inconsistent
    │   └── PinErrors              ... several of them, every one found (``errors``)
    ├── KeyFileError               a key file that is unreadable, too open, or not Ed25519
    ├── KeyringError               a malformed keyring file
    ├── EnvelopeError              a DSSE envelope that is malformed
    │   └── VerificationError      ... or whose signature/role does not verify
    ├── EnvironmentBuildError      the suite's environment cannot be built or verified
    ├── LedgerError                a ledger record that cannot be read or written
    ├── RefusedError               a daemon refused the request (INVALID_ARGUMENT,
    │                              FAILED_PRECONDITION, PERMISSION_DENIED, ...): a decision,
    │                              never an outcome
    └── TransportError             the daemon could not be reached or answered nothing usable;
                                   carries one of the transport kinds (docs/architecture.md)

Transport errors and refusals are different types all the way up: a caller never turns a transport
error into a property failure.
"""

from __future__ import annotations

from collections.abc import Sequence

from patchgate.vocabulary import TRANSPORT_KINDS as _TRANSPORT_KINDS

__all__ = [
    "EnvelopeError",
    "EnvironmentBuildError",
    "FixtureScanError",
    "KeyFileError",
    "KeyringError",
    "LedgerError",
    "PatchgateError",
    "PinError",
    "PinErrors",
    "RefusedError",
    "TransportError",
    "UnsafePathError",
    "UnsafeTreeError",
    "UsageError",
    "VerificationError",
]

TRANSPORT_KINDS = _TRANSPORT_KINDS  # the vocabulary's, in common.proto's enum order


class PatchgateError(Exception):
    """Base of every error patchgate raises on purpose."""


class UsageError(PatchgateError):
    """Bad command-line usage."""


class UnsafePathError(PatchgateError):
    """A path that is not a safe, relative POSIX path inside its root."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"unsafe path {path!r}: {why}")
        self.path = path
        self.why = why


class UnsafeTreeError(PatchgateError):
    """A revision's tree holds an entry patchgate will not write: ``path`` names it."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"the revision's tree cannot be materialized safely: {path!r}: {why}")
        self.path = path
        self.why = why


class FixtureScanError(PatchgateError):
    """The fixture tree does not match its pin: files missing, unpinned (extra), unsafe, or whose
    bytes differ from the pinned hash (``mismatched``; set by callers that hash, never by the scan).
    """

    def __init__(
        self,
        missing: list[str] | None = None,
        extra: list[str] | None = None,
        unsafe: list[str] | None = None,
        mismatched: list[str] | None = None,
    ) -> None:
        self.missing = sorted(missing or [])
        self.extra = sorted(extra or [])
        self.unsafe = sorted(unsafe or [])
        self.mismatched = sorted(mismatched or [])
        parts = []
        if self.missing:
            parts.append("missing: " + ", ".join(self.missing))
        if self.extra:
            parts.append("unpinned (extra): " + ", ".join(self.extra))
        if self.unsafe:
            parts.append("unsafe: " + ", ".join(self.unsafe))
        if self.mismatched:
            parts.append("hash mismatch: " + ", ".join(self.mismatched))
        super().__init__("fixture tree does not match its pin; " + "; ".join(parts))


class PinError(PatchgateError):
    """A pin file is missing, malformed or inconsistent. Names the file, the field and why."""

    def __init__(self, file: str, field: str, why: str) -> None:
        super().__init__(f"{file}: {field}: {why}" if field else f"{file}: {why}")
        self.file = file
        self.field = field
        self.why = why


class PinErrors(PinError):
    """Every problem found in the pins at once (so a person fixes them in one go), in ``errors``.

    ``file``, ``field`` and ``why`` are those of the first; the message lists them all.
    """

    def __init__(self, errors: Sequence[PinError]) -> None:
        if not errors:
            raise ValueError("PinErrors needs at least one PinError")
        first = errors[0]
        super().__init__(first.file, first.field, first.why)
        self.errors = tuple(errors)
        self.args = ("; ".join(str(e) for e in self.errors),)

    def __str__(self) -> str:
        return str(self.args[0])


class KeyFileError(PatchgateError):
    """A private or public key file cannot be used."""


class KeyringError(PatchgateError):
    """A keyring file is malformed."""


class EnvelopeError(PatchgateError):
    """A DSSE envelope or in-toto statement is malformed."""


class VerificationError(EnvelopeError):
    """An envelope's signature does not verify, or its key does not hold the required role."""


class LedgerError(PatchgateError):
    """A ledger or receipt cannot be read or written."""


class RefusedError(PatchgateError):
    """A daemon refused a request on purpose. ``code`` is the gRPC status name."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"refused ({code}): {reason}")
        self.code = code
        self.reason = reason


class TransportError(PatchgateError):
    """Infrastructure failure: nothing was decided. ``kind`` is one of TRANSPORT_KINDS."""

    def __init__(self, kind: str, detail: str) -> None:
        if kind not in TRANSPORT_KINDS:
            kind = "internal"
        super().__init__(f"transport failure ({kind}): {detail}")
        self.kind = kind
        self.detail = detail


class EnvironmentBuildError(PatchgateError):
    """The suite's environment cannot be built, found or verified (the message says why)."""
