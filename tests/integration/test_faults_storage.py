"""Fault injection: the executor's blob store on a full disk (a 2 MiB tmpfs mounted by the test).

The upload of a workspace that does not fit must end cleanly — a refusal or a transport record,
never an outcome — with nothing half-written in the store (no temp file, every blob hashes to its
name), and the daemon must keep serving: a repository that fits runs afterwards.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchgate.errors import RefusedError
from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.request import ExecuteRequest
from tests.integration.fixtures_executor import billing_case, start_executor

pytestmark = [pytest.mark.integration, pytest.mark.docker]

TMPFS_SIZE = "2m"


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted under tmp_path (as root); unmounted afterwards."""
    mnt = tmp_path / "fullstore"
    mnt.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs", str(mnt)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root/CAP_SYS_ADMIN): {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, check=False)


def _store_is_consistent(store: Path) -> list[str]:
    """Problems: temp files left, or blobs whose bytes do not hash to their name."""
    problems = []
    for p in store.rglob("*"):
        if not p.is_file() or p == store / ".users":  # the store's lock file (shared stores)
            continue
        if p.parent.name == "tmp" or p.name.startswith(".upload-"):
            problems.append(f"temp file left: {p.relative_to(store)}")
        elif hashlib.sha256(p.read_bytes()).hexdigest() != p.name:
            problems.append(f"blob does not hash to its name: {p.relative_to(store)}")
    return problems


def test_full_blob_store_is_a_clean_refusal(
    docker_engine: None, operator_key, tmp_path: Path, small_tmpfs: Path
) -> None:
    """3 MiB workspace file, 2 MiB store: no outcome, nothing half-written, daemon serves on."""
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--store-dir", str(small_tmpfs))
    try:
        big = billing_case(tmp_path / "big", operator_key.signer)
        (big.workspace / "billing" / "blob.bin").write_bytes(os.urandom(3 << 20))
        with ExecutorClient(daemon.address) as client:
            try:
                result: ExecutionResult | RefusedError = client.execute(
                    ExecuteRequest(
                        envelope=big.envelope,
                        workspace=big.workspace,
                        fixture_root="fixtures",
                        properties=big.properties,
                        runs=1,
                    )
                )
            except RefusedError as exc:
                result = exc
            print(f"full-store result: {result!r}"[:400])
            if isinstance(result, ExecutionResult):
                assert result.outcomes == ()
                assert {t.kind for t in result.transport} <= {"resource_exhausted", "internal"}
                assert result.transport
            assert _store_is_consistent(small_tmpfs) == []
            small = billing_case(tmp_path / "small", operator_key.signer)
            after = client.execute(
                ExecuteRequest(
                    envelope=small.envelope,
                    workspace=small.workspace,
                    fixture_root="fixtures",
                    properties=small.properties,
                    runs=1,
                )
            )
        assert [o.outcome for o in after.outcomes] == ["pass"], after.transport
        assert _store_is_consistent(small_tmpfs) == []
    finally:
        daemon.stop()
