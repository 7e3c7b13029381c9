"""Per-property outcome from pytest's JUnit XML (structured output, never log regexes).

Every test the property's command names (``path.py::Class::test``) must appear in the report; a
missing one, an empty report, a missing or unreadable file is ``error``, never ``fail``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MAX_JUNIT_BYTES", "expected_cases", "outcome_from_junit"]

MAX_JUNIT_BYTES = 8 << 20


def expected_cases(argv: Sequence[str]) -> list[tuple[str, str]]:
    """(classname, name) per pytest node id in argv: ``a/b.py::C::t`` → (``a.b.C``, ``t``)."""
    out = []
    for arg in argv:
        if "::" not in arg or arg.startswith("-"):
            continue
        path, *middle, name = arg.split("::")
        module = path.removesuffix(".py").replace("/", ".")
        out.append((".".join([module, *middle]), name))
    return out


def _matches(case: tuple[str, str], want: tuple[str, str]) -> bool:
    cls, name = case
    wcls, wname = want
    return cls == wcls and (name == wname or name.startswith(wname + "["))


def outcome_from_junit(path: Path, argv: Sequence[str]) -> tuple[str, str]:
    """(outcome, failure text) for one run; outcome is pass, fail or error."""
    try:
        data = path.read_bytes()
    except OSError:
        return "error", "no structured test report was written"
    if len(data) > MAX_JUNIT_BYTES:
        return "error", "structured test report too large"
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        return "error", "structured test report carries a DOCTYPE; refused"
    try:
        root = ET.fromstring(data)  # noqa: S314 - size-capped, no DOCTYPE/ENTITY (checked above)
    except ET.ParseError as exc:
        return "error", f"structured test report is not XML: {exc}"
    cases = [(c.get("classname", ""), c.get("name", ""), c) for c in root.iter("testcase")]
    if not cases:
        return "error", "no test ran"
    missing = [
        f"{w[0]}::{w[1]}"
        for w in expected_cases(argv)
        if not any(_matches((cls, name), w) for cls, name, _ in cases)
    ]
    if missing:
        return "error", "missing from the test report: " + ", ".join(missing)
    errors, failures = [], []
    for cls, name, case in cases:
        for child in case:
            msg = f"{cls}::{name}: {child.get('message', '') or child.get('type', '')}"
            if child.tag in {"error", "skipped"}:
                errors.append(f"{child.tag}: {msg}")
            elif child.tag == "failure":
                failures.append(msg)
    if errors:
        return "error", "\n".join(errors)
    if failures:
        return "fail", "\n".join(failures)
    return "pass", ""
