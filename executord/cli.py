"""``patchgate-executord serve``: settings from flags → PATCHGATE_EXECUTORD_* → defaults."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

import grpc
import structlog

from executord.errors import SandboxError
from executord.lifecycle import (
    Started,
    clean_up,
    drain_grace,
    owner_name,
    serve_until_stopped,
    start_up,
)
from executord.runs.environment import Bare
from executord.runs.executor import Executor
from executord.sandbox.container import DockerRuntime, SandboxPolicy
from executord.sandbox.image import (
    DEFAULT_PATH,
    ensure_image,
    host_mounts,
    host_python_env,
    image_path,
    runtime_mounts,
)
from executord.service.access import RoleInterceptor
from executord.service.adapter import ErrorInterceptor, ExecutorService
from executord.settings import ExecutorSettings, default_state_dir, parse_bytes
from executord.store.blobstore import BlobStore
from patchgate.addr import parse_address, plaintext_listen_allowed
from patchgate.callguard import CallLimits
from patchgate.errors import PatchgateError, UsageError
from patchgate.keys import Keyring, Signer, load_signer
from patchgate.logs import configure_logging
from patchgate.server import DaemonServer, ServerSettings
from patchgate.tls import ServerTLS
from patchgate.v1 import executor_pb2_grpc

__all__ = ["main"]

log = structlog.get_logger("executord")
SERVICE_NAME = "patchgate.v1.Executor"


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(f"PATCHGATE_EXECUTORD_{name}", default)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="patchgate-executord", description=__doc__)
    p.add_argument("--verbose", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the executor daemon")
    s.add_argument(
        "--operator-keyring",
        type=Path,
        default=_env("OPERATOR_KEYRING"),
        required=_env("OPERATOR_KEYRING") is None,
    )
    s.add_argument("--listen", default=_env("LISTEN"), required=_env("LISTEN") is None)
    s.add_argument("--image", default=_env("IMAGE", "host"), help="'host' or an image name")
    s.add_argument("--key", type=Path, default=_env("KEY"), help="executor key (else ephemeral)")
    s.add_argument(
        "--max-parallel", type=int, default=int(_env("MAX_PARALLEL", str(os.cpu_count() or 1)) or 1)
    )
    s.add_argument("--runtime", choices=("runc", "runsc"), default=_env("RUNTIME", "runc"))
    s.add_argument("--host-python", type=Path, default=_env("HOST_PYTHON"))
    s.add_argument("--pull", action="store_true", help="pull a missing --image")
    s.add_argument("--state-dir", type=Path, default=_env("STATE_DIR") or default_state_dir())
    s.add_argument(
        "--store-dir", type=Path, default=_env("STORE_DIR"), help="blob store (shareable)"
    )
    s.add_argument("--store-max", default=_env("STORE_MAX", "2g"), help="blob store bound, e.g. 2g")
    s.add_argument(
        "--memory", default=_env("MEMORY", "512m"), help="sandbox memory (= memory+swap)"
    )
    s.add_argument("--pids-limit", type=int, default=int(_env("PIDS_LIMIT", "256") or 256))
    s.add_argument("--cpus", type=float, default=float(_env("CPUS", "1") or 1))
    s.add_argument("--tmpfs-size", default=_env("TMPFS_SIZE", "64m"))
    s.add_argument(
        "--instance",
        default=_env("INSTANCE", "default"),
        help="container label value this daemon sweeps at start (unique per engine)",
    )
    s.add_argument(
        "--shutdown-grace",
        type=float,
        default=float(_env("SHUTDOWN_GRACE", "10") or 10),
        help="seconds from SIGTERM/SIGINT to exit, stuck runs included",
    )
    s.add_argument("--tls-cert", type=Path, default=_env("TLS_CERT"), help="mTLS server cert")
    s.add_argument("--tls-key", type=Path, default=_env("TLS_KEY"), help="mTLS server key")
    s.add_argument("--client-ca", type=Path, default=_env("CLIENT_CA"), help="CA of client certs")
    s.add_argument("--log-level", default=_env("LOG_LEVEL", "info"))
    return p


def _settings(args: argparse.Namespace) -> ExecutorSettings:
    try:
        return ExecutorSettings(
            operator_keyring=args.operator_keyring,
            listen=args.listen,
            image=args.image,
            key=args.key,
            max_parallel=max(1, args.max_parallel),
            runtime=args.runtime,
            host_python=args.host_python,
            pull=args.pull,
            state_dir=args.state_dir,
            store_dir=args.store_dir,
            store_max_bytes=parse_bytes(args.store_max),
            memory_bytes=parse_bytes(args.memory),
            pids_limit=args.pids_limit,
            nano_cpus=int(args.cpus * 1e9),
            tmpfs_bytes=parse_bytes(args.tmpfs_size),
            instance=args.instance,
            shutdown_grace_s=_grace(args.shutdown_grace),
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            client_ca=args.client_ca,
            limits=CallLimits.from_env(os.environ),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _grace(seconds: float) -> float:
    if not 0.5 <= seconds <= 3600:
        raise ValueError(f"--shutdown-grace {seconds}: give 0.5 to 3600 seconds")
    return seconds


def _credentials(settings: ExecutorSettings) -> grpc.ServerCredentials | None:
    """mTLS when all of --tls-cert, --tls-key, --client-ca are given; none of them: plaintext."""
    parts = (settings.tls_cert, settings.tls_key, settings.client_ca)
    if all(p is None for p in parts):
        return None
    if settings.tls_cert is None or settings.tls_key is None or settings.client_ca is None:
        raise UsageError("--tls-cert, --tls-key and --client-ca go together")
    tls = ServerTLS(cert=settings.tls_cert, key=settings.tls_key, client_ca=settings.client_ca)
    return tls.server_credentials()


def _serve(args: argparse.Namespace) -> int:
    settings = _settings(args)
    credentials = _credentials(settings)
    if credentials is None and not plaintext_listen_allowed(
        parse_address(settings.listen), loopback_tcp=True
    ):
        raise UsageError(
            f"{settings.listen}: refusing a TCP listener without mTLS off loopback; give "
            "--tls-cert, --tls-key and --client-ca, or listen on a unix socket or 127.0.0.1"
        )
    configure_logging(args.log_level)
    keyring = Keyring.load(settings.operator_keyring)
    if not keyring.with_role("operator"):
        raise UsageError(f"{settings.operator_keyring}: holds no operator key")
    signer = load_signer(settings.key, "executor") if settings.key else Signer.generate("executor")
    if signer.keyid in {e.keyid for e in keyring}:
        raise UsageError("the executor key must not be in the operator keyring")
    runtime = DockerRuntime()
    runtime.ping()
    owner = owner_name()
    started = start_up(runtime, settings, owner)
    try:
        server, service, info = _build(
            settings, runtime, signer, keyring, credentials, started, owner
        )
        try:
            bound = server.start()
        except (OSError, RuntimeError) as exc:
            raise UsageError(f"cannot listen on {settings.listen}: {exc}") from None
    except BaseException:
        started.work.release()  # nothing served: no work dir left behind either
        raise
    log.info("serving", address=bound, **info)
    print(f"listening {bound}", flush=True)
    serve_until_stopped(
        server,
        service,
        lambda: clean_up(runtime, settings, owner, started.work),
        settings.shutdown_grace_s,
    )
    return 0


def _build(  # noqa: PLR0917 - private, one call site
    settings: ExecutorSettings,
    runtime: DockerRuntime,
    signer: Signer,
    keyring: Keyring,
    credentials: grpc.ServerCredentials | None,
    started: Started,
    owner: str,
) -> tuple[DaemonServer, ExecutorService, dict[str, object]]:
    uid = settings.sandbox_uid
    try:
        image = ensure_image(runtime, settings.image, uid=uid, pull=settings.pull)
    except SandboxError as exc:
        log.warning("image not ready; runs will report it", error=str(exc))
        image = settings.image
    mounts = host_mounts(host_python_env(settings.host_python)) if settings.image == "host" else ()
    env = host_python_env(settings.host_python) if settings.image == "host" else None
    # host: the host Python's bin first, then the system dirs; a named image: its own PATH.
    base_path = DEFAULT_PATH if env is not None else image_path(runtime, image)
    policy = SandboxPolicy(
        image=image,
        runtime=settings.runtime,
        user=f"{uid}:{uid}",
        pids_limit=settings.pids_limit,
        memory_bytes=settings.memory_bytes,
        nano_cpus=settings.nano_cpus,
        tmpfs_bytes=settings.tmpfs_bytes,
    )
    store = BlobStore(settings.blob_dir, settings.store_max_bytes)
    executor = Executor(
        store=store,
        runtime=runtime,
        signer=signer,
        operator_keyring=keyring,
        policy=policy,
        host_mounts=mounts,
        path_dirs=(env.bin_dir,) if env else (),
        bare=Bare(
            mounts=runtime_mounts(env) if env else (),
            path_dirs=(env.base_bin,) if env else (),
            hidden=env.base_site if env else (),
        ),
        base_path=base_path,
        work_dir=started.work.path,
        max_parallel=settings.max_parallel,
        labels={settings.label: settings.instance, settings.owner_label: owner},
    )
    service = ExecutorService(executor, store, keyring)
    server = DaemonServer(
        ServerSettings(
            listen=settings.listen,
            # mTLS: only the ``client`` role may call the Executor service (deny by default).
            interceptors=(
                (RoleInterceptor(), ErrorInterceptor()) if credentials else (ErrorInterceptor(),)
            ),
            limits=settings.limits,
            credentials=credentials,
            grace_seconds=drain_grace(settings.shutdown_grace_s),
        ),
        lambda srv: executor_pb2_grpc.add_ExecutorServicer_to_server(service, srv),  # type: ignore[no-untyped-call]
        [SERVICE_NAME],
    )
    info: dict[str, object] = {
        "image": image,
        "sandbox_path": ":".join([*((env.bin_dir,) if env else ()), *base_path]),
        "mtls": credentials is not None,
        "executor_keyid": signer.keyid,
        "ephemeral_key": settings.key is None,
        "max_parallel": settings.max_parallel,
        "instance": settings.instance,
        "work_dir": str(started.work.path),
        "swept_containers": started.swept_containers,
        "swept_work_dirs": started.swept_work_dirs,
    }
    return server, service, info


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``patchgate-executord``."""
    args = _parser().parse_args(argv)
    try:
        return _serve(args)
    except UsageError as exc:
        print(f"patchgate-executord: error: {exc}", file=sys.stderr)
        return 64
    except (PatchgateError, OSError) as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"patchgate-executord: error: {exc}", file=sys.stderr)
        return 1
