"""``python -m patchgate.healthcheck ADDR``: ask a daemon's gRPC health service if it is SERVING.

Used as the container health check of the compose and fleet services (``compose/``). Exit codes:
0 SERVING · 1 anything else (NOT_SERVING, unknown service, unreachable, TLS failure, timeout) ·
64 usage. One line on stdout says what was seen; no key material is ever printed.

With ``--tls-ca/--tls-cert/--tls-key`` (all three or none) the check speaks mTLS like any client of
the daemon (the health service answers any certificate from the configured CA).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.addr import parse_address
from patchgate.errors import PatchgateError, UsageError
from patchgate.tls import ClientTLS

__all__ = ["check_health", "main"]


def check_health(
    address: str, *, tls: ClientTLS | None = None, service: str = "", timeout: float = 5.0
) -> str:
    """The status name the health service reports for ``service`` at ``address``.

    Transport failures come back as ``"UNREACHABLE: <code>"`` rather than raising, because a
    health check has one question to answer.
    """
    target = parse_address(address).grpc_target
    if tls is None:
        channel = grpc.insecure_channel(target)
    else:
        channel = grpc.secure_channel(
            target, tls.channel_credentials(), options=tls.channel_options()
        )
    try:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
    except grpc.RpcError as exc:
        code = exc.code() if isinstance(exc, grpc.Call) else None
        return f"UNREACHABLE: {code.name if code is not None else 'unknown'}"
    finally:
        channel.close()
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def _tls(args: argparse.Namespace) -> ClientTLS | None:
    parts = (args.tls_ca, args.tls_cert, args.tls_key)
    if all(p is None for p in parts):
        if args.server_name is not None:
            raise UsageError("--server-name needs --tls-ca, --tls-cert and --tls-key")
        return None
    if any(p is None for p in parts):
        raise UsageError("--tls-ca, --tls-cert and --tls-key go together")
    return ClientTLS(
        ca_cert=args.tls_ca, cert=args.tls_cert, key=args.tls_key, server_name=args.server_name
    )


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(64)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m patchgate.healthcheck", description=__doc__.splitlines()[0])
    p.add_argument("address", help="unix:/path, host:port or dns:///name:port")
    p.add_argument("--tls-ca", type=Path, help="CA of the daemon's certificate")
    p.add_argument("--tls-cert", type=Path, help="our client certificate")
    p.add_argument("--tls-key", type=Path, help="its key")
    p.add_argument("--server-name", help="name the daemon's certificate must carry")
    p.add_argument("--service", default="", help="service name ('' = the whole server)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds (default 5)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when the daemon reports SERVING, 1 otherwise, 64 on a usage error."""
    args = _parser().parse_args(argv)
    try:
        status = check_health(
            args.address, tls=_tls(args), service=args.service, timeout=args.timeout
        )
    except UsageError as exc:
        print(f"healthcheck: error: {exc}", file=sys.stderr)
        return 64
    except PatchgateError as exc:
        print(f"healthcheck: {args.address}: {exc}")
        return 1
    print(f"healthcheck: {args.address}: {status}")
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
