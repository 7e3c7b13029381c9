"""Run by another environment's Python: patchgate, as installed there, imports and serves.

``python install_smoke.py WORKDIR [--executor]``: makes an operator key with that environment's
``patchgate-signerd keygen``, serves it on a unix socket, checks the health service and one signed
fixture digest (the contract's test vector, verified against the keyring), then, with
``--executor``, serves ``patchgate-executord`` on the shared Docker engine and checks its health.
Every daemon is stopped by its pid with SIGTERM and must exit 0. Prints ``smoke: ok`` last.
Imports nothing of the tests (they are not installed there).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from patchgate.digest import FileEntry, Manifest
from patchgate.healthcheck import check_health
from patchgate.keys import Keyring
from patchgate.signer_client import SignerClient

BIN = Path(sys.executable).parent
VECTOR = Manifest(
    pin_id="fixpin-vector",
    files={
        "fixtures/b.txt": FileEntry(hashlib.sha256(b"hello").hexdigest(), 5),
        "fixtures/a.json": FileEntry(hashlib.sha256(b'{"x": 1}\n').hexdigest(), 9),
    },
    seed=7,
    clock_bound_ms=30000,
    allowed_commands=(
        ("python", "-m", "pytest", "-q"),
        ("python", "-m", "pytest", "-q", "-k", "prorate"),
    ),
)
VECTOR_DIGEST = "6ea8f3fe7ff21bd234d472a92daa33697534e140f1426d7981174b0181b87302"


def serve(argv: list[str], log: Path) -> tuple[subprocess.Popen[str], str]:
    """Start a daemon and wait for its ``listening ADDR`` line; return it and the address."""
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
    line: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(120)
    if not line or not line[0].startswith("listening "):
        proc.kill()
        proc.wait(10)
        raise SystemExit(f"{argv[0]} did not start:\n{log.read_text()}")
    return proc, line[0].split(" ", 1)[1].strip()


def stop(proc: subprocess.Popen[str], name: str) -> None:
    proc.terminate()
    code = proc.wait(60)
    if proc.stdout is not None:
        proc.stdout.close()
    if code != 0:
        raise SystemExit(f"{name} exited {code} on SIGTERM")


def main() -> None:
    work = Path(sys.argv[1])
    key = work / "operator.key"
    subprocess.run([str(BIN / "patchgate-signerd"), "keygen", "--out", str(key)], check=True)
    signer, address = serve(
        [str(BIN / "patchgate-signerd"), "serve", "--key", str(key),
         "--listen", f"unix:{work}/signer.sock", "--audit-log", str(work / "audit.jsonl")],
        work / "signerd.log",
    )  # fmt: skip
    try:
        assert check_health(address) == "SERVING", check_health(address)
        with SignerClient(address) as client:
            _, statement = client.sign_and_verify(VECTOR, Keyring.load(Path(f"{key}.pub")))
        assert statement.digest == VECTOR_DIGEST, statement.digest
    finally:
        stop(signer, "patchgate-signerd")
    if "--executor" in sys.argv[2:]:
        executor, address = serve(
            [str(BIN / "patchgate-executord"), "serve", "--operator-keyring", f"{key}.pub",
             "--listen", f"unix:{work}/executor.sock", "--image", "host",
             "--host-python", sys.executable, "--state-dir", str(work / "state"),
             "--instance", f"pytest-{uuid.uuid4().hex[:12]}"],
            work / "executord.log",
        )  # fmt: skip
        try:
            assert check_health(address) == "SERVING", check_health(address)
        finally:
            stop(executor, "patchgate-executord")
    print("smoke: ok")


if __name__ == "__main__":
    main()
