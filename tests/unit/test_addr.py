"""Listen/dial addresses of DESIGN §8."""

from __future__ import annotations

import pytest

from patchgate.addr import parse_address, plaintext_listen_allowed
from patchgate.errors import UsageError


@pytest.mark.parametrize(
    ("text", "target", "unix"),
    [
        ("unix:/tmp/s.sock", "unix:/tmp/s.sock", True),
        ("unix:///tmp/s.sock", "unix:/tmp/s.sock", True),
        ("127.0.0.1:0", "127.0.0.1:0", False),
        ("localhost:50051", "localhost:50051", False),
        ("[::1]:443", "[::1]:443", False),
        ("dns:///tasks.exec:7000", "dns:///tasks.exec:7000", False),
    ],
)
def test_accepted(text: str, target: str, unix: bool) -> None:
    """unix:/abs, host:port, [v6]:port and dns:/// targets parse."""
    addr = parse_address(text)
    assert (addr.grpc_target, addr.is_unix) == (target, unix)


@pytest.mark.parametrize(
    "text", ["unix:relative.sock", "localhost", "host:http", "host:70000", ":80", ""]
)
def test_refused_as_usage_error(text: str) -> None:
    """Anything else is a UsageError (exit 64)."""
    with pytest.raises(UsageError):
        parse_address(text)


@pytest.mark.parametrize("text", ["127.0.0.1:0", "127.3.2.1:7000", "localhost:50051", "[::1]:443"])
def test_loopback_addresses(text: str) -> None:
    """127.0.0.0/8, [::1] and the literal name localhost are loopback."""
    assert parse_address(text).is_loopback


@pytest.mark.parametrize(
    "text",
    [
        "0.0.0.0:0",  # every interface
        "[::]:0",
        "10.0.0.7:7701",
        "example.org:7701",
        "127.0.0.1.example.org:7701",  # a name that only looks like loopback
        "localhost.:7701",
        "::1:7701",  # unbracketed IPv6: ambiguous, never trusted
        "[::ffff:127.0.0.1]:7701",
        "dns:///localhost:7701",  # resolved later by grpc: not a literal
        "unix:/tmp/s.sock",
    ],
)
def test_not_loopback(text: str) -> None:
    """Anything but a literal loopback host is not loopback (no name is looked up)."""
    assert not parse_address(text).is_loopback


@pytest.mark.parametrize(
    ("text", "loopback_tcp", "allowed"),
    [
        ("unix:/run/x/s.sock", False, True),
        ("unix:/run/x/s.sock", True, True),
        ("127.0.0.1:0", True, True),
        ("127.0.0.1:0", False, False),  # the signer: no TCP without TLS at all
        ("0.0.0.0:0", True, False),
        ("192.168.1.2:7701", True, False),
    ],
)
def test_plaintext_listen_allowed(text: str, loopback_tcp: bool, allowed: bool) -> None:
    """Without mTLS: unix sockets always, TCP only on loopback and only where the daemon allows."""
    assert plaintext_listen_allowed(parse_address(text), loopback_tcp=loopback_tcp) is allowed
