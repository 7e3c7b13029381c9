"""signerd.settings: flags → env → defaults, and the refusals made before anything listens."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchgate.errors import UsageError
from signerd.errors import ConfigError
from signerd.settings import SignerSettings, check_socket_dir

NONE: dict[str, None] = {
    "keys": None,
    "listen": None,
    "audit_log": None,
    "passphrase_file": None,
    "tls_cert": None,
    "tls_key": None,
    "client_ca": None,
}


def build(env: dict[str, str] | None = None, **flags: object) -> SignerSettings:
    return SignerSettings.build(**{**NONE, **flags}, env=env or {})  # type: ignore[arg-type]


def test_tcp_without_tls_is_refused() -> None:
    """A host:port listen address needs TLS."""
    with pytest.raises(ConfigError, match="refusing TCP without TLS"):
        build(keys=[Path("k")], listen="127.0.0.1:7000")


def test_tcp_with_tls_is_accepted() -> None:
    """All three TLS flags make TCP acceptable."""
    s = build(
        keys=[Path("k")],
        listen="127.0.0.1:0",
        tls_cert=Path("c"),
        tls_key=Path("k2"),
        client_ca=Path("ca"),
    )
    assert s.tls is not None


def test_partial_tls_flags_are_a_usage_error() -> None:
    """--tls-cert without --client-ca is not half-secure: it is refused."""
    with pytest.raises(UsageError, match="go together"):
        build(keys=[Path("k")], listen="unix:/tmp/x.sock", tls_cert=Path("c"))


def test_flags_win_over_environment_and_env_over_defaults() -> None:
    """Flag, then PATCHGATE_SIGNER_*, then the default next to the first key."""
    env = {"PATCHGATE_SIGNER_KEY": "/a/k1:/a/k2", "PATCHGATE_SIGNER_LISTEN": "unix:/e.sock"}
    s = build(env)
    assert s.keys == (Path("/a/k1"), Path("/a/k2"))
    assert s.listen == "unix:/e.sock"
    assert s.audit_log == Path("/a/signer-audit.jsonl")
    assert build(env, listen="unix:/f.sock").listen == "unix:/f.sock"


def test_missing_key_is_a_usage_error() -> None:
    """No --key and no environment key."""
    with pytest.raises(UsageError, match="--key"):
        build(listen="unix:/tmp/x.sock")


@pytest.mark.parametrize("mode", [0o701, 0o704, 0o755, 0o777])
def test_socket_dir_with_world_bits_is_refused(tmp_path: Path, mode: int) -> None:
    """Any 'others' bit on the socket directory refuses the plaintext unix socket."""
    d = tmp_path / "d"
    d.mkdir()
    os.chmod(d, mode)
    with pytest.raises(ConfigError, match="patchgate-clients"):
        check_socket_dir(str(d / "s.sock"))


@pytest.mark.parametrize("mode", [0o700, 0o750, 0o770])
def test_socket_dir_for_owner_and_group_is_accepted(tmp_path: Path, mode: int) -> None:
    """Owner and the clients group only: accepted."""
    d = tmp_path / "d"
    d.mkdir()
    os.chmod(d, mode)
    check_socket_dir(str(d / "s.sock"))
