"""What every report renders, and the readings of the run evidence they share.

* :func:`excerpt`: the part of a sandbox's log a person needs (pytest's ``ERRORS`` / ``FAILURES``
  section when there is one, else the last lines).
* :func:`harness_error`: when every run of every property errored the same way (the same failure
  once node ids and file names are set aside) — a setup problem of the base, such as a missing
  ``pythonpath`` or an import error in a ``conftest.py``, rather than a failure the patch caused.
* :func:`failure_location`: the first ``path.py:LINE`` a failure names inside the repository,
  else the definition of the property's test.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from client.verdict.codes import posture_words
from client.verdict.credit import CreditRow
from patchgate.evidence import Evidence, Location, SandboxLog
from patchgate.ledgers import Receipt
from patchgate.results import RunOutcome

__all__ = [
    "Report",
    "excerpt",
    "failure_location",
    "failure_text",
    "harness_error",
    "headline",
    "printable",
    "property_ids",
    "same_shape",
]

_SECTION = re.compile(r"^=+ (ERRORS|FAILURES) =+$", re.MULTILINE)
_NODE = re.compile(r"\S*::\S*")
_PYFILE = re.compile(r"\S*\.py\b(:\d+)?")
_FILE_LINE = re.compile(r"(?<![\w./-])([\w][\w./-]*\.py):(\d+)")
_EXCERPT_LINES = 40
# Control characters but newline and tab, C1 controls and the Unicode line separators: the text of
# a run is written by the code under test, and an escape sequence or a carriage return printed on
# a person's terminal (or in a CI log) could hide or rewrite the verdict.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass(frozen=True, kw_only=True)
class Report:
    """One check as the reports see it."""

    receipt: Receipt
    rows: Sequence[CreditRow] = ()
    reasons: Sequence[str] = ()
    evidence: Evidence = field(default_factory=Evidence)
    out_dir: str = ""
    self_test: bool = False
    self_test_verdict: str = ""  # a self-test's first line, from the cause it found
    lane: str = ""  # the lane (`patchgate up`) the daemon settings came from; empty: flags


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab shown as ``?``."""
    return _UNPRINTABLE.sub("?", text)


def headline(report: Report) -> str:
    """``ADMITTED``, or ``REJECTED: <posture in words>`` (a self-test: ``SELF-TEST ...``)."""
    r = report.receipt
    if report.self_test and report.self_test_verdict:
        return report.self_test_verdict
    if report.self_test:  # no cause given: passed only on a passing posture and no failure
        bad = report.evidence.failures()
        if bad:
            return f"SELF-TEST FAILED: {', '.join(sorted(bad))}"
        ok = r.posture == "human_review"
        return "SELF-TEST PASSED" if ok else f"SELF-TEST FAILED: {posture_words(r.posture)}"
    return "ADMITTED" if r.admit else f"REJECTED: {posture_words(r.posture)}"


def property_ids(report: Report) -> list[str]:
    """Every property the check knows of: the suite's statuses, the runs, the table."""
    local = report.receipt.lanes.get("local", {})
    ids = set(local.get("status_by_id", {}) if isinstance(local, dict) else {})
    ids |= {o.property_id for o in report.evidence.outcomes}
    ids |= {r.property_id for r in report.rows if r.property_id not in ("", "-")}
    return sorted(ids)


def excerpt(log: SandboxLog | None, max_lines: int = _EXCERPT_LINES) -> str:
    """pytest's ERRORS/FAILURES section of the log (else its last lines), at most ``max_lines``."""
    if log is None:
        return ""
    text = log.stdout
    found = _SECTION.search(text)
    if found is not None:
        text = text[found.start() :]
    elif log.stderr.strip():
        text = f"{text.rstrip()}\n{log.stderr}" if text.strip() else log.stderr
    lines = text.rstrip().splitlines()
    return "\n".join(lines[-max_lines:] if found is None else lines[:max_lines])


def failure_text(evidence: Evidence, outcome: RunOutcome) -> str:
    """The failure signature of a run, then the excerpt of its sandbox's log."""
    parts = [f"{outcome.outcome}: {outcome.failure_signature or '(no failure text)'}"]
    if more := excerpt(evidence.log_of(outcome.property_id, outcome.run_index)):
        parts.append(more)
    return "\n".join(parts)


def same_shape(a: str, b: str) -> bool:
    """Whether two failure texts differ only in node ids and file names."""
    return _shape(a) == _shape(b)


def _shape(signature: str) -> str:
    return _PYFILE.sub("<file>", _NODE.sub("<test>", signature))


def harness_error(evidence: Evidence) -> str | None:
    """The common failure when every run of every property errored the same way, else None."""
    outs = evidence.outcomes
    if not outs or any(o.outcome != "error" for o in outs):
        return None
    shapes = {_shape(o.failure_signature) for o in outs}
    if len(shapes) != 1:
        return None
    return min((o.failure_signature for o in outs), key=len)


def failure_location(evidence: Evidence, outcome: RunOutcome) -> Location | None:
    """Where a failed run points: the first relative ``file.py:LINE`` of its failure text or log
    excerpt, else the definition of the property's test (None when neither is known)."""
    for text in (
        outcome.failure_signature,
        excerpt(evidence.log_of(outcome.property_id, outcome.run_index)),
    ):
        for m in _FILE_LINE.finditer(text):
            path = m.group(1).removeprefix("./")
            if not path.startswith("/") and ".." not in path.split("/"):
                return Location(path, int(m.group(2)))
    return evidence.properties.get(outcome.property_id)
