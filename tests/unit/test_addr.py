"""Listen/dial addresses of DESIGN §8."""

from __future__ import annotations

import pytest

from patchgate.addr import parse_address
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
