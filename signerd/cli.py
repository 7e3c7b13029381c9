"""``patchgate-signerd``: keygen, serve, audit-verify.

Exit codes: 0 ok · 1 refused to start / error / broken audit chain · 64 usage.
``serve`` prints exactly one line on stdout when it accepts requests (``listening <address>``) and
exits 0 after SIGTERM/SIGINT once in-flight requests have drained.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import grpc
import structlog

from patchgate.errors import KeyFileError, PatchgateError, UsageError
from patchgate.keys import check_private_mode, generate_key_file
from patchgate.logs import configure_logging
from patchgate.server import DaemonServer, ServerSettings
from signerd.audit import AuditLog, verify_chain
from signerd.core import Caller, SignerCore
from signerd.errors import AuditChainError, ConfigError
from signerd.interceptor import ErrorMappingInterceptor
from signerd.keystore import KeyStore
from signerd.service import SERVICE_NAME, SignerService, caller_from_tls, caller_from_unix
from signerd.settings import SignerSettings, check_socket_dir

__all__ = ["main"]

log = structlog.get_logger("signerd")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(64)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="patchgate-signerd", description="The operator's fixture-digest signer.")
    p.add_argument("--verbose", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    k = sub.add_parser(
        "keygen", help="create an Ed25519 operator key (FILE 0600, FILE.pub keyring)"
    )
    k.add_argument("--out", type=Path, required=True)
    k.add_argument("--passphrase-file", type=Path)
    s = sub.add_parser("serve", help="serve SignFixtureDigest and GetKeyring")
    s.add_argument("--key", type=Path, action="append", help="repeatable; the first one signs")
    s.add_argument("--listen", help="unix:/path, or host:port with TLS")
    s.add_argument("--audit-log", type=Path)
    s.add_argument("--passphrase-file", type=Path)
    s.add_argument("--tls-cert", type=Path)
    s.add_argument("--tls-key", type=Path)
    s.add_argument("--client-ca", type=Path, help="CA that issues client certificates (mTLS)")
    a = sub.add_parser("audit-verify", help="check the audit log's hash chain")
    a.add_argument("file", type=Path)
    return p


def _passphrase(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        check_private_mode(path)
        data = path.read_bytes().rstrip(b"\r\n")
    except KeyFileError as exc:
        raise ConfigError(f"passphrase file: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"passphrase file {path}: {exc.strerror}") from None
    if not data:
        raise ConfigError(f"passphrase file {path}: empty")
    return data


def _keygen(args: argparse.Namespace) -> int:
    signer = generate_key_file(args.out, "operator", _passphrase(args.passphrase_file))
    print(signer.keyid)
    return 0


def _audit_verify(args: argparse.Namespace) -> int:
    if not args.file.exists():
        raise ConfigError(f"{args.file}: no such file")
    try:
        head = verify_chain(args.file)
    except AuditChainError as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return 1
    print(f"{args.file}: ok, {head.lines} lines, head {head.last_line_sha256}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    settings = SignerSettings.build(
        keys=args.key,
        listen=args.listen,
        audit_log=args.audit_log,
        passphrase_file=args.passphrase_file,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        client_ca=args.client_ca,
    )
    configure_logging(settings.log_level)
    keys = KeyStore.load(settings.keys, _passphrase(settings.passphrase_file))
    if settings.tls is None:
        check_socket_dir(settings.listen.removeprefix("unix:").removeprefix("//"))
        credentials: grpc.ServerCredentials | None = None
        caller_of: Callable[[grpc.ServicerContext], Caller] = caller_from_unix
    else:
        try:
            credentials, caller_of = settings.tls.server_credentials(), caller_from_tls
        except KeyFileError as exc:
            raise ConfigError(str(exc)) from None
    audit = AuditLog(settings.audit_log)
    core = SignerCore(keys, audit)
    service = SignerService(core, caller_of)
    server = DaemonServer(
        ServerSettings(
            listen=settings.listen,
            limits=settings.limits,
            max_message_bytes=settings.max_message_bytes,
            grace_seconds=settings.grace_seconds,
            credentials=credentials,
            interceptors=(ErrorMappingInterceptor(f"/{SERVICE_NAME}/"),),
        ),
        service.register,
        [SERVICE_NAME],
    )
    try:
        bound = server.start()
    except (OSError, RuntimeError) as exc:
        audit.close()
        raise ConfigError(f"cannot listen on {settings.listen}: {exc}") from None
    log.info(
        "serving",
        address=bound,
        tls=settings.tls is not None,
        active_keyid=keys.active_keyid,
        keys=len(keys.published()),
        audit_log=str(settings.audit_log),
    )
    print(f"listening {bound}", flush=True)
    server.serve_until_signal()
    audit.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``patchgate-signerd``."""
    args = _parser().parse_args(argv)
    handlers = {"keygen": _keygen, "serve": _serve, "audit-verify": _audit_verify}
    try:
        return handlers[args.command](args)
    except UsageError as exc:
        print(f"patchgate-signerd: error: {exc}", file=sys.stderr)
        return 64
    except PatchgateError as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"patchgate-signerd: error: {exc}", file=sys.stderr)
        return 1
