"""Client of ``patchgate-signerd``: ask for a fixture signature, verify it, map gRPC failures.

gRPC INVALID_ARGUMENT / PERMISSION_DENIED / UNAUTHENTICATED / FAILED_PRECONDITION become
``RefusedError(code, details)`` (a decision); UNAVAILABLE (and CANCELLED, which a caller sees when
the server stops before taking its call) → ``TransportError("unavailable")``,
DEADLINE_EXCEEDED → ``"deadline"``, an empty reply → ``"empty_response"``, anything else →
``"internal"``. No bare ``grpc.RpcError`` leaves this module.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

import grpc

from patchgate.addr import parse_address
from patchgate.digest import Manifest, command_text
from patchgate.envelope import Envelope, FixtureStatement, verify_fixture_envelope
from patchgate.errors import KeyringError, RefusedError, TransportError, VerificationError
from patchgate.keys import KeyEntry, Keyring, load_public_pem
from patchgate.tls import ClientTLS
from patchgate.v1 import common_pb2, signer_pb2, signer_pb2_grpc

__all__ = ["SignerClient", "manifest_to_proto"]

_REFUSALS = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.FAILED_PRECONDITION,
    }
)
_MAX_MESSAGE_BYTES = 16 << 20

T = TypeVar("T")


def manifest_to_proto(manifest: Manifest) -> common_pb2.FixtureManifest:
    """The wire form of a manifest, files and commands in canonical order."""
    return common_pb2.FixtureManifest(
        pin_id=manifest.pin_id,
        algorithm=manifest.algorithm,
        files=[
            common_pb2.FixtureEntry(path=p, sha256=e.sha256, size=e.size)
            for p, e in sorted(manifest.files.items(), key=lambda item: item[0].encode())
        ],
        seed=manifest.seed,
        clock_bound_ms=manifest.clock_bound_ms,
        allowed_commands=[
            common_pb2.Command(argv=list(c))
            for c in sorted(manifest.allowed_commands, key=lambda c: command_text(c).encode())
        ],
        environment_digest=manifest.environment_digest or "",
    )


def _map_rpc_error(exc: grpc.RpcError) -> Exception:
    code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
    details = (exc.details() if isinstance(exc, grpc.Call) else None) or str(code)
    if code in _REFUSALS:
        return RefusedError(code.name, details)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
        # CANCELLED reaches a caller when the server shuts down before taking the call: nothing
        # was decided, the signer went away, exactly as with UNAVAILABLE
        return TransportError("unavailable", details)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return TransportError("deadline", details)
    return TransportError("internal", f"{code.name}: {details}")


class SignerClient:
    """One channel to one signer daemon."""

    def __init__(
        self, address: str, *, tls: ClientTLS | None = None, timeout: float = 10.0
    ) -> None:
        target = parse_address(address).grpc_target
        options: list[tuple[str, object]] = [
            ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
        ]
        if tls is None:
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            options += tls.channel_options()
            self._channel = grpc.secure_channel(target, tls.channel_credentials(), options=options)
        self._stub = signer_pb2_grpc.SignerStub(self._channel)  # type: ignore[no-untyped-call]
        self._timeout = timeout
        self.address = address

    def _call(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except grpc.RpcError as exc:
            raise _map_rpc_error(exc) from exc

    def sign_fixture_digest(self, manifest: Manifest) -> tuple[Envelope, str]:
        """The signer's envelope for ``manifest`` and the digest the signer computed."""
        request = signer_pb2.SignFixtureDigestRequest(manifest=manifest_to_proto(manifest))
        reply: signer_pb2.SignFixtureDigestResponse = self._call(
            lambda: self._stub.SignFixtureDigest(request, timeout=self._timeout)
        )
        if (
            not reply.HasField("envelope")
            or not reply.envelope.signatures
            or not reply.fixture_digest
        ):
            raise TransportError("empty_response", "signer replied without an envelope or digest")
        return Envelope.from_proto(reply.envelope), reply.fixture_digest

    def get_keyring(self) -> Keyring:
        """The signer's published public keys (operator role)."""
        reply: signer_pb2.Keyring = self._call(
            lambda: self._stub.GetKeyring(signer_pb2.GetKeyringRequest(), timeout=self._timeout)
        )
        if not reply.keys:
            raise TransportError("empty_response", "signer published no keys")
        ring = Keyring()
        try:
            for k in reply.keys:
                ring.add(
                    KeyEntry(
                        keyid=k.keyid, role=k.role, public_key=load_public_pem(k.public_key_pem)
                    )
                )
        except KeyringError as exc:
            raise TransportError("internal", f"signer published a bad keyring: {exc}") from None
        return ring

    def sign_and_verify(
        self, manifest: Manifest, operator_keyring: Keyring
    ) -> tuple[Envelope, FixtureStatement]:
        """Sign, then verify against ``operator_keyring`` and check the digest is the manifest's."""
        envelope, signer_digest = self.sign_fixture_digest(manifest)
        statement = verify_fixture_envelope(envelope, operator_keyring)
        expected = manifest.digest()
        if statement.digest != expected or signer_digest != expected:
            raise VerificationError(
                f"signed digest {statement.digest} (reported {signer_digest}) is not the "
                f"manifest's digest {expected}"
            )
        if statement.manifest.pin_id != manifest.pin_id:
            raise VerificationError("signed pin id differs from the manifest's")
        if statement.manifest.environment_digest != manifest.environment_digest:
            raise VerificationError("signed environment digest differs from the manifest's")
        return envelope, statement

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def __enter__(self) -> SignerClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
