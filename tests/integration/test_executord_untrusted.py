"""Nothing the sandbox writes is trusted by the host (issue 12): real executor, real Docker.

Each test is an attack from the code under test: links, FIFOs, floods of the report channel, a full
results area, a gigabyte of stdout. The safe outcome is asserted: never ``pass``, no host byte in
the reply, bounded time, memory and disk, and an executor that still answers.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.keys import Signer
from patchgate.request import ExecuteRequest
from tests.integration.fixtures_executor import (
    PYTEST,
    ExecutorProc,
    billing_case,
    labeled_containers,
    prop,
    start_executor,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]

REPORTER_SOCK = """
import sys

def reporter_socket():
    return sys.modules["patchgate_reporter"]._REPORTER.channel._sock
"""

LINKS = """
import os

def test_plant_links():
    planted = []
    for d in ("/tmp", "/results", "/patchgate/run", "/workspace", os.environ["HOME"]):
        for name in ("junit.xml", "report.sock", "targets.json"):
            try:
                os.symlink(TARGET, os.path.join(d, name + ".lnk"))
                os.symlink(TARGET, os.path.join(d, name))
                planted.append(d)
            except OSError as exc:
                pass
    assert False, "links planted in " + ",".join(sorted(set(planted)))
"""

FIFO = """
import os, time

def test_fifo_and_a_stuck_channel():
    os.mkfifo("/tmp/junit.xml")
    for d in ("/patchgate/run", "/results"):
        try:
            os.mkfifo(d + "/report.fifo")
        except OSError:
            pass
    sock = reporter_socket()
    sock.sendall(b'{"v":1,"kind":"item"')  # half a record, then hang with the stream open
    time.sleep(600)
"""

FLOOD = """
import os, socket

def test_flood():
    chunk = b"\\0" * (1 << 20)
    sent = 0
    try:
        for _ in range(1024):  # 1 GiB of zeros, no newline
            reporter_socket().sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    extra = socket.socket(socket.AF_UNIX)
    extra.connect("/patchgate/run/report.sock")
    try:
        extra.sendall(b'{"v":1}\\n' * 100000)
    except OSError:
        pass
    with open("/tmp/sparse.xml", "wb") as fh:
        fh.truncate(3 << 29)  # a sparse 1.5 GiB "report"
    print("flooded", sent)
"""

RECORD_FLOOD = """
def test_many_small_records():
    line = b'{"v":1,"nonce":"x","seq":0,"kind":"item"}\\n'
    try:
        for _ in range(1 << 20):
            reporter_socket().sendall(line * 64)
    except OSError:
        pass
"""

FILL_TMP = """
def test_fill_tmp():
    written = 0
    block = b"x" * (1 << 20)
    try:
        with open("/tmp/fill", "wb") as fh:
            while written < (1 << 31):
                fh.write(block)
                fh.flush()
                written += len(block)
    except OSError as exc:
        raise AssertionError(f"tmp full after {written >> 20} MiB: {exc.strerror}") from None
    raise AssertionError("never full")
"""

STDOUT_GIB = """
import os

def test_print_a_gigabyte():
    block = b"y" * (1 << 20)
    for _ in range(1024):
        os.write(1, block)
    os.write(1, b"\\nTHE-END\\n")
