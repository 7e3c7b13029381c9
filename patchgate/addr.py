"""Listen and dial addresses: ``unix:/path`` or ``host:port`` (DESIGN §8), and gRPC ``dns:///``."""

from __future__ import annotations

from dataclasses import dataclass

from patchgate.errors import UsageError

__all__ = ["Address", "parse_address"]


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
