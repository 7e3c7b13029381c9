"""A real daemon's audit log: a line per request, the chain verifies, a one-byte edit is named."""

from __future__ import annotations

import json
import re

import pytest

from patchgate.digest import FileEntry, Manifest
from patchgate.errors import RefusedError
from patchgate.signer_client import SignerClient
from tests.integration.fixtures_signer import SignerDaemon, run_signerd

pytestmark = pytest.mark.integration


def _fill(daemon: SignerDaemon) -> None:
    good = Manifest(
        pin_id="p",
        files={"f/a": FileEntry("c" * 64, 1)},
        clock_bound_ms=5,
        allowed_commands=(("x",),),
    )
    bad = Manifest(pin_id="p", files={"f/a": FileEntry("c" * 64, 1)}, clock_bound_ms=0)
    with SignerClient(daemon.address) as c:
        for _ in range(3):
            c.sign_fixture_digest(good)
        with pytest.raises(RefusedError):
            c.sign_fixture_digest(bad)
        c.get_keyring()


def test_every_request_leaves_one_chained_line(signer_daemon: SignerDaemon) -> None:
    """5 requests → 5 lines with time, caller, decision, reason; audit-verify says ok."""
    _fill(signer_daemon)
    lines = [json.loads(x) for x in signer_daemon.audit_log.read_text().splitlines()]
    assert [x["decision"] for x in lines] == ["granted"] * 3 + ["denied", "granted"]
    assert all(
        {"time", "caller", "decision", "reason", "prev", "hash", "seq"} <= set(x) for x in lines
    )
    assert lines[0]["digest"]
    assert "clock_bound_ms" in lines[3]["reason"]
    res = run_signerd("audit-verify", str(signer_daemon.audit_log))
    assert res.returncode == 0
    assert "ok, 5 lines" in res.stdout


@pytest.mark.parametrize("line_no", [1, 3, 5])
def test_one_byte_edit_is_detected_at_that_line(signer_daemon: SignerDaemon, line_no: int) -> None:
    """Changing one byte of line N makes audit-verify fail naming line N."""
    _fill(signer_daemon)
    assert signer_daemon.stop() == 0
    data = bytearray(signer_daemon.audit_log.read_bytes())
    starts = [0] + [m.end() for m in re.finditer(b"\n", bytes(data))]
    line = bytes(data[starts[line_no - 1] : starts[line_no]])
    offset = starts[line_no - 1] + line.index(b'"decision":"') + len(b'"decision":"')
    data[offset] ^= 0x01  # "granted"/"denied" → one flipped bit in one byte
    signer_daemon.audit_log.write_bytes(bytes(data))
    res = run_signerd("audit-verify", str(signer_daemon.audit_log))
    assert res.returncode == 1
    assert f"broken at line {line_no}:" in res.stderr


def test_daemon_refuses_to_start_on_a_broken_log(signer_daemon: SignerDaemon) -> None:
    """A tampered log stops the next start (fail closed) and names the line."""
    _fill(signer_daemon)
    assert signer_daemon.stop() == 0
    text = signer_daemon.audit_log.read_text().replace('"granted"', '"grantee"', 1)
    signer_daemon.audit_log.write_text(text)
    key = str(signer_daemon.keyring_path)[: -len(".pub")]
    res = run_signerd(
        "serve", "--key", key, "--listen", f"unix:{signer_daemon.socket_dir}/again.sock",
        "--audit-log", str(signer_daemon.audit_log),
    )  # fmt: skip
    assert res.returncode == 1
    assert "broken at line 1" in res.stderr
