"""What to do next (issue 24): the codes page's words shipped in the package, ``patchgate
explain``, a ``next`` line per code after a rejection, a daemon that does not answer named with its
address and lane, ``check`` without a lane pointing at ``patchgate up``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from client.cli import main
from client.report.markdown import render_markdown
from client.report.model import Report
from client.report.text import render_text, transport_line
from client.verdict.codes import (
    CODES,
    DECISIONS,
    NEXT_STEPS,
    POSTURES,
    explain,
    known_names,
    unreachable_words,
)
from client.verdict.receipt import ReceiptFacts, build_receipt
from patchgate.ledgers import POSTURES as RECEIPT_POSTURES

ROOT = Path(__file__).resolve().parents[2]


def _rows(first: str) -> dict[str, list[str]]:
    doc = (ROOT / "docs" / "reference" / "codes.md").read_text(encoding="utf-8")
    rows: dict[str, list[str]] = {}
    for line in doc.splitlines():
        # a cell's own pipe is escaped (``\|``), as Markdown tables need
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        if line.startswith("| `") and re.fullmatch(first, cells[0].strip("`")):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_every_column_of_the_codes_page_is_shipped_in_the_package() -> None:
    """The "what to do next" column of the codes, and the decision and posture tables whole: an
    installed copy without docs/ says the same words (change the page and the table together)."""
    codes = _rows(r"R\d")
    assert {c: row[3] for c, row in codes.items()} == dict(NEXT_STEPS)
    assert set(codes) == set(CODES)
    named = _rows(r"[a-z_]+")
    decisions = {k: v for k, v in named.items() if len(v) == 3}
    postures = {k: v for k, v in named.items() if len(v) == 4}
    assert {k: (v[0].strip("`"), v[1], v[2]) for k, v in decisions.items()} == dict(DECISIONS)
    assert {k: (int(v[0]), v[1], v[2], v[3]) for k, v in postures.items()} == dict(POSTURES)
    assert set(POSTURES) == set(RECEIPT_POSTURES)


def test_explain_knows_every_code_decision_and_posture(capsys: pytest.CaptureFixture[str]) -> None:
    for name in known_names():
        assert main(["explain", name]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"{name} ")
        assert "what to do" in out
        assert "`" not in out
        assert "](" not in out  # a Markdown link is its words
    assert main(["explain", "r2", "--json"]) == 0  # a code in any case
    entry = json.loads(capsys.readouterr().out)
    assert entry == explain("R2")
    assert entry["next"].startswith("author: do not touch fixtures.")
    assert main(["explain", "unavailable", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exit_code"] == 4
    assert main(["explain"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(known_names())


def test_explain_of_an_unknown_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "R10"]) == 64
    err = capsys.readouterr().err
    assert "'R10' is not a code" in err
    assert "R9" in err


def _receipt(**kw: object):  # type: ignore[no-untyped-def]
    base: dict[str, object] = {
        "review_clock": "2026-09-10T12:00:00Z", "patch_sha256": "ab" * 32, "decision": "admit",
        "posture": "reject_credit", "admit": False, "changed_symbols": ["m.f"],
        "credits": {"m.f": 0}, "coverage": 0.0, "rejection_codes": ["R1", "R5"],
    }  # fmt: skip
    return build_receipt(ReceiptFacts(**{**base, **kw}))  # type: ignore[arg-type]


def test_a_rejection_prints_one_next_line_per_code() -> None:
    text = render_text(Report(receipt=_receipt()))
    nexts = [line for line in text.splitlines() if line.startswith("next ")]
    assert nexts == [
        f"next       R1: {NEXT_STEPS['R1'].replace('`', '')}",
        f"next       R5: {NEXT_STEPS['R5'].replace('`', '')}",
    ]
    md = render_markdown(Report(receipt=_receipt()))
    assert f"  - next: {NEXT_STEPS['R5']}" in md
    # No code (a property miss): the posture's next step; an admitted check: none.
    miss = render_text(Report(receipt=_receipt(posture="reject_property_miss", rejection_codes=[])))
    assert [ln for ln in miss.splitlines() if ln.startswith("next ")] == [
        "next       " + POSTURES["reject_property_miss"][3].replace("`", "")
    ]
    ok = _receipt(posture="human_review", admit=True, rejection_codes=[], credits={"m.f": 1})
    assert "next " not in render_text(Report(receipt=ok))


def test_a_check_stopped_before_any_run_says_the_stops_next_step_first() -> None:
    """Provenance refused: every changed symbol has credit 0 and R1, which the receipt must say;
    its next line points at the stop, not at the pins (before, it told the operator to add a
    property to pins/properties.json for a patch that failed provenance)."""
    stopped = _receipt(
        decision="reject_provenance", posture="reject_admission", rejection_codes=["R1"],
        uncredited={"m.f": "the run was stopped before execution: reject_provenance"},
    )  # fmt: skip
    nexts = [
        ln for ln in render_text(Report(receipt=stopped)).splitlines() if ln.startswith("next")
    ]
    assert nexts == [
        "next       " + DECISIONS["reject_provenance"][2].replace("`", ""),
        "next       R1: follows from the stop above (no property ran); act on that",
    ]
    # a symbol that ran and earned nothing keeps R1's own advice
    ran = _receipt(uncredited={"m.f": "no covering property"}, rejection_codes=["R1"])
    assert [
        ln for ln in render_text(Report(receipt=ran)).splitlines() if ln.startswith("next")
    ] == [f"next       R1: {NEXT_STEPS['R1'].replace('`', '')}"]


RAW = (
    "failed to connect to all addresses; last error: UNAVAILABLE: unix:/run/pg/signer.sock: "
    "connect failed: addr: unix:/run/pg/signer.sock error: No such file or directory"
)


def test_a_daemon_that_does_not_answer_is_named_with_its_address_and_lane() -> None:
    """The raw gRPC line stays in the receipt; the summary says which daemon, where, which lane,
    and what to do."""
    line = unreachable_words(
        who="signer", address="unix:/run/pg/signer.sock", kind="unavailable", detail=RAW,
        lane="ci",
    )  # fmt: skip
    assert line == (
        "signer at unix:/run/pg/signer.sock of the lane ci is unreachable (no socket at that "
        "path); is the lane up? start it with `patchgate up --lane ci`, "
        "or pass the daemon's address"
    )
    record = {
        "kind": "unavailable", "detail": "UNAVAILABLE: Connection refused", "lane": "local",
        "address": "127.0.0.1:7001", "property_id": "p", "run_index": 1,
    }  # fmt: skip
    words = transport_line(record, "local")
    assert words.startswith("local executor at 127.0.0.1:7001 of the lane local is unreachable")
    assert "connection refused" in words
    assert "`patchgate up`" in words
    late = transport_line({**record, "kind": "deadline", "detail": "DEADLINE_EXCEEDED: x"})
    assert late == "local executor at 127.0.0.1:7001 is unreachable (no answer before the deadline)"
    receipt = _receipt(posture="unavailable", rejection_codes=[], transport=[record])
    text = render_text(Report(receipt=receipt, reasons=[words], lane="local"))
    assert text.count("is unreachable") == 1  # the reason that repeats the record is not repeated
    assert "UNAVAILABLE:" not in text


def test_check_without_a_lane_or_signer_says_to_run_patchgate_up(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no lane is up under this home
    monkeypatch.chdir(tmp_path)
    for var in ("PATCHGATE_SIGNER", "PATCHGATE_EXECUTOR", "XDG_STATE_HOME"):
        monkeypatch.delenv(var, raising=False)
    assert main(["check", "--repo", str(repo), "--base", "HEAD", "--self-test"]) == 64
    (line,) = capsys.readouterr().err.splitlines()
    assert "no signer: start a local lane with `patchgate up`" in line
    assert main([
        "check", "--repo", str(repo), "--base", "HEAD", "--self-test", "--signer", "unix:/s",
    ]) == 64  # fmt: skip
    assert "no executor: start a local lane with `patchgate up`" in capsys.readouterr().err


def test_verify_receipt_without_a_keyring_is_unverifiable_not_stale(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said STALE (exit 1) when it meant "cannot verify": nothing had moved. Now UNVERIFIABLE,
    exit 3, with the reason; a receipt that really moved is still STALE (exit 1)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    out = tmp_path / "ledgers"
    out.mkdir()
    receipt = build_receipt(ReceiptFacts(
        review_clock="2026-09-10T12:00:00Z", patch_sha256="ab" * 32,
        decision="reject_provenance", posture="reject_admission", admit=False,
    ))  # fmt: skip
    (out / "receipt.json").write_text(json.dumps(receipt.to_json()))
    argv = ["verify-receipt", str(out / "receipt.json"), "--repo", str(repo)]
    assert main(argv) == 0  # no envelope and none needed: nothing to verify, it holds
    capsys.readouterr()
    (out / "fixture_envelope.json").write_text("{}")
    assert main(argv) == 3
    shown = capsys.readouterr().out.splitlines()
    assert shown[-1] == "receipt    UNVERIFIABLE"
    assert shown[0].startswith("unverified fixture_envelope.json: cannot verify: no operator")
    assert "STALE" not in "\n".join(shown)
    dead = f"unix:{tmp_path / 'no.sock'}"
    assert main([*argv, "--signer", dead, "--json"]) == 3
    found = json.loads(capsys.readouterr().out)
    assert found["verdict"] == "UNVERIFIABLE"
    assert found["stale"] == []
    (why,) = found["unverifiable"]
    assert f"signer at {dead} is unreachable (no socket at that path)" in why
    moved = {**receipt.to_json(), "predicate_hashes": {"p.gone": "00" * 32}}
    (out / "receipt.json").write_text(json.dumps(moved))
    assert main(argv) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "receipt    STALE"
