"""A Markdown summary of one check: for ``$GITHUB_STEP_SUMMARY`` or a merge-request note."""

from __future__ import annotations

from client.report.model import Report, failure_text, harness_error, headline, printable
from client.report.text import (
    HEADER,
    SELF_TEST_HEADER,
    SELF_TEST_HINT,
    self_test_rows,
    table_rows,
)
from client.verdict.codes import CODES, NEXT_STEPS, POSTURES

__all__ = ["render_markdown"]


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ") or " "


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}text\n{text}\n{ticks}"


def render_markdown(report: Report) -> str:
    """Headings: the verdict, the table, failures, uncredited symbols, codes, details."""
    r = report.receipt
    out = [f"## patchgate: {headline(report)}", ""]
    header = SELF_TEST_HEADER if report.self_test else HEADER
    rows = self_test_rows(report) if report.self_test else table_rows(report)
    if rows:
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    else:
        out.append("No changed production symbol.")
    if not report.self_test and (common := harness_error(report.evidence)):
        out += ["", f"> **Every property errored the same way** — {SELF_TEST_HINT}.", ""]
        out.append(_fence(common))
    failures = report.evidence.failures()
    if failures:
        out += ["", "### Failures", ""]
        for pid, runs in failures.items():
            o = runs[0]
            summary = f"{pid}: run {', '.join(str(x.run_index) for x in runs)} {o.outcome}"
            out += [f"<details><summary>{_cell(summary)}</summary>", ""]
            out += [_fence(failure_text(report.evidence, o)), "", "</details>"]
    if not report.self_test:
        credited = sum(1 for c in r.credits.values() if c)
        out += ["", f"**Coverage** {r.coverage:g} ({credited}/{len(r.credits)} symbols credited)"]
        if r.uncredited:
            out += ["", "### Uncredited symbols", ""]
            out += [f"- `{s}`: {why}" for s, why in r.uncredited.items()]
        if r.rejection_codes:
            out += ["", "### Codes", ""]
            for code in r.rejection_codes:
                name, meaning = CODES.get(code, ("unknown code", ""))
                out.append(f"- **{code}** {name}: {meaning}")
                out.append(f"  - next: {NEXT_STEPS.get(code, '-')}")
        elif not r.admit and r.posture in POSTURES:
            out += ["", f"**Next** {POSTURES[r.posture][3]}"]
    out += ["", "### Details", ""]
    if not report.self_test:
        out.append(f"- posture `{r.posture}`, admission decision `{r.decision or '-'}`")
    out.append(f"- fixtures `{r.fixture_status or '-'}` `{r.fixture_digest[:16]}`")
    if r.patch_sha256:
        out.append(f"- patch sha256 `{r.patch_sha256}`")
    out += [f"- {why}" for why in report.reasons]
    return printable("\n".join(out)) + "\n"
