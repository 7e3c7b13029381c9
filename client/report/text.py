"""The summary a person reads on a terminal after ``patchgate check``.

The first line is the verdict (``ADMITTED`` or ``REJECTED: <posture in words>``); then the credit
table (``exec``: did both runs execute the symbol, ``killed``: mutants killed/scored — crashed and
hung mutants are in neither number; ``-`` when the evidence does not have them), the failure text
of each failed property with its log excerpt, coverage, the uncredited symbols with their reasons,
each code with its meaning, one ``next`` line per code with what to do next (a rejection without a
code: the posture's), and the rest of the receipt in short lines. ``--quiet`` prints the first
line alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from client.report.model import (
    Report,
    failure_text,
    harness_error,
    headline,
    printable,
    property_ids,
    same_shape,
)
from client.verdict.codes import (
    code_line,
    decision_next,
    next_line,
    posture_next,
    unreachable_words,
)
from client.verdict.credit import STOPPED_PREFIX

__all__ = ["render_text", "self_test_rows", "table_rows", "transport_line"]

HEADER = ("symbol", "property", "class", "run 1", "run 2", "exec", "killed", "credit")
SELF_TEST_HEADER = ("property", "run 1", "run 2")
_NOT_YET = "-"  # exec / killed: not traced, or the mutation stage did not reach the pair
SELF_TEST_HINT = "run `patchgate check --self-test` on the base to see the setup error"


def self_test_rows(report: Report) -> list[tuple[str, ...]]:
    """A self-test's table: each property and the outcome of each run ("-": none)."""
    runs = {(o.property_id, o.run_index): o.outcome for o in report.evidence.outcomes}
    return [(pid, runs.get((pid, 1), "-"), runs.get((pid, 2), "-")) for pid in property_ids(report)]


def table_rows(report: Report) -> list[tuple[str, ...]]:
    """The credit table's rows (one per symbol and property offered for it)."""
    r = report.receipt
    rows: list[tuple[str, ...]] = [
        (x.symbol, x.property_id, x.assertion_class, x.run1, x.run2, x.executed or _NOT_YET,
         x.killed or _NOT_YET, str(x.credit))
        for x in report.rows
    ]  # fmt: skip
    if not rows:
        rows = [
            (s, "-", "-", "-", "-", _NOT_YET, _NOT_YET, str(r.credits.get(s, 0)))
            for s in r.changed_symbols
        ]
    return rows


def transport_line(t: dict[str, object], lane: str = "") -> str:
    """A transport record in words: a daemon that did not answer is named with its address and
    lane (:func:`client.verdict.codes.unreachable_words`), never as the raw gRPC text (which stays
    in the receipt); any other record as ``<lane> <kind>: <detail>``."""
    kind, where, address = str(t.get("kind", "")), str(t.get("lane", "")), str(t.get("address", ""))
    if kind in ("unavailable", "deadline") and address:
        who = "signer" if where == "signer" else f"{where} executor".strip()
        return unreachable_words(
            who=who, address=address, kind=kind, detail=str(t.get("detail", "")), lane=lane
        )
    return f"{where} {kind}: {t.get('detail', '')}"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def _indent(text: str, prefix: str = "    ") -> list[str]:
    return [f"{prefix}{line}".rstrip() for line in text.splitlines()]


def failure_lines(report: Report) -> list[str]:
    """Each failed property: its first failed run's text; a later run, or another property
    that failed the same way (node ids and file names aside), only says so."""
    lines: list[str] = []
    shown: dict[str, str] = {}  # failure signature -> the property it was printed for
    for pid, runs in report.evidence.failures().items():
        for o in runs:
            sig = f"{o.outcome} {o.failure_signature}"
            first = next((who for seen, who in shown.items() if same_shape(seen, sig)), None)
            if first is not None:
                like = "" if first == pid else f" as {first}"
                lines.append(f"  {pid} run {o.run_index}: {o.outcome}, the same failure{like}")
                continue
            shown[sig] = pid
            lines.append(f"  {pid} run {o.run_index}:")
            lines.extend(_indent(failure_text(report.evidence, o)))
        if report.out_dir:
            lines.append(f"    (logs: {report.out_dir}/runs/{pid}/)")
    return lines


def render_text(report: Report, *, quiet: bool = False) -> str:
    """The whole summary (``quiet``: the first line only)."""
    r = report.receipt
    lines = [headline(report)]
    if quiet:
        return printable(lines[0]) + "\n"
    header: tuple[str, ...]
    if report.self_test:
        rows, header = self_test_rows(report), SELF_TEST_HEADER
    else:
        rows, header = table_rows(report), HEADER
    empty = "(no property ran)" if report.self_test else "(no changed production symbol)"
    lines += _table([header, *rows]) if rows else [empty]
    if failed := failure_lines(report):
        lines += ["", "failures", *failed]
    lines.append("")
    if not report.self_test and (common := harness_error(report.evidence)):
        lines.append(f"harness    every property errored the same way: {common[:300]}")
        lines.append(f"           a setup problem of the base, not the patch? {SELF_TEST_HINT}")
    if not report.self_test:
        credited = sum(1 for c in r.credits.values() if c)
        lines.append(f"coverage   {r.coverage:g} ({credited}/{len(r.credits)} symbols credited)")
        for symbol, why in r.uncredited.items():
            lines.append(f"uncredited {symbol}: {why}")
        lines.extend(f"code       {code_line(c)}" for c in r.rejection_codes)
        # stopped before any property ran: R1 (every symbol's credit 0) follows from the stop,
        # so what to do is the stop's, first; R1's own advice would send the reader to the pins
        stopped = bool(r.uncredited) and all(
            why.startswith(STOPPED_PREFIX) for why in r.uncredited.values()
        )
        todo = (stopped and decision_next(r.decision)) or posture_next(r.posture)
        if not r.admit and (stopped or not r.rejection_codes) and todo:
            lines.append(f"next       {todo}")
        for c in r.rejection_codes:
            if c == "R1" and stopped:
                lines.append(
                    "next       R1: follows from the stop above (no property ran); act on that"
                )
            else:
                lines.append(f"next       {next_line(c)}")
        lines.append(f"posture    {r.posture} (admission decision: {r.decision or '-'})")
    lines.append(f"fixtures   {r.fixture_status or '-'} {r.fixture_digest[:16]}".rstrip())
    # the clock that judged every flake's expiry, beside the freeze ids the suite cited (seed 000)
    lines.append(f"clock      {r.review_clock or '-'}")
    if r.freeze_citations:
        lines.append(f"freezes    {', '.join(r.freeze_citations)} (cited: never evidence)")
    for o in r.flake_observations:
        lines.append(f"flake      {o.get('flake_id', '')} on {o.get('test_id', '')} (never credit)")
    if r.excluded_paths:
        lines.append(f"excluded   {', '.join(r.excluded_paths)}")
    said = set()
    for t in r.transport:
        said.add(line := transport_line(t, report.lane))
        lines.append(f"transport  {line}")
    lines.extend(f"why        {why}" for why in report.reasons if why not in said)
    if report.out_dir:
        lines.append(f"ledgers    {report.out_dir}")
    return printable("\n".join(lines)) + "\n"
