"""``serve`` configuration: one frozen, keyword-only object built once (flags → env → defaults).

Environment variables (used when the flag is absent): ``PATCHGATE_SIGNER_KEY`` (colon-separated
list), ``PATCHGATE_SIGNER_LISTEN``, ``PATCHGATE_SIGNER_AUDIT_LOG``,
``PATCHGATE_SIGNER_PASSPHRASE_FILE``,
``PATCHGATE_SIGNER_TLS_CERT``, ``PATCHGATE_SIGNER_TLS_KEY``, ``PATCHGATE_SIGNER_CLIENT_CA``,
``PATCHGATE_MAX_CALLS``, ``PATCHGATE_MAX_CALLS_PER_PEER``, ``PATCHGATE_IDLE_SECONDS``,
``PATCHGATE_MAX_CALL_SECONDS`` (see :mod:`patchgate.callguard`), ``PATCHGATE_LOG_LEVEL``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from patchgate.addr import parse_address, plaintext_listen_allowed
from patchgate.callguard import CallLimits
from patchgate.errors import UsageError
from patchgate.tls import ServerTLS
from signerd.errors import ConfigError

__all__ = ["SignerSettings", "check_socket_dir"]

MAX_MESSAGE_BYTES = 4 << 20  # a 10,000-file manifest is ~1.2 MB on the wire


@dataclass(frozen=True, kw_only=True)
class SignerSettings:
    """Everything ``serve`` needs, checked for consistency at construction."""

    keys: tuple[Path, ...]
    listen: str
    audit_log: Path
    passphrase_file: Path | None = None
    tls: ServerTLS | None = None
    limits: CallLimits = field(default_factory=CallLimits)
    max_message_bytes: int = MAX_MESSAGE_BYTES
    grace_seconds: float = 10.0
    log_level: str = "info"

    def __post_init__(self) -> None:
        if not self.keys:
            raise UsageError("serve: --key is required (or PATCHGATE_SIGNER_KEY)")
        address = parse_address(self.listen)
        if self.tls is None and not plaintext_listen_allowed(address, loopback_tcp=False):
            raise ConfigError(
                f"{self.listen}: refusing TCP without TLS; give --tls-cert, --tls-key and "
                "--client-ca, or listen on a unix socket"
            )

    @classmethod
    def build(
        cls,
        *,
        keys: list[Path] | None,
        listen: str | None,
        audit_log: Path | None,
        passphrase_file: Path | None,
        tls_cert: Path | None,
        tls_key: Path | None,
        client_ca: Path | None,
        env: Mapping[str, str] = os.environ,
    ) -> SignerSettings:
        """Flags first, then ``PATCHGATE_SIGNER_*``, then defaults."""

        def pick(flag: Path | None, name: str) -> Path | None:
            if flag is not None:
                return flag
            value = env.get(f"PATCHGATE_SIGNER_{name}")
            return Path(value) if value else None

        key_paths = keys or [Path(p) for p in env.get("PATCHGATE_SIGNER_KEY", "").split(":") if p]
        listen = listen or env.get("PATCHGATE_SIGNER_LISTEN")
        if not listen:
            raise UsageError("serve: --listen is required (or PATCHGATE_SIGNER_LISTEN)")
        audit = pick(audit_log, "AUDIT_LOG")
        if audit is None and key_paths:
            audit = key_paths[0].parent / "signer-audit.jsonl"
        tls_parts = (
            pick(tls_cert, "TLS_CERT"),
            pick(tls_key, "TLS_KEY"),
            pick(client_ca, "CLIENT_CA"),
        )
        tls = None
        if any(tls_parts):
            cert, key, ca = tls_parts
            if cert is None or key is None or ca is None:
                raise UsageError("serve: --tls-cert, --tls-key and --client-ca go together")
            tls = ServerTLS(cert=cert, key=key, client_ca=ca)
        try:
            limits = CallLimits.from_env(env)
        except ValueError as exc:
            raise UsageError(
                f"serve: bad PATCHGATE_MAX_CALLS/IDLE_SECONDS/... value: {exc}"
            ) from None
        return cls(
            keys=tuple(key_paths),
            listen=listen,
            audit_log=audit or Path("signer-audit.jsonl"),
            passphrase_file=pick(passphrase_file, "PASSPHRASE_FILE"),
            tls=tls,
            limits=limits,
            log_level=env.get("PATCHGATE_LOG_LEVEL", "info"),
        )


def check_socket_dir(socket_path: str) -> None:
    """Refuse a socket directory that others (world bits) may enter, list or write."""
    directory = Path(socket_path).parent
    try:
        st = os.stat(directory)
    except OSError as exc:
        raise ConfigError(f"socket directory {directory}: {exc.strerror}") from None
    if st.st_mode & 0o007:
        raise ConfigError(
            f"socket directory {directory}: mode {stat.S_IMODE(st.st_mode):04o} lets others reach "
            f"the socket; without TLS use a directory only the signer and the patchgate-clients "
            f"group may enter: chmod 0750 {directory}"
        )
