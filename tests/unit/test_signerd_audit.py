"""signerd.audit: chained lines, one-byte edits named at their line, group commit, fail closed."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signerd.audit import GENESIS, AuditLog, canonical_line, verify_chain
from signerd.errors import AuditChainError, AuditError, ConfigError


def _log(path: Path, n: int) -> None:
    log = AuditLog(path)
    for i in range(n):
        log.append({"decision": "granted", "reason": "", "i": i})
    log.close()


def test_empty_or_missing_log_verifies(tmp_path: Path) -> None:
    """No file and an empty file are both a chain of zero lines."""
    assert verify_chain(tmp_path / "none").lines == 0
    (tmp_path / "empty").write_bytes(b"")
    assert verify_chain(tmp_path / "empty").last_line_sha256 == GENESIS


def test_lines_chain_to_their_predecessor(tmp_path: Path) -> None:
    """Line 1 points at the genesis hash, every later line at the previous one; seq is the line."""
    path = tmp_path / "a.jsonl"
    _log(path, 3)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["prev"] == GENESIS
    assert [x["seq"] for x in lines] == [1, 2, 3]
    assert verify_chain(path).lines == 3


def test_reopening_continues_the_chain(tmp_path: Path) -> None:
    """A restarted daemon appends to the same chain."""
    path = tmp_path / "a.jsonl"
    _log(path, 2)
    _log(path, 2)
    assert verify_chain(path).lines == 4


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_one_byte_change_is_named_at_its_line(tmp_path: Path, data: st.DataObject) -> None:
    """Changing any single byte of a 4-line log breaks the chain at the line holding that byte."""
    path = tmp_path / "h.jsonl"
    if not path.exists():
        _log(path, 4)
    original = path.read_bytes()
    pos = data.draw(st.integers(0, len(original) - 1))
    new = data.draw(st.integers(0, 255).filter(lambda b: b != original[pos]))
    changed = bytearray(original)
    changed[pos] = new
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(bytes(changed))
    with pytest.raises(AuditChainError) as info:
        verify_chain(edited)
    assert info.value.line == original[:pos].count(b"\n") + 1


def test_rewritten_line_with_recomputed_hash_is_caught_by_the_next_line(tmp_path: Path) -> None:
    """Re-sealing an edited line moves the break to the following line (prev no longer matches)."""
    path = tmp_path / "a.jsonl"
    _log(path, 3)
    lines = path.read_bytes().split(b"\n")
    rec = json.loads(lines[1])
    rec["decision"] = "denied"
    body = {k: v for k, v in rec.items() if k != "hash"}
    rec["hash"] = hashlib.sha256(canonical_line(body)).hexdigest()
    lines[1] = canonical_line(rec)
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(AuditChainError) as info:
        verify_chain(path)
    assert info.value.line == 3


def test_incomplete_last_line_is_broken(tmp_path: Path) -> None:
    """A torn final write (no newline) is reported at that line."""
    path = tmp_path / "a.jsonl"
    _log(path, 2)
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(AuditChainError) as info:
        verify_chain(path)
    assert info.value.line == 2


def test_opening_a_broken_log_refuses(tmp_path: Path) -> None:
    """The daemon will not append to a chain it cannot verify."""
    path = tmp_path / "a.jsonl"
    _log(path, 2)
    path.write_bytes(path.read_bytes().replace(b"granted", b"grantee", 1))
    with pytest.raises(ConfigError, match="line 1"):
        AuditLog(path)


def test_unwritable_location_refuses(tmp_path: Path) -> None:
    """An audit log in a missing directory is a ConfigError at start."""
    with pytest.raises(ConfigError, match="cannot write"):
        AuditLog(tmp_path / "missing" / "a.jsonl")


def test_concurrent_appends_form_one_valid_chain(tmp_path: Path) -> None:
    """16 threads x 50 appends: 800 lines, one unbroken chain, each seq once."""
    path = tmp_path / "a.jsonl"
    log = AuditLog(path)

    def work(t: int) -> None:
        for i in range(50):
            log.append({"t": t, "i": i})

    threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    log.close()
    assert verify_chain(path).lines == 800


def test_write_failure_closes_the_log_for_good(tmp_path: Path) -> None:
    """After a failed write (simulated: the descriptor goes away) every append raises."""
    log = AuditLog(tmp_path / "a.jsonl")
    log.append({"ok": True})
    os.close(log._fd)  # the disk "fails": os.write now raises EBADF
    with pytest.raises(AuditError):
        log.append({"ok": False})
    with pytest.raises(AuditError, match="earlier failure"):
        log.append({"ok": False})


def test_append_after_close_raises(tmp_path: Path) -> None:
    """A closed log refuses appends rather than dropping them."""
    log = AuditLog(tmp_path / "a.jsonl")
    log.close()
    with pytest.raises(AuditError):
        log.append({})


def test_inserted_whitespace_is_caught_at_its_line(tmp_path: Path) -> None:
    """A line that parses to the same record but is not its canonical bytes is refused."""
    path = tmp_path / "a.jsonl"
    _log(path, 3)
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b",", b", ", 1)
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(AuditChainError, match="canonical") as info:
        verify_chain(path)
    assert info.value.line == 2
