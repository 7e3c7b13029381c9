"""The reports of a check (issue 16): pure functions of a receipt, a table and run evidence."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.report.github import render_github
from client.report.junit import render_junit
from client.report.markdown import render_markdown
from client.report.model import Report, failure_location, harness_error
from client.report.text import render_text
from client.verdict.codes import CODES, POSTURE_WORDS
from client.verdict.credit import CreditRow, MutationFindings, MutationResult, score
from client.verdict.receipt import ReceiptFacts, build_receipt
from client.verdict.stability import assess
from patchgate.evidence import Evidence, Location, SandboxLog
from patchgate.ledgers import POSTURES
from patchgate.results import RunOutcome
from tests.unit._gate_helpers import prop, run

ROOT = Path(__file__).resolve().parents[2]
MISSING = "missing from the test report: "


def _rejected() -> Report:
    receipt = build_receipt(ReceiptFacts(
        review_clock="2026-09-10T12:00:00Z", patch_sha256="ab" * 32, decision="admit",
        posture="reject_property_miss", admit=False,
        changed_symbols=["billing.total", "billing.net"], credits={"billing.net": 1}, coverage=0.5,
        uncredited={"billing.total": "its property failed both runs"},
        fixture_status="match", fixture_digest="cd" * 32, rejection_codes=["R1"],
        lanes={"local": {"status_by_id": {"p.total": "fail", "p.net": "pass"}}},
    ))  # fmt: skip
    rows = [
        CreditRow(symbol="billing.total", property_id="p.total", assertion_class="predicate",
                  run1="fail", run2="fail", credit=0),
        CreditRow(symbol="billing.net", property_id="p.net", assertion_class="predicate",
                  run1="pass", run2="pass", credit=1, executed="yes", killed="3/4"),
    ]  # fmt: skip
    failure = "tests/test_total.py::test_total: AssertionError at tests/test_total.py:17"
    ev = Evidence(
        outcomes=(
            RunOutcome.make("p.total", 1, "fail", failure, 12),
            RunOutcome.make("p.total", 2, "fail", failure, 11),
            RunOutcome.make("p.net", 1, "pass", "", 5),
            RunOutcome.make("p.net", 2, "pass", "", 5),
        ),
        logs=(
            SandboxLog(
                properties=("p.total",),
                run_index=1,
                stdout="collected 1\n=== FAILURES ===\nE  assert 3 == 4\n1 failed\n",
            ),
        ),
        symbols={"billing.total": Location("billing/__init__.py", 9)},
        properties={"p.total": Location("tests/test_total.py", 12)},
    )
    return Report(receipt=receipt, rows=rows, reasons=["property miss"], evidence=ev, out_dir="L")


def _all_error() -> Evidence:
    return Evidence(
        outcomes=tuple(
            RunOutcome.make(pid, run, "error", f"{MISSING}tests/test_{pid}.py::test_{pid}")
            for pid in ("a", "b")
            for run in (1, 2)
        ),
        logs=(SandboxLog(properties=("a",), run_index=1, stdout="E   ImportError: no billing"),),
    )


def test_the_first_line_is_the_verdict_in_words() -> None:
    rejected = render_text(_rejected())
    assert rejected.splitlines()[0] == f"REJECTED: {POSTURE_WORDS['reject_property_miss']}"
    admitted = Report(receipt=build_receipt(ReceiptFacts(
        review_clock="x", patch_sha256="", decision="admit", posture="human_review", admit=True,
    )))  # fmt: skip
    assert render_text(admitted).splitlines()[0] == "ADMITTED"


def test_quiet_is_the_first_line_alone() -> None:
    assert render_text(_rejected(), quiet=True) == render_text(_rejected()).splitlines()[0] + "\n"


def test_the_table_reserves_exec_and_killed_and_the_failure_text_follows() -> None:
    text = render_text(_rejected())
    header = text.splitlines()[1].split()
    assert header == ["symbol", "property", "class", "run", "1", "run", "2", "exec", "killed",
                      "credit"]  # fmt: skip
    assert re.search(r"billing\.total\s+p\.total\s+predicate\s+fail\s+fail\s+-\s+-\s+0", text)
    assert re.search(r"billing\.net\s+p\.net\s+predicate\s+pass\s+pass\s+yes\s+3/4\s+1", text)
    assert "E  assert 3 == 4" in text  # the log excerpt under the table
    assert "p.total run 2: fail, the same failure" in text
    assert "uncredited billing.total: its property failed both runs" in text
    assert f"code       R1 {CODES['R1'][0]}: " in text
    assert "coverage   0.5 (1/2 symbols credited)" in text


def test_every_property_erroring_alike_points_to_the_self_test() -> None:
    report = Report(receipt=_rejected().receipt, evidence=_all_error())
    assert harness_error(report.evidence) is not None
    text = render_text(report)
    assert "--self-test" in text
    assert "b run 1: error, the same failure as a" in text  # the text is printed once
    assert "--self-test" in render_markdown(report)


def test_one_different_failure_is_no_harness_error() -> None:
    ev = _all_error()
    other = RunOutcome.make("b", 2, "error", "tests/test_b.py::test_b: ZeroDivisionError")
    assert harness_error(Evidence(outcomes=(*ev.outcomes[:-1], other))) is None
    assert harness_error(_rejected().evidence) is None  # failures, not errors


def test_markdown_has_the_headings_and_escapes_table_cells() -> None:
    md = render_markdown(_rejected())
    assert md.startswith("## patchgate: REJECTED: ")
    for heading in ("### Failures", "### Uncredited symbols", "### Codes", "### Details"):
        assert heading in md
    assert "| billing.total | p.total | predicate | fail | fail | - | - | 0 |" in md
    report = _rejected()
    evil = CreditRow(symbol="a|b", property_id="p", assertion_class="c", run1="pass",
                     run2="pass", credit=0)  # fmt: skip
    md = render_markdown(Report(receipt=report.receipt, rows=[evil]))
    assert "| a\\|b | p |" in md


def test_github_annotations_name_file_and_line() -> None:
    lines = render_github(_rejected()).splitlines()
    assert lines[0].startswith("::error title=patchgate::REJECTED")
    assert any(
        line.startswith("::error file=billing/__init__.py,line=9,")
        and "billing.total earned no credit" in line
        for line in lines
    )
    # the failure names a file and line of the repository: the annotation goes there
    assert any(line.startswith("::error file=tests/test_total.py,line=17,") for line in lines)


def test_a_failure_without_a_file_line_is_annotated_at_its_test() -> None:
    ev = Evidence(
        outcomes=(RunOutcome.make("p", 1, "error", "boom /usr/lib/x.py:3 too"),),
        properties={"p": Location("tests/t.py", 4)},
    )
    assert failure_location(ev, ev.outcomes[0]) == Location("tests/t.py", 4)


def test_github_escapes_newlines_and_separators() -> None:
    report = _rejected()
    receipt = build_receipt(ReceiptFacts(
        review_clock="x", patch_sha256="", decision="admit", posture="reject_credit", admit=False,
        changed_symbols=["m.f"], uncredited={"m.f": "line one\nline two: 100%"},
        rejection_codes=["R1"],
    ))  # fmt: skip
    out = render_github(Report(receipt=receipt, evidence=report.evidence))
    assert "line one%0Aline two: 100%25" in out
    assert all(line.startswith("::") for line in out.splitlines())


def test_junit_has_one_case_per_property_with_both_runs() -> None:
    root = ET.fromstring(render_junit(_rejected()))  # noqa: S314 - our own output
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"p.total", "p.net"}
    assert suite.get("tests") == "2"
    assert suite.get("failures") == "1"
    failure = cases["p.total"].find("failure")
    assert failure is not None
    assert failure.get("message") == "run 1 fail; run 2 fail"
    assert "assert 3 == 4" in (failure.text or "")
    out = cases["p.net"].find("system-out")
    assert out is not None
    assert "run 1: pass" in (out.text or "")
    assert "run 2: pass" in (out.text or "")
    assert cases["p.total"].get("file") == "tests/test_total.py"


def test_junit_stays_valid_xml_with_control_characters_and_unrun_properties() -> None:
    receipt = build_receipt(ReceiptFacts(
        review_clock="x", patch_sha256="", decision="reject_class", posture="reject_admission",
        admit=False, lanes={"local": {"status_by_id": {"p": "not_run"}}},
    ))  # fmt: skip
    ev = Evidence(outcomes=(RunOutcome.make("q", 1, "error", "bad \x00\x1b byte"),))
    root = ET.fromstring(render_junit(Report(receipt=receipt, evidence=ev)))  # noqa: S314
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["p"].find("skipped") is not None
    assert cases["q"].find("error") is not None


def _doc_rows(text: str, first: str) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and re.fullmatch(first, cells[0].strip("`")):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_codes_page_and_the_codes_table_agree() -> None:
    doc = (ROOT / "docs" / "reference" / "codes.md").read_text(encoding="utf-8")
    rows = _doc_rows(doc, r"R\d")
    assert set(rows) == set(CODES)
    for code, (name, meaning) in CODES.items():
        where = "docs/reference/codes.md and CODES in client/verdict/codes.py disagree on"
        assert rows[code][:2] == [name, meaning], f"{where} {code}: change both"


def test_every_posture_has_words() -> None:
    assert set(POSTURE_WORDS) == set(POSTURES)


@pytest.mark.parametrize("posture", ["review", "human_review"])
def test_admitted_postures_are_not_called_rejected(posture: str) -> None:
    receipt = build_receipt(
        ReceiptFacts(
            review_clock="x", patch_sha256="", decision="admit", posture=posture, admit=True
        )
    )
    assert render_text(Report(receipt=receipt)).startswith("ADMITTED\n")


@given(
    name=st.text(min_size=1, max_size=30),
    why=st.text(max_size=60),
    failure=st.text(max_size=200),
    log=st.text(max_size=200),
)
def test_any_text_keeps_junit_valid_and_github_one_command_per_line(
    name: str, why: str, failure: str, log: str
) -> None:
    receipt = build_receipt(ReceiptFacts(
        review_clock="x", patch_sha256="", decision="admit", posture="reject_credit", admit=False,
        changed_symbols=[name], uncredited={name: why}, rejection_codes=["R1"],
    ))  # fmt: skip
    ev = Evidence(
        outcomes=(RunOutcome.make(name, 1, "fail", failure), RunOutcome.make(name, 2, "error")),
        logs=(SandboxLog(properties=(name,), run_index=1, stdout=log),),
        symbols={name: Location(name, 3)},
    )
    report = Report(receipt=receipt, evidence=ev)
    root = ET.fromstring(render_junit(report))  # noqa: S314 - our own output
    assert len(list(root.iter("testcase"))) == 1
    lines = render_github(report).splitlines()
    assert all(line.startswith("::") for line in lines)
    assert len(lines) == 3  # the verdict, the symbol, the failed property
    assert render_text(report).startswith("REJECTED: ")
    assert render_markdown(report).startswith("## patchgate: REJECTED: ")


def test_escape_sequences_from_a_run_never_reach_the_terminal() -> None:
    """A failure text or log is written by the code under test: ESC, CR and friends become ?."""
    trick = "\x1b[2J\x1b[H\rADMITTED\u2028\x85"
    report = Report(
        receipt=_rejected().receipt,
        evidence=Evidence(
            outcomes=(RunOutcome.make("p", 1, "fail", trick),),
            logs=(SandboxLog(properties=("p",), run_index=1, stdout=trick),),
        ),
    )
    for out in (render_text(report), render_markdown(report), render_github(report)):
        assert not any(c in out for c in "\x1b\r\u2028\x85"), out
        assert "?[2J" in out


def test_junit_shows_each_case_of_a_parametrized_property() -> None:
    """Issue 24: which case failed, per run, in <properties> and <system-out>."""
    receipt = build_receipt(ReceiptFacts(
        review_clock="x", patch_sha256="", decision="admit", posture="reject_property_miss",
        admit=False,
    ))  # fmt: skip
    cases = (("t.py::f[1]", "pass"), ("t.py::f[2]", "fail"))
    ev = Evidence(
        outcomes=tuple(
            RunOutcome.make("p.f", r, "fail", "t.py::f[2]: no", 4, cases=cases) for r in (1, 2)
        )
    )
    root = ET.fromstring(render_junit(Report(receipt=receipt, evidence=ev)))  # noqa: S314 - ours
    (case,) = root.iter("testcase")
    assert next(child.tag for child in case) == "properties"
    shown = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert shown == {
        "run 1 case t.py::f[1]": "pass", "run 1 case t.py::f[2]": "fail",
        "run 2 case t.py::f[1]": "pass", "run 2 case t.py::f[2]": "fail",
    }  # fmt: skip
    assert "run 2 case t.py::f[2]: fail" in (case.findtext("system-out") or "")
    assert case.find("failure") is not None


def test_the_killed_column_is_killed_over_scored() -> None:
    """Issue 21: crashed and hung mutants are not scored, so ``killed`` shows killed/scored (2
    killed, 1 survived; the crash and the hang are left out of both numbers)."""
    m = MutationResult(
        made=5, controls={"p.net": 7},
        killed={"p.net": ("arith at line 2", "negate at line 3")},
        survived={"p.net": ("pass at line 4",)},
        crashed={"p.net": ("compare at line 5: ZeroDivisionError",)},
        hung={"p.net": ("constant+1 at line 6",)},
    )  # fmt: skip
    credit = score(
        changed_symbols=["billing.net"], suite=[prop("p.net", ("billing.net",))],
        assertion_classes={"p.net": "property"},
        local={"p.net": assess("p.net", [run("p.net", 1, "pass"), run("p.net", 2, "pass")])},
        executed={"billing.net": {"p.net": True}}, mutation=MutationFindings({"billing.net": m}),
    )  # fmt: skip
    receipt = build_receipt(ReceiptFacts(
        review_clock="x", patch_sha256="", decision="admit", posture="human_review", admit=False,
        changed_symbols=["billing.net"], credits=credit.credits, coverage=credit.coverage,
    ))  # fmt: skip
    text = render_text(Report(receipt=receipt, rows=list(credit.rows)))
    assert re.search(r"billing\.net\s+p\.net\s+property\s+pass\s+pass\s+yes\s+2/3\s+1", text), text
