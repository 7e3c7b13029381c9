"""Issue 12: the signer's refusals are bounded. Lengths and counts are checked before anything
looks inside a value; a reason shows at most 256 bytes of a value and its length; an audit line is
at most 1 KiB whatever the request carried; undecodable bytes are refused and audited."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchgate.keys import Signer
from signerd.audit import AuditLog, verify_chain
from signerd.canonical import LIMITS, Limits, RawFile, RawManifest, validate
from signerd.core import AUDIT_LINE_BYTES, Caller, SignerCore
from signerd.errors import AuditError, InvalidArgument, PermissionDenied
from signerd.excerpt import REASON_BYTES, VALUE_BYTES, cap, excerpt, json_bytes
from signerd.keystore import KeyStore

H = "0" * 64
HUGE = 3_900_000
GOOD = RawManifest(
    pin_id="fixpin-a",
    algorithm="sha256",
    files=[RawFile("fixtures/a.json", H, 4)],
    seed=3,
    clock_bound_ms=1000,
    allowed_commands=[["python", "-m", "pytest"]],
)


def _refusal(raw: RawManifest, limits: Limits = LIMITS) -> str:
    with pytest.raises(InvalidArgument) as info:
        validate(raw, limits)
    return info.value.reason


def test_huge_unsafe_path_is_refused_for_its_length_first() -> None:
    """A 3.9 MB absolute path with '..', NUL and newline: the length is the reason, not safety."""
    path = "/../\x00\n" + "A" * HUGE
    reason = _refusal(dataclasses.replace(GOOD, files=[RawFile(path, H, 1)]))
    assert reason.startswith("files[0].path: longer than 1024 bytes: ")
    assert f"({len(path)} bytes)" in reason
    assert len(reason.encode()) <= REASON_BYTES


@pytest.mark.parametrize(
    ("field", "changes"),
    [
        ("pin_id", {"pin_id": "\n" * HUGE}),
        ("algorithm", {"algorithm": "\x00" * HUGE}),
        ("files[1].sha256", {"files": [RawFile("a", H, 1), RawFile("b", "Z" * HUGE, 1)]}),
        ("allowed_commands[0][1]", {"allowed_commands": [["python", "\x00" * HUGE]]}),
    ],
)
def test_every_overlong_field_is_refused_by_length_before_content(
    field: str, changes: dict[str, object]
) -> None:
    """Each string field: a length refusal naming the field, never a content refusal first."""
    reason = _refusal(dataclasses.replace(GOOD, **changes))  # type: ignore[arg-type]
    assert reason.startswith(f"{field}: longer than ")
    assert len(reason.encode()) <= REASON_BYTES


def test_counts_come_before_any_item() -> None:
    """Too many files is the refusal even when the first file is unsafe (nothing is looked at)."""
    files = [RawFile("/etc/passwd", H, 1)] + [RawFile(f"f{i}", H, 1) for i in range(3)]
    reason = _refusal(dataclasses.replace(GOOD, files=files), Limits(max_files=3))
    assert reason == "files: 4 entries, limit 3"


def test_argv_count_comes_before_argument_content() -> None:
    """Too many arguments is the refusal even with a NUL in the first one."""
    argv = ["python\x00", *["x"] * 300]
    reason = _refusal(dataclasses.replace(GOOD, allowed_commands=[argv]))
    assert reason == "allowed_commands[0]: 301 arguments, limit 256"


def test_total_text_is_bounded() -> None:
    """Strings within their own limits but over the total together are refused."""
    files = [RawFile(f"{i:04d}" + "p" * 996, H, 1) for i in range(5)]
    reason = _refusal(dataclasses.replace(GOOD, files=files), Limits(max_total_bytes=4000))
    assert reason.startswith("manifest: ")
    assert "limit 4000" in reason


def test_unsafe_path_reason_shows_a_capped_excerpt() -> None:
    """An unsafe path within the length limit: the reason shows at most 256 bytes of it."""
    path = "/" + "\x01" * 1000
    reason = _refusal(
        dataclasses.replace(GOOD, files=[RawFile(path, H, 1)]), Limits(max_path_bytes=2000)
    )
    assert reason.startswith("files[0].path: unsafe path ")
    assert "(1001 bytes)" in reason
    assert len(reason.encode()) <= REASON_BYTES


def test_excerpt_shows_short_values_whole() -> None:
    """A short value is its repr; a long one is cut with its original length."""
    assert excerpt("a\nb") == "'a\\nb'"
    long = excerpt("é" * 1000)
    assert long.endswith("… (2000 bytes)")
    assert len(long.encode()) <= VALUE_BYTES + len("… (2000 bytes)".encode())


@given(st.text(max_size=2000), st.integers(min_value=40, max_value=600))
def test_cap_fits_its_json_budget(text: str, limit: int) -> None:
    """Whatever the text (surrogates and control characters included), cap fits as JSON."""
    out = cap(text, limit)
    encoded = json.dumps(out, ensure_ascii=False).encode("utf-8")
    assert len(encoded) - 2 <= limit
    assert json_bytes(out) <= limit
    if json_bytes(text) <= limit and text.encode("utf-8", "backslashreplace").decode() == text:
        assert out == text


def _line_lengths(path: Path) -> list[int]:
    return [len(x) + 1 for x in path.read_bytes().splitlines()]


WORST_TEXT = '"\\\x01é\U0001f600' * 200_000  # every expensive character for JSON and UTF-8


def test_audit_lines_stay_under_1_kib_for_the_worst_fields(tmp_path: Path) -> None:
    """Worst caller identity, role, pin id and reason, denied and granted: each line ≤ 1 KiB."""
    audit = AuditLog(tmp_path / "audit.jsonl")
    core = SignerCore(KeyStore([Signer.generate("operator")]), audit)
    worst = Caller(WORST_TEXT, WORST_TEXT)
    with pytest.raises(PermissionDenied):
        core.sign_fixture(worst, dataclasses.replace(GOOD, pin_id=WORST_TEXT))
    client = Caller(WORST_TEXT[:1000], "client")
    for raw in (
        dataclasses.replace(GOOD, pin_id=WORST_TEXT),
        dataclasses.replace(GOOD, files=[RawFile(WORST_TEXT[:1000], H, 1)]),
        dataclasses.replace(GOOD, algorithm=WORST_TEXT[:30]),
    ):
        with pytest.raises(InvalidArgument):
            core.sign_fixture(client, raw)
    with pytest.raises(InvalidArgument):
        core.refuse_undecodable(client, "SignFixtureDigest", 4 << 20)
    quoted_pin = '"' * 64 + "\\" * 64 + "p" * 128  # valid, 256 bytes, 384 as JSON
    core.sign_fixture(Caller("x" * 1000, "client"), dataclasses.replace(GOOD, pin_id=quoted_pin))
    audit.close()
    lengths = _line_lengths(tmp_path / "audit.jsonl")
    assert len(lengths) == 6
    assert max(lengths) <= AUDIT_LINE_BYTES - 16  # room for a 17-digit seq
    assert verify_chain(tmp_path / "audit.jsonl").lines == 6
    granted = json.loads((tmp_path / "audit.jsonl").read_bytes().splitlines()[-1])
    assert granted["pin_id"] == quoted_pin  # a valid pin id is recorded whole


def test_undecodable_request_is_audited_as_invalid_argument(tmp_path: Path) -> None:
    """refuse_undecodable: one denied line naming only the size; a disallowed role is denied."""
    audit = AuditLog(tmp_path / "audit.jsonl")
    core = SignerCore(KeyStore([Signer.generate("operator")]), audit)
    with pytest.raises(InvalidArgument, match="1234 bytes that cannot be decoded"):
        core.refuse_undecodable(Caller("unix-socket", "client"), "SignFixtureDigest", 1234)
    with pytest.raises(PermissionDenied):
        core.refuse_undecodable(Caller("spiffe://x", "executor"), "GetKeyring", 2)
    audit.close()
    lines = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(x["method"], x["code"]) for x in lines] == [
        ("SignFixtureDigest", "INVALID_ARGUMENT"),
        ("GetKeyring", "PERMISSION_DENIED"),
    ]


def test_audit_log_refuses_an_overlong_line_and_stays_usable(tmp_path: Path) -> None:
    """The backstop: a record over 1 KiB is refused before it is chained or written; the log
    is not closed, and the next line is line 1 of a chain that verifies."""
    audit = AuditLog(tmp_path / "audit.jsonl")
    with pytest.raises(AuditError, match="exceeds 1024"):
        audit.append({"reason": "x" * 2000})
    assert (tmp_path / "audit.jsonl").read_bytes() == b""
    audit.append({"reason": "short"})
    audit.close()
    assert verify_chain(tmp_path / "audit.jsonl").lines == 1
