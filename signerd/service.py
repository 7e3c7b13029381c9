"""Thin gRPC adapter: proto ↔ domain for the Signer service. Decisions live in ``signerd.core``."""

from __future__ import annotations

from collections.abc import Callable

import grpc

from patchgate.tls import peer_spiffe_id, peer_spiffe_role
from patchgate.v1 import common_pb2, signer_pb2, signer_pb2_grpc
from signerd.canonical import RawFile, RawManifest
from signerd.core import Caller, SignerCore

__all__ = ["SERVICE_NAME", "SignerService", "caller_from_tls", "caller_from_unix"]

SERVICE_NAME = signer_pb2.DESCRIPTOR.services_by_name["Signer"].full_name

CallerOf = Callable[[grpc.ServicerContext], Caller]


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
    )


class SignerService(signer_pb2_grpc.SignerServicer):
    """SignFixtureDigest and GetKeyring; refusals are raised and mapped by the interceptor."""

    def __init__(self, core: SignerCore, caller_of: CallerOf) -> None:
        self._core = core
        self._caller_of = caller_of

    def SignFixtureDigest(
        self, request: signer_pb2.SignFixtureDigestRequest, context: grpc.ServicerContext
    ) -> signer_pb2.SignFixtureDigestResponse:
        """Validate, recompute the digest, sign, audit."""
        result = self._core.sign_fixture(self._caller_of(context), raw_manifest(request.manifest))
        return signer_pb2.SignFixtureDigestResponse(
            envelope=result.envelope.to_proto(), fixture_digest=result.digest
        )

    def GetKeyring(
        self, request: signer_pb2.GetKeyringRequest, context: grpc.ServicerContext
    ) -> signer_pb2.Keyring:
        """Public keys only, the active one first."""
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
