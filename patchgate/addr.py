"""Listen and dial addresses: ``unix:/path`` or ``host:port``, and gRPC ``dns:///`` targets."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from patchgate.errors import UsageError

__all__ = ["Address", "parse_address", "plaintext_listen_allowed"]


@dataclass(frozen=True)
class Address:
    """A parsed address. ``unix_path`` is set for unix sockets."""

    text: str
    unix_path: str | None = None

    @property
    def grpc_target(self) -> str:
        """The string grpcio dials or binds."""
        return f"unix:{self.unix_path}" if self.unix_path is not None else self.text

    @property
    def is_unix(self) -> bool:
        """True for a unix socket."""
        return self.unix_path is not None

    @property
    def is_loopback(self) -> bool:
        """True for ``host:port`` whose host is ``localhost``, an address in 127.0.0.0/8 or ``::1``
        (``[::1]``), written literally. Anything else, resolver names and gRPC schemes included,
        is not: the check never trusts a name lookup."""
        if self.unix_path is not None or self.text.startswith(("dns:", "ipv4:", "ipv6:")):
            return False
        host = self.text.rpartition(":")[0]
        if host == "localhost":
            return True
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        elif ":" in host:  # an IPv6 host without brackets is ambiguous: never trusted
            return False
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False


def parse_address(text: str) -> Address:
    """Parse ``unix:/abs/path``, ``host:port``, ``[v6]:port`` or a gRPC ``dns:///name:port``."""
    if text.startswith("unix://"):
        text = "unix:" + text[len("unix://") :]
    if text.startswith("unix:"):
        path = text[len("unix:") :]
        if not path.startswith("/"):
            raise UsageError(f"address {text!r}: a unix socket path must be absolute")
        return Address(text=text, unix_path=path)
    if text.startswith(("dns:", "ipv4:", "ipv6:")):
        return Address(text=text)
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"address {text!r}: expected unix:/path or host:port")
    return Address(text=text)


def plaintext_listen_allowed(address: Address, *, loopback_tcp: bool) -> bool:
    """May a daemon listen at ``address`` without mTLS? A unix socket (its directory's permissions
    are the access control) always; a TCP address only when ``loopback_tcp`` and it is loopback
    (``Address.is_loopback``). Every other TCP listener needs mTLS."""
    return address.is_unix or (loopback_tcp and address.is_loopback)
