"""mTLS for patchgate daemons: credentials from PEM files, the caller's role from its certificate.

A role is carried as a SPIFFE URI SAN ``spiffe://patchgate/role/<role>`` in a certificate issued by
the CA the server is configured with. Works over TCP and over unix sockets alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from patchgate.errors import KeyFileError

__all__ = [
    "DEFAULT_SERVER_NAME",
    "SPIFFE_PREFIX",
    "ClientTLS",
    "ServerTLS",
    "peer_spiffe_id",
    "peer_spiffe_role",
]

SPIFFE_PREFIX = "spiffe://patchgate/role/"
DEFAULT_SERVER_NAME = "localhost"
_ROLE = re.compile(r"[a-z][a-z0-9_-]{0,62}")


def _read(path: Path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{what} {path}: cannot read: {exc.strerror}") from None


@dataclass(frozen=True, kw_only=True)
class ClientTLS:
    """Client side of mTLS: the CA that issued the server's certificate, and our own cert/key."""

    ca_cert: Path
    cert: Path
    key: Path
    server_name: str | None = None

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """Credentials presenting our certificate and trusting only ``ca_cert``."""
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca_cert, "CA certificate"),
            private_key=_read(self.key, "TLS key"),
            certificate_chain=_read(self.cert, "TLS certificate"),
        )

    def channel_options(self) -> list[tuple[str, Any]]:
        """The name the server certificate must carry (unix sockets have no host name)."""
        return [("grpc.ssl_target_name_override", self.server_name or DEFAULT_SERVER_NAME)]


@dataclass(frozen=True, kw_only=True)
class ServerTLS:
    """The server side of mTLS: every client must present a certificate issued by ``client_ca``."""

    cert: Path
    key: Path
    client_ca: Path

    def server_credentials(self) -> grpc.ServerCredentials:
        """Credentials that require and verify a client certificate."""
        return grpc.ssl_server_credentials(
            [(_read(self.key, "TLS key"), _read(self.cert, "TLS certificate"))],
            root_certificates=_read(self.client_ca, "client CA certificate"),
            require_client_auth=True,
        )


def peer_spiffe_id(context: grpc.ServicerContext) -> str | None:
    """The verified peer's SPIFFE ID, or None (no TLS, no certificate, or not exactly one)."""
    values: bytes | list[bytes] = context.auth_context().get("peer_spiffe_id") or []
    if isinstance(values, bytes) or len(values) != 1:
        return None
    raw = values[0]
    try:
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    except UnicodeDecodeError:
        return None


def peer_spiffe_role(context: grpc.ServicerContext) -> str | None:
    """``"client"``/``"executor"``/... from ``spiffe://patchgate/role/<role>``, else None."""
    spiffe = peer_spiffe_id(context)
    if spiffe is None or not spiffe.startswith(SPIFFE_PREFIX):
        return None
    role = spiffe[len(SPIFFE_PREFIX) :]
    return role if _ROLE.fullmatch(role) else None
