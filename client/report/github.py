"""GitHub Actions workflow commands: one ``::error`` line per finding, at its place in the code.

* each uncredited changed symbol, at its definition in the patched tree (``file``, ``line``);
* each failed property, at the first ``file.py:LINE`` its failure names in the repository, else at
  its test's definition;
* one line with the verdict (``::notice`` when admitted, else ``::error``), without a place.

Values are escaped as the runner reads them: ``%``, CR and LF in the message; also ``:`` and
``,`` in a property (``file``, ``title``); any other control character becomes ``?``.
"""

from __future__ import annotations

from client.report.model import (
    Report,
    failure_location,
    harness_error,
    headline,
    printable,
)
from client.report.text import SELF_TEST_HINT
from patchgate.evidence import Location

__all__ = ["annotation", "render_github"]


def _data(text: str) -> str:
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, title: str, where: Location | None = None) -> str:
    """One workflow command line."""
    props = [f"title={_prop(title)}"]
    if where is not None:
        props = [f"file={_prop(where.path)}", f"line={where.line}", *props]
    return f"::{level} {','.join(props)}::{_data(message)}"


def render_github(report: Report) -> str:
    """Every annotation of one check, one per line."""
    r, ev = report.receipt, report.evidence
    level = "notice" if r.admit else "error"
    lines = [annotation(level, headline(report), "patchgate")]
    for symbol, why in r.uncredited.items():
        codes = ", ".join(r.rejection_codes)
        lines.append(
            annotation(
                "error",
                f"{symbol} earned no credit: {why}",
                f"patchgate {codes}".strip(),
                ev.symbols.get(symbol),
            )
        )
    for pid, runs in ev.failures().items():
        o = runs[0]
        which = ", ".join(str(x.run_index) for x in runs)
        text = o.failure_signature or "(no failure text)"
        lines.append(
            annotation(
                "error",
                f"property {pid} run {which} {o.outcome}: {text}",
                f"patchgate property {pid}",
                failure_location(ev, o),
            )
        )
    if not report.self_test and (common := harness_error(ev)):
        lines.append(
            annotation("warning", f"every property errored the same way: {common}. "
                       f"{SELF_TEST_HINT}", "patchgate setup")
        )  # fmt: skip
    return "\n".join(lines) + "\n"
