"""Outcomes from JUnit XML: structured output only; anything missing is `error`."""

from __future__ import annotations

from pathlib import Path

import pytest

from executord.fakeruntime import junit_xml
from executord.junit import expected_cases, outcome_from_junit

ARGV = ("python", "-m", "pytest", "-q", "properties/test_x.py::test_ok")


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "junit.xml"
    p.write_text(text, encoding="utf-8")
    return p


def test_node_ids_map_to_classname_and_name() -> None:
    """a/b.py::C::t → (a.b.C, t); flags are ignored."""
    assert expected_cases(["-k", "a/b.py::C::t", "x.py::t"]) == [("a.b.C", "t"), ("x", "t")]


def test_pass(tmp_path: Path) -> None:
    """A passing testcase is pass."""
    assert outcome_from_junit(
        _write(tmp_path, junit_xml("test_ok", "properties.test_x")), ARGV
    ) == ("pass", "")


def test_failure_carries_its_message(tmp_path: Path) -> None:
    """A <failure> is fail with the message as the signature."""
    xml = junit_xml("test_ok", "properties.test_x", '<failure message="AssertionError: boom"/>')
    outcome, text = outcome_from_junit(_write(tmp_path, xml), ARGV)
    assert outcome == "fail"
    assert "AssertionError: boom" in text


@pytest.mark.parametrize("child", ['<error message="setup broke"/>', '<skipped message="skip"/>'])
def test_error_and_skip_are_error(tmp_path: Path, child: str) -> None:
    """An <error> or a skip never counts as pass or fail."""
    xml = junit_xml("test_ok", "properties.test_x", child)
    assert outcome_from_junit(_write(tmp_path, xml), ARGV)[0] == "error"


def test_missing_property_is_error(tmp_path: Path) -> None:
    """The named test absent from the report is error, not fail."""
    xml = junit_xml("test_other", "properties.test_x")
    outcome, text = outcome_from_junit(_write(tmp_path, xml), ARGV)
    assert outcome == "error"
    assert "missing" in text


def test_parametrized_cases_match_their_node(tmp_path: Path) -> None:
    """test_ok[1] satisfies properties/test_x.py::test_ok."""
    xml = junit_xml("test_ok[1]", "properties.test_x")
    assert outcome_from_junit(_write(tmp_path, xml), ARGV)[0] == "pass"


def test_no_report_is_error(tmp_path: Path) -> None:
    """No file written: error."""
    assert outcome_from_junit(tmp_path / "absent.xml", ARGV)[0] == "error"


def test_empty_report_is_error(tmp_path: Path) -> None:
    """No testcase ran: error."""
    xml = '<testsuites><testsuite name="pytest"/></testsuites>'
    assert outcome_from_junit(_write(tmp_path, xml), ARGV[:-1])[0] == "error"


def test_doctype_is_refused(tmp_path: Path) -> None:
    """Entity tricks from inside the sandbox are not parsed."""
    xml = '<!DOCTYPE x [<!ENTITY a "b">]>' + junit_xml("test_ok", "properties.test_x")
    assert outcome_from_junit(_write(tmp_path, xml), ARGV)[0] == "error"


def test_not_xml_is_error(tmp_path: Path) -> None:
    """Garbage is error."""
    assert outcome_from_junit(_write(tmp_path, "<<<"), ARGV)[0] == "error"
