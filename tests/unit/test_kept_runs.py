"""The signed run results a check used are kept beside its receipt as received (issue 43)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from client.gate.runs.kept import keep_signed, signed_runs_dir
from client.gate.runs.targets import TargetedClient
from patchgate.envelope import Envelope, sign_envelope
from patchgate.executor_client import ExecutionResult
from patchgate.keys import Signer
from patchgate.request import ExecuteRequest

EXECUTOR = Signer.generate("executor")
REQUEST = ExecuteRequest(
    envelope=sign_envelope(b"{}", EXECUTOR), workspace=Path("/ws"), fixture_root="f", properties=()
)


def _result(envelope: Envelope | None) -> ExecutionResult:
    return ExecutionResult(
        address="unix:/x", lane="local", executor_keyid=EXECUTOR.keyid,
        observed_fixture_digest="d", outcomes=(), transport=(), timings={}, sandbox={},
        envelope=envelope, uploaded_bytes=0,
    )  # fmt: skip


class _Inner:
    address = "unix:/x"

    def __init__(self, result: ExecutionResult) -> None:
        self.result = result

    def execute(self, request: object, on_progress: object = None) -> ExecutionResult:
        return self.result

    def close(self) -> None:
        return None


def test_a_verified_result_is_kept_as_received(tmp_path: Path) -> None:
    envelope = sign_envelope(b'{"x": 1}', EXECUTOR)
    keep = signed_runs_dir(tmp_path)
    TargetedClient(_Inner(_result(envelope)), (), keep=keep).execute(REQUEST)
    (kept,) = keep.iterdir()
    assert Envelope.from_json(json.loads(kept.read_text())) == envelope
    assert keep == tmp_path / "signed_runs"


def test_a_result_without_an_envelope_keeps_nothing_and_no_keep_writes_nothing(
    tmp_path: Path,
) -> None:
    keep = tmp_path / "signed_runs"
    TargetedClient(_Inner(_result(None)), (), keep=keep).execute(REQUEST)
    assert not keep.exists()
    envelope = sign_envelope(b"{}", EXECUTOR)
    TargetedClient(_Inner(_result(envelope)), ()).execute(REQUEST)
    assert not keep.exists()


def test_two_results_are_two_files_named_by_their_payload(tmp_path: Path) -> None:
    one, two = sign_envelope(b'{"n": 1}', EXECUTOR), sign_envelope(b'{"n": 2}', EXECUTOR)
    paths = {keep_signed(tmp_path, one), keep_signed(tmp_path, two), keep_signed(tmp_path, one)}
    assert {p.name for p in paths} == {
        f"{hashlib.sha256(e.payload).hexdigest()[:24]}.json" for e in (one, two)
    }
