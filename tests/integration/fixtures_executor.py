"""pytest fixtures (executor): real daemons over real sockets. Loaded by tests/conftest.py.

- ``docker_engine`` (session): ``scripts/docker.sh start`` (fails loudly if no engine comes up); at
  the end checks that no container with the executor label is left and runs ``docker.sh stop``,
  which stops only a dockerd the script itself started.
- ``executor_daemon``: ``patchgate-executord serve --image host`` on a tmp unix socket, given only
  the operator public keyring of ``operator_key``.
- ``start_executor(...)``: the same with custom flags / environment; ``billing_case(...)``: a tmp
  copy of ``examples/billing`` with extra property files and an envelope signed by the operator key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata as md
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from patchgate.digest import Manifest, hash_files, scan_fixture_tree
from patchgate.envelope import Envelope, fixture_statement, sign_envelope
from patchgate.keys import Signer
from patchgate.ledgers import now_utc
from patchgate.pins import PropertyPin

REPO = Path(__file__).resolve().parents[2]
BILLING = REPO / "examples" / "billing"
LABEL = "patchgate.executord"
PYTEST = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
_INSTANCES: set[str] = set()  # label values of the daemons this session started


@dataclasses.dataclass
class ExecutorProc:
    """A running ``patchgate-executord serve`` subprocess."""

    address: str
    proc: subprocess.Popen[str]
    keyring_path: Path
    store_dir: Path
    state_dir: Path
    log_path: Path
    instance: str

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM by pid, wait; SIGKILL if it does not drain in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return int(self.proc.returncode)

    def log(self) -> str:
        """What the daemon wrote to stderr so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def sandbox_python() -> Path:
    """A lean interpreter for the tests' sandboxes (image ``host``, ``--host-python``): a venv of
    this interpreter holding pytest and what it requires, copied from this environment (the same
    versions, no network), and nothing else. The test environment's other pytest plugins
    (Hypothesis, pytest-timeout) are patchgate's own tooling, not the target repositories': with
    them every judge started by importing all of Hypothesis (about half a second a sandbox run,
    paid again by every mutant), which a deployed executor's interpreter does not carry. Built
    once per environment, atomically (a temp dir renamed into place)."""
    tag = hashlib.sha256(f"{sys.prefix}:{md.version('pytest')}".encode()).hexdigest()[:12]
    root = Path(tempfile.gettempdir()) / f"pg-sandbox-python-{tag}"
    python = root / "bin" / "python"
    if python.exists():
        return python
    work = Path(tempfile.mkdtemp(prefix="pg-sandbox-python-", dir=tempfile.gettempdir()))
    try:
        subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip",
                        str(work / "venv")], check=True, capture_output=True)  # fmt: skip
        site = next((work / "venv" / "lib").glob("python3*/site-packages"))
        todo, done = ["pytest"], set()
        while todo:
            name = todo.pop()
            if name in done:
                continue
            done.add(name)
            dist = md.distribution(name)
            for f in dist.files or ():
                if f.parts and f.parts[0] != ".." and not f.name.endswith(".pyc"):
                    dst = site / f
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(Path(str(dist.locate_file(f))), dst)
            for text in dist.requires or ():
                req = Requirement(text)
                if req.marker is None or req.marker.evaluate({"extra": ""}):
                    todo.append(req.name)
        with contextlib.suppress(OSError):
            (work / "venv").rename(root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return python


def start_executor(
    workdir: Path,
    keyring_path: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> ExecutorProc:
    """Start the executor daemon on a unix socket under a short tmp dir; wait for 'listening'."""
    sockdir = Path(tempfile.mkdtemp(prefix="pgx-", dir="/tmp"))
    state = workdir / "executord-state"
    store = state / "blobs"
    log_path = workdir / f"executord-{uuid.uuid4().hex[:6]}.log"
    instance = f"pytest-{uuid.uuid4().hex[:12]}"
    _INSTANCES.add(instance)
    args = [
        sys.executable, "-m", "executord", "serve",
        "--operator-keyring", str(keyring_path),
        "--listen", f"unix:{sockdir}/executor.sock",
        "--image", "host",
        "--state-dir", str(state),
        "--store-dir", str(store),
        "--instance", instance,
        *extra,
    ]  # fmt: skip
    if "--image" not in extra and "--host-python" not in extra:
        args += ["--host-python", str(sandbox_python())]
    full_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    with open(log_path, "w", encoding="utf-8") as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True, env=full_env)
    assert proc.stdout is not None
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    if not line or not line[0].startswith("listening "):
        proc.kill()
        proc.wait(10)
        proc.stdout.close()
        raise RuntimeError(f"executord did not start:\n{log_path.read_text()}")
    return ExecutorProc(
        address=line[0].split(" ", 1)[1].strip(),
        proc=proc,
        keyring_path=keyring_path,
        store_dir=store,
        state_dir=state,
        log_path=log_path,
        instance=instance,
    )


def _processes_naming(text: str) -> list[int]:
    """Pids whose command line holds ``text`` (a test's own unique temp directory)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def stop_everything_under(path: Path) -> None:
    """Stop every lane a test started under its own ``path`` before the directory is removed,
    even when the test failed: ``patchgate down`` of each lane.json, then SIGKILL by pid of any
    process still naming ``path`` (an ``up`` cut short writes no lane.json). Removing the
    directory first left an orphan ``patchgate-executord`` no ``down`` could find any more."""
    patchgate = str(Path(sys.executable).parent / "patchgate")
    for lane in sorted(path.rglob("lane.json")):
        subprocess.run(
            [patchgate, "down", "--state", str(lane.parent)], capture_output=True,
            check=False, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    for pid in _processes_naming(str(path)):
        if pid != os.getpid():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def labeled_containers(instance: str | None = None, docker_host: str | None = None) -> list[str]:
    """Ids of containers (running or not) with the executor label (of one daemon, if named)."""
    env = {**os.environ, **({"DOCKER_HOST": docker_host} if docker_host else {})}
    label = LABEL if instance is None else f"{LABEL}={instance}"
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={label}"],
        capture_output=True, text=True, check=True, env=env,
    ).stdout  # fmt: skip
    return out.split()


def containers_created_since(since: float, instance: str) -> list[str]:
    """Ids of containers created with ``instance``'s label since the unix time ``since``."""
    out = subprocess.run(
        ["docker", "events", "--since", f"{since:.3f}", "--until", f"{time.time():.3f}",
         "--filter", "type=container", "--filter", "event=create",
         "--filter", f"label={LABEL}={instance}", "--format", "{{.ID}}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return out.split()


@dataclasses.dataclass
class PrivateDockerd:
    """A dockerd of our own (own data/exec root, pid file, socket): safe to stop in a test."""

    host: str
    proc: subprocess.Popen[bytes]
    root: Path

    def stop(self) -> None:
        """SIGTERM by pid and wait."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def private_dockerd(docker_engine: None) -> Iterator[PrivateDockerd]:
    """A second dockerd that only this test uses (never the shared engine)."""
    root = Path(tempfile.mkdtemp(prefix="pgdockerd-", dir="/tmp"))
    host = f"unix://{root}/docker.sock"
    args = [
        "dockerd", "--data-root", str(root / "data"), "--exec-root", str(root / "exec"),
        "--pidfile", str(root / "dockerd.pid"), "-H", host, "--bridge=none",
        "--iptables=false", "--ip-masq=false", "--ip-forward=false",
    ]  # fmt: skip
    with open(root / "dockerd.log", "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    d = PrivateDockerd(host=host, proc=proc, root=root)
    env = {**os.environ, "DOCKER_HOST": host}
    for _ in range(60):
        ok = subprocess.run(["docker", "version"], capture_output=True, env=env, check=False)
        if ok.returncode == 0:
            break
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    else:
        d.stop()
        raise RuntimeError(f"private dockerd did not come up: {(root / 'dockerd.log').read_text()}")
    yield d
    d.stop()
    subprocess.run(["umount", "-R", str(root / "data")], capture_output=True, check=False)
    shutil.rmtree(root, ignore_errors=True)


def wait_for(pred: Callable[[], bool], *, timeout: float) -> bool:
    """Poll ``pred`` every 0.2 s until it is true (True) or ``timeout`` seconds pass (False)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[None]:
    """A Docker engine (docker.sh starts one if none answers); no labeled leftovers after.

    An engine that already answered (scripts/test.sh's, a developer's) is left running: the
    session stops only an engine it started itself.
    """
    script = str(REPO / "scripts" / "docker.sh")
    answered = (
        subprocess.run(
            ["docker", "version"], capture_output=True, check=False, stdin=subprocess.DEVNULL
        ).returncode
        == 0
    )
    subprocess.run([script, "start"], check=True, stdin=subprocess.DEVNULL)
    yield
    left = [c for i in sorted(_INSTANCES) for c in labeled_containers(i)]
    if not answered:
        subprocess.run([script, "stop"], check=True, stdin=subprocess.DEVNULL)
    assert left == [], f"containers with label {LABEL} left behind: {left}"


@pytest.fixture
def executor_daemon(
    docker_engine: None, tmp_path: Path, operator_key: object
) -> Iterator[ExecutorProc]:
    """A running executor given only the operator public keyring."""
    daemon = start_executor(tmp_path, operator_key.keyring_path)  # type: ignore[attr-defined]
    yield daemon
    daemon.stop()


@dataclasses.dataclass(frozen=True)
class BillingCase:
    """A tmp copy of examples/billing, its signed fixture envelope, and the properties to run."""

    workspace: Path
    envelope: Envelope
    manifest: Manifest
    properties: tuple[PropertyPin, ...]


def prop(pid: str, nodeid: str, command: tuple[str, ...] = PYTEST) -> PropertyPin:
    """A property pin running one pytest node id."""
    return PropertyPin(
        id=pid,
        claim=pid,
        property_class="pure_fn",
        covers=("billing.prorate",),
        command=(*command, nodeid),
    )


def billing_case(
    tmp_path: Path,
    signer: Signer,
    *,
    extra_files: dict[str, str] | None = None,
    properties: tuple[PropertyPin, ...] = (),
    clock_bound_ms: int = 30000,
    seed: int = 7,
    allowed: tuple[tuple[str, ...], ...] = (PYTEST,),
) -> BillingCase:
    """Copy the billing repo, add ``extra_files``, sign its fixture manifest with ``signer``."""
    ws = tmp_path / "billing"
    shutil.copytree(BILLING, ws, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for rel, text in (extra_files or {}).items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    pinned = [p.relative_to(ws).as_posix() for p in (ws / "fixtures").rglob("*") if p.is_file()]
    files = hash_files(scan_fixture_tree(ws, "fixtures", pinned))
    manifest = Manifest(
        pin_id="fixpin-test",
        files=files,
        seed=seed,
        clock_bound_ms=clock_bound_ms,
        allowed_commands=allowed,
    )
    envelope = sign_envelope(fixture_statement(manifest, signer, now_utc()), signer)
    if not properties:
        properties = (
            prop(
                "billing.prorate.non_negative",
                "properties/test_billing.py::test_prorate_non_negative",
            ),
        )
    return BillingCase(workspace=ws, envelope=envelope, manifest=manifest, properties=properties)
