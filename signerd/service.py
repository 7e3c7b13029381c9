"""Thin gRPC adapter: proto ↔ domain for the Signer service. Decisions live in ``signerd.core``.

The methods are registered with no request deserializer: they receive the request's raw bytes and
decode them here, so bytes that are no message of the method are refused like any other request
(INVALID_ARGUMENT, audited by the core) instead of failing inside grpcio as INTERNAL, unaudited.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from patchgate.tls import peer_spiffe_id, peer_spiffe_role
from patchgate.v1 import common_pb2, signer_pb2
from signerd.canonical import RawFile, RawManifest
from signerd.core import Caller, SignerCore

__all__ = ["SERVICE_NAME", "SignerService", "caller_from_tls", "caller_from_unix"]

SERVICE_NAME = signer_pb2.DESCRIPTOR.services_by_name["Signer"].full_name

CallerOf = Callable[[grpc.ServicerContext], Caller]
_M = TypeVar("_M", bound=Message)


def caller_from_tls(context: grpc.ServicerContext) -> Caller:
    """Identity and role from the verified client certificate's SPIFFE URI SAN."""
    spiffe = peer_spiffe_id(context)
    return Caller(identity=spiffe or "tls:no-spiffe-id", role=peer_spiffe_role(context))


def caller_from_unix(_context: grpc.ServicerContext) -> Caller:
    """Without TLS only a unix socket is served: whoever may open it is a client (see docs)."""
    return Caller(identity="unix-socket", role="client")


def raw_manifest(msg: common_pb2.FixtureManifest) -> RawManifest:
    """The manifest exactly as sent (lists kept, duplicates kept) for the canonical checks."""
    return RawManifest(
        pin_id=msg.pin_id,
        algorithm=msg.algorithm,
        files=[RawFile(f.path, f.sha256, int(f.size)) for f in msg.files],
        seed=int(msg.seed),
        clock_bound_ms=int(msg.clock_bound_ms),
        allowed_commands=[list(c.argv) for c in msg.allowed_commands],
        environment_digest=msg.environment_digest,
    )


class SignerService:
    """SignFixtureDigest and GetKeyring; refusals are raised and mapped by the interceptor."""

    def __init__(self, core: SignerCore, caller_of: CallerOf) -> None:
        self._core = core
        self._caller_of = caller_of

    def register(self, server: grpc.Server) -> None:
        """Add both methods to ``server``, taking raw request bytes."""
        handlers = {
            "SignFixtureDigest": grpc.unary_unary_rpc_method_handler(
                self.SignFixtureDigest,
                response_serializer=signer_pb2.SignFixtureDigestResponse.SerializeToString,
            ),
            "GetKeyring": grpc.unary_unary_rpc_method_handler(
                self.GetKeyring, response_serializer=signer_pb2.Keyring.SerializeToString
            ),
        }
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),)
        )

    def _decode(
        self, kind: type[_M], method: str, data: bytes, context: grpc.ServicerContext
    ) -> _M:
        try:
            return kind.FromString(data)
        except DecodeError:
            self._core.refuse_undecodable(self._caller_of(context), method, len(data))

    def SignFixtureDigest(
        self, data: bytes, context: grpc.ServicerContext
    ) -> signer_pb2.SignFixtureDigestResponse:
        """Decode, validate, recompute the digest, sign, audit."""
        request = self._decode(
            signer_pb2.SignFixtureDigestRequest, "SignFixtureDigest", data, context
        )
        result = self._core.sign_fixture(self._caller_of(context), raw_manifest(request.manifest))
        return signer_pb2.SignFixtureDigestResponse(
            envelope=result.envelope.to_proto(), fixture_digest=result.digest
        )

    def GetKeyring(self, data: bytes, context: grpc.ServicerContext) -> signer_pb2.Keyring:
        """Public keys only, the active one first."""
        self._decode(signer_pb2.GetKeyringRequest, "GetKeyring", data, context)
        published = self._core.keyring(self._caller_of(context))
        return signer_pb2.Keyring(
            keys=[
                signer_pb2.KeyringEntry(
                    keyid=p.entry.keyid,
                    role=p.entry.role,
                    public_key_pem=p.entry.to_json()["public_key_pem"],
                    active=p.active,
                )
                for p in published
            ]
        )
