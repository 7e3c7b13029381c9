"""JUnit XML of one check: one test case per property, both runs in it.

A run that failed is a ``<failure>`` (outcome ``fail``) or an ``<error>`` (``error``,
``exceeded_bound``) with its failure text and log excerpt; a property with no run (the check stopped
before running, or only transport came back) is ``<skipped>`` with the reason. Each run's outcome
and duration go to ``<system-out>``; a parametrized property's cases too, one line per case and
run (``run 1 case path.py::test_f[2-3]: fail``) and one ``<property name="run 1 case NODEID"
value="OUTCOME">`` each, so a CI page shows which case failed. Characters XML 1.0 cannot hold
become ``?``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from client.report.model import Report, failure_text, headline, property_ids

__all__ = ["render_junit"]

_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    return _BAD_XML.sub("?", text)


def _case(report: Report, pid: str, parent: ET.Element) -> str:
    ev = report.evidence
    runs = sorted((o for o in ev.outcomes if o.property_id == pid), key=lambda o: o.run_index)
    seconds = sum(o.duration_ms for o in runs) / 1000
    case = ET.SubElement(
        parent, "testcase", name=_clean(pid), classname="patchgate.properties", time=f"{seconds:g}"
    )
    if (where := ev.properties.get(pid)) is not None:
        case.set("file", _clean(where.path))
        case.set("line", str(where.line))
    if not runs:
        why = f"not run: {report.receipt.posture}"
        ET.SubElement(case, "skipped", message=_clean(why))
        return "skipped"
    bad = [o for o in runs if o.outcome != "pass"]
    kind = "passed"
    if bad:
        kind = "failure" if all(o.outcome == "fail" for o in bad) else "error"
        which = "; ".join(f"run {o.run_index} {o.outcome}" for o in bad)
        el = ET.SubElement(case, kind, message=_clean(which), type=bad[0].outcome)
        el.text = _clean("\n\n".join(f"run {o.run_index}: {failure_text(ev, o)}" for o in bad))
    if any(o.cases for o in runs):
        props = ET.Element("properties")
        case.insert(0, props)  # first, as pytest writes its own
        for o in runs:
            for node, outcome in o.cases:
                name = _clean(f"run {o.run_index} case {node}")
                ET.SubElement(props, "property", name=name, value=outcome)
    out = ET.SubElement(case, "system-out")
    out.text = "".join(
        f"run {o.run_index}: {o.outcome} ({o.duration_ms} ms)\n"
        + "".join(f"run {o.run_index} case {n}: {c}\n" for n, c in o.cases)
        for o in runs
    )
    out.text = _clean(out.text)
    return kind


def render_junit(report: Report) -> str:
    """The XML document (UTF-8 declaration included)."""
    root = ET.Element("testsuites", name="patchgate")
    suite = ET.SubElement(root, "testsuite", name=_clean(f"patchgate check: {headline(report)}"))
    counts = {"failure": 0, "error": 0, "skipped": 0, "passed": 0}
    ids = property_ids(report)
    for pid in ids:
        counts[_case(report, pid, suite)] += 1
    for el in (root, suite):
        el.set("tests", str(len(ids)))
        el.set("failures", str(counts["failure"]))
        el.set("errors", str(counts["error"]))
    suite.set("skipped", str(counts["skipped"]))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