"""


def _run(
    daemon: ExecutorProc,
    signer: Signer,
    tmp: Path,
    name: str,
    text: str,
    *,
    command: tuple[str, ...] = PYTEST,
    **kw: Any,
) -> ExecutionResult:
    case = billing_case(
        tmp,
        signer,
        extra_files={f"properties/test_{name}.py": REPORTER_SOCK + text},
        properties=(prop(name, f"properties/test_{name}.py", command),),
        **kw,
    )
    # --judge off: the attacker here is the property's test module itself, which under the judge
    # runs in the judge (reviewed base code, never the patched code); these tests hold the
    # single-process report channel's own defences, which the judge-off mode keeps
    with ExecutorClient(daemon.address) as client:
        return client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
                judge="off",
            )
        )


def _signed_report(result: ExecutionResult) -> dict[str, Any]:
    assert result.envelope is not None
    return json.loads(result.envelope.payload)["predicate"]["report"]  # type: ignore[no-any-return]


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _healthy(address: str) -> bool:
    with grpc.insecure_channel(address) as ch:
        reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def test_links_planted_anywhere_writable_leak_no_host_byte(executor_daemon, operator_key, tmp_path):
    """Links to an existing and to a missing host file: never pass, no byte of the file anywhere in
    the reply, and the same outcome message either way (no existence oracle)."""
    secret = tmp_path / "host-secret.txt"
    token = uuid.uuid4().hex
    secret.write_text(f"TOP-SECRET-{token}\n", encoding="utf-8")
    secret.chmod(0o644)
    signatures = []
    for label, target in (("exists", secret), ("missing", tmp_path / "no-such-file")):
        text = LINKS.replace("TARGET", repr(str(target)))
        result = _run(executor_daemon, operator_key.signer, tmp_path / label, "links", text)
        assert result.transport == ()
        assert [o.outcome for o in result.outcomes] == ["fail", "fail"]
        assert "links planted in /tmp" in result.outcomes[0].failure_signature
        assert "/patchgate/run" not in result.outcomes[0].failure_signature  # read-only mount
        assert token not in json.dumps(_signed_report(result))
        signatures.append(result.outcomes[0].failure_signature)
    assert signatures[0] == signatures[1]


def test_fifo_and_a_stuck_report_stream_end_within_the_bound(docker_engine, operator_key, tmp_path):
    """A FIFO where a report used to be and a half-sent record on a stream held open: the run ends
    at its clock bound, the executor still answers, and it stops on SIGTERM."""
    daemon = start_executor(tmp_path, operator_key.keyring_path)
    try:
        t0 = time.monotonic()
        result = _run(
            daemon, operator_key.signer, tmp_path / "a", "fifo", FIFO, clock_bound_ms=5000
        )
        assert [o.outcome for o in result.outcomes] == ["exceeded_bound", "exceeded_bound"], result
        assert time.monotonic() - t0 < 60
        assert _healthy(daemon.address)
        again = _run(daemon, operator_key.signer, tmp_path / "b", "links", LINKS.replace(
            "TARGET", repr("/etc/hostname")))  # fmt: skip
        assert len(again.outcomes) == 2
    finally:
        t1 = time.monotonic()
        code = daemon.stop(timeout=30)
    assert code == 0, daemon.log()[-3000:]
    assert time.monotonic() - t1 < 30
    assert labeled_containers(daemon.instance) == []


@pytest.mark.parametrize("text", [FLOOD, RECORD_FLOOD], ids=["zeros", "small-records"])
def test_flooding_the_report_channel_is_error_and_memory_stays_flat(
    executor_daemon, operator_key, tmp_path, text
):
    """A gigabyte of zeros, a million small records, a second connection, a sparse file: the
    run is error, and the executor's resident memory grows by less than 50 MB."""
    before = _rss_kib(executor_daemon.proc.pid)
    result = _run(
        executor_daemon, operator_key.signer, tmp_path, "flood", text, clock_bound_ms=120000
    )
    grown_mb = (_rss_kib(executor_daemon.proc.pid) - before) / 1024
    assert [o.outcome for o in result.outcomes] == ["error", "error"]
    assert "report channel" in result.outcomes[0].failure_signature
    assert grown_mb < 50, f"executor RSS grew by {grown_mb:.1f} MB"


def test_a_full_results_area_ends_the_run_and_writes_nothing_to_host_disk(
    docker_engine, operator_key, tmp_path
):
    """The only writable place is a size-capped tmpfs: filling it fails the write at the cap;
    the executor's own state (its only host directory) does not grow with it."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--tmpfs-size", "16m")
    try:
        result = _run(daemon, operator_key.signer, tmp_path / "c", "fill", FILL_TMP)
        work = subprocess.run(
            ["du", "-sk", str(daemon.state_dir / "work")], capture_output=True, text=True,
            check=False,
        ).stdout  # fmt: skip
    finally:
        daemon.stop()
    assert [o.outcome for o in result.outcomes] == ["fail", "fail"]
    sig = result.outcomes[0].failure_signature
    assert "No space left on device" in sig
    full_mib = int(sig.split("tmp full after ")[1].split(" MiB")[0])
    assert full_mib <= 16
    assert int(work.split()[0] if work else 0) < 1024  # KiB: no run wrote to the host


def test_a_gigabyte_of_stdout_leaves_no_engine_log_and_keeps_a_tail(
    executor_daemon, operator_key, tmp_path
):
    """Container logs are off (log driver none, no LogPath); the executor keeps a 64 KiB tail."""
    seen: dict[str, str] = {}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set() and not seen:
            for cid in labeled_containers(executor_daemon.instance):
                out = subprocess.run(
                    ["docker", "inspect", "-f", "{{.HostConfig.LogConfig.Type}}|{{.LogPath}}", cid],
                    capture_output=True, text=True, check=False,
                ).stdout.strip()  # fmt: skip
                if out:
                    seen[cid] = out
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = _run(
            executor_daemon, operator_key.signer, tmp_path, "gib", STDOUT_GIB,
            command=(*PYTEST, "-s"), clock_bound_ms=240000,
        )  # fmt: skip
    finally:
        stop.set()
        watcher.join(5)
    assert [o.outcome for o in result.outcomes] == ["pass", "pass"]
    assert seen, "never saw the sandbox while it ran"
    assert all(v == "none|" for v in seen.values()), seen
    logs = _signed_report(result)["logs"]
    assert len(logs) == 2
    for log in logs:
        assert int(log["stdout_bytes"]) >= 1 << 30
        assert "THE-END\n" in log["stdout_tail"][-200:]  # pytest's summary line follows
        assert len(log["stdout_tail"]) <= 64 << 10
