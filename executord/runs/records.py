"""Records from the executor's reporter, and the rule that turns them into a property's outcome.

The reporter (``executord/inside/patchgate_reporter.py``) sends one JSON line per event:
``start``, ``collect`` (a collection error), ``item`` (a test, after its teardown) and ``finish``
(pytest's exit status). ``RecordLog`` checks each line as it arrives: the run's nonce, the
sequence number, the size, the shape. The first record per node id is kept; a later one that
disagrees is a record "taken back", and anything after ``finish`` is refused. Any such problem
makes every property of the run ``error``.

``property_outcome`` is the outcome rule: ``pass`` needs the reporter's pass for every item of the
property **and** an exit status of 0 that the reporter's own final record agrees with; a failed
item needs exit status 1. Everything else — disagreement, a missing item, no final record, a skip,
an error in setup or teardown — is ``error`` with the reason. These are outcomes, never transport.

A run may hold several properties (a batch, ``executord.runs.executor``): the exit status is then
checked
against every item of the run, an item the reporter marked ``exceeded_bound`` (its per-test alarm)
makes its property ``exceeded_bound``, and ``batch_outcomes`` decides which properties keep the
batch's outcome and which are re-run alone (docs/executor.md, "Batched runs").

With variants (mutation v2, docs/reference/inside-wire.md, "Variants") the supervisor's stream is
cut by ``variant`` records: the records after ``{"kind": "variant", "index": n}`` go to
``RecordLog.variant_logs[n - 1]``, a log of its own judged by the same rules as one run (its own
start, items, finish and ``judge`` record); the nonce, the sequence and the caps are the whole
stream's. A record before the first ``variant`` record, an index out of order, or anything after
a ``reset`` failure is a problem. ``outcome_kind`` says what failed (``RunOutcome.failure_kind``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from executord.inside.wire import (
    FAILURE_KINDS,
    ITEM_OUTCOMES,
    JUDGE_EVENTS,
    MAX_RECORD_LINE,
    SUBJECT_EVENTS,
    SUPERVISOR_KINDS,
    VARIANT_KINDS,
    Kind,
)
from patchgate.batching import node_arguments
from patchgate.results import RunOutcome

__all__ = [
    "MAX_RECORDS",
    "MAX_RECORD_BYTES",
    "MISSING",
    "BatchVerdict",
    "ItemRecord",
    "RecordLog",
    "batch_outcomes",
    "case_outcomes",
    "from_verdict",
    "node_arguments",
    "outcome_kind",
    "property_outcome",
    "tree_of",
]

MAX_RECORD_BYTES = MAX_RECORD_LINE
MAX_RECORDS = 10_000
MAX_FAILURE_CHARS = 4096
MAX_NODEID_CHARS = 4096
MISSING = "missing from the test report: "
_MAX_PROBLEMS = 4
_HEX64 = re.compile(r"[0-9a-f]{64}")
_PYTEST_OK, _PYTEST_FAILED = 0, 1


@dataclass(frozen=True)
class ItemRecord:
    """One test as the reporter saw it end."""

    nodeid: str
    outcome: str
    duration_ms: int
    failure: str
    executed: tuple[str, ...]
    tree: str = ""  # sha256 hex of the test's output area when it ended ("" when not measured)
    failure_kind: str = ""  # judge on: "predicate", "subject", "judge_error" ("" pass or skip)


@dataclass
class RecordLog:
    """Everything one run's reporter sent, checked line by line as it arrives."""

    nonce: str
    judged: bool = False  # judge on: the supervisor relays, and adds its own records
    plugin: str = ""
    started: bool = False
    exitstatus: int | None = None
    items: dict[str, ItemRecord] = field(default_factory=dict)
    collect_errors: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    count: int = 0
    import_executed: set[str] = field(default_factory=set)  # the subject's, while importing
    test_executed: dict[str, set[str]] = field(default_factory=dict)  # the subject's, per test
    subject_events: dict[str, tuple[str, str]] = field(default_factory=dict)  # nodeid: (event, why)
    judge_end: tuple[str, int | None] | None = None  # the supervisor's word on how the judge ended
    hung: bool = False  # the supervisor ended the judge at the run's deadline
    judge_problem: str = ""  # judge on: the judge did not end by its own exit (or no word of it)
    reported: frozenset[str] | None = None  # judge on: the judge's own item outcomes (exit rule)
    subject_outside: bool = False  # judge on: the subject ended (not by its goodbye) between tests
    max_records: int = MAX_RECORDS
    #: With variants: one log per variant, in order (see the module doc).
    variant_logs: list[RecordLog] = field(default_factory=list)
    reset_failure: str = ""  # with variants: the supervisor's word that a reset failed

    def resolved(self) -> RecordLog:
        """The log as the outcome rule reads it. Judge off: itself. Judge on: each item also
        counts what the subject reported executing for it and at import; an item during which the
        subject ended is ``error`` (``exceeded_bound`` when it hung), whatever the judge said; and
        a run without the supervisor's word that the judge exited has a problem."""
        if not self.judged:
            return self
        items = {}
        for nodeid, item in self.items.items():
            ran = {*item.executed, *self.import_executed, *self.test_executed.get(nodeid, ())}
            outcome, failure = item.outcome, item.failure
            event = self.subject_events.get(nodeid)
            if event is not None:
                outcome = "exceeded_bound" if event[0] == "hang" else "error"
                failure = event[1]
            items[nodeid] = dataclasses.replace(
                item, outcome=outcome, failure=failure, executed=tuple(sorted(ran))
            )
        out = dataclasses.replace(
            self,
            items=items,
            problems=list(self.problems),
            judged=False,
            reported=frozenset(i.outcome for i in self.items.values()),
        )
        if self.judge_end is None:
            out.judge_problem = "no word from the supervisor on how the judge ended"
        elif self.judge_end[0] == "hang":
            out.hung = True
        elif self.judge_end[0] != "exit":
            out.judge_problem = f"the judge ended by {self.judge_end[0]}"
        elif self.exitstatus is not None and self.judge_end[1] != self.exitstatus:
            out.judge_problem = (
                f"the judge's exit status {self.judge_end[1]} disagrees with its reporter's "
                f"{self.exitstatus}"
            )
        return out

    def problem(self, reason: str) -> None:
        """Note a problem with the channel (kept once, at most a few)."""
        if reason not in self.problems and len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(reason)

    def feed(self, line: bytes) -> None:
        """One line from the channel (without its newline)."""
        self.count += 1
        if self.count > self.max_records:
            self.problem(f"more than {self.max_records} report records")
            return
        if len(line) > MAX_RECORD_BYTES:
            self.problem(f"a report record over {MAX_RECORD_BYTES} bytes")
            return
        try:
            rec = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            self.problem("a report record that is not JSON")
            return
        if not isinstance(rec, dict) or rec.get("v") != 1:
            self.problem("a report record of an unknown shape")
            return
        nonce = rec.get("nonce")
        if not isinstance(nonce, str) or not hmac.compare_digest(
            nonce.encode("utf-8", "replace"), self.nonce.encode()
        ):
            self.problem("a report record without this run's nonce")
            return
        if rec.get("seq") != self.count - 1:
            self.problem("report records out of sequence")
            return
        if self.judged and (self.variant_logs or rec.get("kind") in VARIANT_KINDS):
            self._variant_record(rec)
            return
        self.take(rec)

    def _variant_record(self, rec: dict[str, Any]) -> None:
        kind = rec.get("kind")
        if self.reset_failure:
            self.problem("a report record after a failed reset")
        elif kind == Kind.VARIANT:
            if self.count > 1 and not self.variant_logs:
                self.problem("report records before the first variant")
            elif rec.get("index") != len(self.variant_logs) + 1:
                self.problem("variants out of order")
            else:
                self.variant_logs.append(RecordLog(nonce=self.nonce, judged=True))
        elif kind == Kind.RESET:
            detail = rec.get("detail")
            self.reset_failure = (detail if isinstance(detail, str) else "")[:MAX_FAILURE_CHARS]
            self.reset_failure = self.reset_failure or "the reset between variants failed"
        else:
            self.variant_logs[-1].take(rec)

    def take(self, rec: dict[str, Any]) -> None:
        """One record whose nonce and sequence were checked (by this log or the whole stream's)."""
        if self.exitstatus is not None and not (
            self.judged and rec.get("kind") in SUPERVISOR_KINDS and self.judge_end is None
        ):
            self.problem("a report record after the final one")
            return
        try:
            self._accept(rec)
        except (KeyError, TypeError, ValueError):
            self.problem("a report record of an unknown shape")

    def _accept(self, rec: dict[str, Any]) -> None:
        kind = rec["kind"]
        if (kind == Kind.START) == self.started:
            self.problem("the report does not begin with exactly one start record")
        elif kind == Kind.START:
            self.started, self.plugin = True, _text(rec["plugin"], MAX_NODEID_CHARS)
        elif kind == Kind.COLLECT:
            self.collect_errors.append(
                (_text(rec["nodeid"], MAX_NODEID_CHARS), _text(rec["failure"], MAX_FAILURE_CHARS))
            )
        elif kind == Kind.ITEM:
            self._item(rec)
        elif kind == Kind.FINISH:
            status = rec["exitstatus"]
            if type(status) is not int:
                raise TypeError("exitstatus")
            self.exitstatus = status
        elif self.judged and kind in SUPERVISOR_KINDS:
            self._supervisor(kind, rec)
        else:
            raise ValueError(kind)

    def _supervisor(self, kind: str, rec: dict[str, Any]) -> None:
        """A record the supervisor added (judge on; ``executord/inside/wire.py``)."""
        if kind == Kind.EXECUTED:
            names = rec["targets"]
            if not isinstance(names, list):
                raise TypeError("targets")
            found = {_text(n, MAX_NODEID_CHARS) for n in names}
            if rec["phase"] == "import":
                self.import_executed |= found
            elif rec["phase"] == "test":
                self.test_executed.setdefault(_text(rec["nodeid"], MAX_NODEID_CHARS), set()).update(
                    found
                )
            else:
                raise ValueError("phase")
        elif kind == Kind.SUBJECT:
            event, nodeid = str(rec["event"]), _text(rec["nodeid"], MAX_NODEID_CHARS)
            if event not in SUBJECT_EVENTS:
                raise ValueError(event)
            code = rec.get("returncode")
            if event == "exit" and code == 0 and not nodeid:
                return  # the subject's own end after the judge's goodbye
            why = f"the subject {_SUBJECT_WORDS[event]}" + (f" (status {code})" if code else "")
            detail = rec.get("detail")
            if isinstance(detail, str) and detail:
                why += ": " + detail[:MAX_FAILURE_CHARS]
            if nodeid:
                self.subject_events.setdefault(nodeid, (event, why))
            else:
                self.subject_outside = True
                self.problem(why + " outside any test")
        else:
            event, code = str(rec["event"]), rec.get("returncode")
            if event not in JUDGE_EVENTS or not (code is None or type(code) is int):
                raise ValueError(event)
            self.judge_end = (event, code)

    def _item(self, rec: dict[str, Any]) -> None:
        executed = rec["executed"]
        if not isinstance(executed, list):
            raise TypeError("executed")
        tree = rec.get("tree", "")
        if not isinstance(tree, str) or (tree and not _HEX64.fullmatch(tree)):
            raise TypeError("tree")
        kind = rec.get("failure_kind", "")
        if kind not in FAILURE_KINDS:
            raise ValueError("failure_kind")
        outcome = str(rec["outcome"])
        if kind == "subject" and outcome == "fail":
            outcome = "error"  # an exception of the subject's is never the predicate failing
        item = ItemRecord(
            nodeid=_text(rec["nodeid"], MAX_NODEID_CHARS),
            outcome=outcome,
            duration_ms=int(rec["duration_ms"]),
            failure=_text(rec["failure"], MAX_FAILURE_CHARS),
            executed=tuple(sorted({_text(e, MAX_NODEID_CHARS) for e in executed})),
            tree=tree,
            failure_kind=str(kind),
        )
        if item.outcome not in ITEM_OUTCOMES:
            raise ValueError(item.outcome)
        first = self.items.setdefault(item.nodeid, item)
        if first.outcome != item.outcome:
            self.problem(f"record taken back for {item.nodeid}")


_SUBJECT_WORDS = {
    "exit": "exited",
    "crash": "crashed",
    "hang": "did not answer within the clock bound",
    "lost": "was lost (its link broke)",
    "garbage": "wrote something other than its report on its report pipe",
}


def _text(value: object, limit: int) -> str:
    if not isinstance(value, str):
        raise TypeError("text field")
    return value[:limit]


def _covers(arg: str, nodeid: str) -> bool:
    """True when ``nodeid`` is ``arg``, a parametrization or member of it, or lies under it."""
    if nodeid == arg or nodeid.startswith((arg + "[", arg + "::")):
        return True
    return "::" not in arg and nodeid.startswith(arg.rstrip("/") + "/")


def _items_of(log: RecordLog, node_args: Sequence[str]) -> tuple[dict[str, ItemRecord], list[str]]:
    items: dict[str, ItemRecord] = {}
    missing: list[str] = []
    for arg in node_args or [""]:
        mine = {n: i for n, i in log.items.items() if arg == "" or _covers(arg, n)}
        items.update(mine)
        if not mine:
            missing.append(arg or "(no node id)")
    return items, missing


def _wanted_exit(log: RecordLog) -> frozenset[int]:
    """The exit statuses pytest gives the whole run's items: 1 when one failed or errored, else 0
    (either, when an item past its bound swallowed the alarm and pytest saw it pass)."""
    outcomes = log.reported
    if outcomes is None:
        outcomes = frozenset(i.outcome for i in log.items.values())
    if outcomes & {"fail", "error"}:
        return frozenset({_PYTEST_FAILED})
    if "exceeded_bound" in outcomes:
        return frozenset({_PYTEST_OK, _PYTEST_FAILED})
    return frozenset({_PYTEST_OK})


def property_outcome(
    log: RecordLog,
    node_args: Sequence[str],
    exit_code: int | None,
    plugin: str,
    bound_text: str = "",
) -> tuple[str, str, tuple[str, ...]]:
    """(outcome, failure text, executed targets) of one property in one run; see the module doc.

    The run may hold other properties (a batch): the exit status is checked against every item
    of the run, and an item past its bound makes the property ``exceeded_bound`` (``bound_text``).
    """
    log = log.resolved()
    if log.hung:
        return "exceeded_bound", bound_text or "the run's deadline passed", ()
    if log.problems:
        return "error", "report channel: " + "; ".join(log.problems), ()
    if not log.started:
        return (
            "error",
            "no report from the executor's reporter (not loaded, or the run crashed)",
            (),
        )
    if log.plugin != plugin:
        return "error", "the report came from another module than the executor's reporter", ()
    if log.judge_problem:
        return "error", log.judge_problem, ()
    items, missing = _items_of(log, node_args)
    if missing:
        why = [f"{n}: {t}" for n, t in log.collect_errors]
        return "error", MISSING + ", ".join(missing + why), ()
    executed = tuple(sorted({e for i in items.values() for e in i.executed}))
    if any(i.outcome == "exceeded_bound" for i in items.values()):
        return "exceeded_bound", bound_text, executed
    if log.exitstatus is None:
        return "error", "the test process ended without the reporter's final record", executed
    if exit_code != log.exitstatus:
        return (
            "error",
            _disagree(exit_code, f"the reporter's final status {log.exitstatus}"),
            executed,
        )
    bad = [i for i in items.values() if i.outcome in {"error", "skip"}]
    if bad:
        return "error", _texts(bad), executed
    failed = [i for i in items.values() if i.outcome == "fail"]
    if exit_code not in _wanted_exit(log):
        return "error", _disagree(exit_code, "fail" if failed else "pass"), executed
    return ("fail", _texts(failed), executed) if failed else ("pass", "", executed)


@dataclass(frozen=True)
class BatchVerdict:
    """One property of a batch: its outcome from the batch, or why it must run alone."""

    outcome: tuple[str, str, tuple[str, ...]] | None
    alone: str = ""  # the reason it is re-run alone ("" when ``outcome`` stands)
    duration_ms: int = 0  # the property's items' durations in the batch
    tree: str = ""  # the property's output tree (see ``tree_of``); "" when not measured
    cases: tuple[tuple[str, str], ...] = ()  # see ``case_outcomes``
    failure_kind: str = ""  # see ``outcome_kind`` ("" while ``outcome`` is None)


def batch_outcomes(
    log: RecordLog,
    members: Sequence[tuple[str, Sequence[str]]],
    exit_code: int | None,
    plugin: str,
    *,
    ended: str = "",
    bound_text: str = "",
) -> dict[str, BatchVerdict]:
    """The fallback decision for one batch run: each member property's outcome, or a reason to
    re-run it alone.

    ``ended`` is "" when the container exited by itself, else why it did not ("OOM-killed",
    "past its deadline"). A batch that ended cleanly (its reporter started and finished, the exit
    status agrees) gives every property it reported its outcome; a property missing from its
    report (e.g. pytest stopped at another property's collection error) runs alone. A batch that
    did not end cleanly — crashed, OOM-killed, past its deadline, no final record, an exit status
    that disagrees, any report channel problem — keeps only the failures its properties reported
    whole (fail, error, exceeded_bound: a crash cannot turn them into a pass); every property that
    had not reported, or had reported a pass (a pass needs the clean end), runs alone.
    """
    log = log.resolved()
    if log.hung and not ended:
        ended = "past its deadline (ended by the supervisor)"
    out: dict[str, BatchVerdict] = {}
    clean = (
        not ended
        and not log.problems
        and log.started
        and log.plugin == plugin
        and log.exitstatus is not None
        and exit_code == log.exitstatus
        and not log.judge_problem
    )
    if log.problems:
        why = "report channel problem in its batch: " + "; ".join(log.problems)
    elif log.judge_problem:
        why = f"in its batch, {log.judge_problem}"
    elif ended:
        why = f"its batch was {ended}"
    elif not log.started or log.plugin != plugin:
        why = "its batch sent no report"
    elif log.exitstatus is None:
        why = "its batch ended without the reporter's final record"
    else:
        why = f"its batch's exit status {exit_code} disagreed with its report"
    for pid, node_args in members:
        verdict = _member_verdict(log, node_args, exit_code, plugin, clean, why, bound_text)
        if verdict.outcome is not None:
            kind = outcome_kind(log, node_args, verdict.outcome[0])
            verdict = dataclasses.replace(verdict, failure_kind=kind)
        out[pid] = verdict
    return out


def from_verdict(pid: str, r: int, v: BatchVerdict, *, variant: int = 0) -> RunOutcome:
    """The run outcome of a batch verdict that has one (``variant``: 0 without variants)."""
    assert v.outcome is not None  # noqa: S101 - callers pass verdicts with an outcome
    status, failure, executed = v.outcome
    return RunOutcome.make(
        pid, r, status, failure, v.duration_ms, executed=executed, tree_hash=v.tree,
        cases=v.cases, failure_kind=v.failure_kind, variant=variant,
    )  # fmt: skip


def _member_verdict(  # noqa: PLR0917 - private, one call site
    log: RecordLog,
    node_args: Sequence[str],
    exit_code: int | None,
    plugin: str,
    clean: bool,
    why: str,
    bound_text: str,
) -> BatchVerdict:
    """One member's verdict from a resolved batch log (see ``batch_outcomes``)."""
    items, missing = _items_of(log, node_args)
    ms = sum(i.duration_ms for i in items.values())
    if clean:
        got = property_outcome(log, node_args, exit_code, plugin, bound_text)
        if got[0] == "error" and got[1].startswith(MISSING):
            return BatchVerdict(None, "missing from its batch's report", ms)
        return BatchVerdict(got, "", ms, tree_of(log, node_args), case_outcomes(log, node_args))
    if log.problems or missing or not log.started or log.plugin != plugin:
        return BatchVerdict(None, why, ms)
    executed = tuple(sorted({e for i in items.values() for e in i.executed}))
    cases = case_outcomes(log, node_args)
    kinds = {i.outcome for i in items.values()}
    if "exceeded_bound" in kinds:
        return BatchVerdict(("exceeded_bound", bound_text, executed), "", ms, cases=cases)
    if kinds & {"error", "skip"}:
        bad = [i for i in items.values() if i.outcome in {"error", "skip"}]
        return BatchVerdict(("error", _texts(bad), executed), "", ms, cases=cases)
    if "fail" in kinds:
        failed = [i for i in items.values() if i.outcome == "fail"]
        return BatchVerdict(("fail", _texts(failed), executed), "", ms, cases=cases)
    return BatchVerdict(None, why, ms)


def outcome_kind(log: RecordLog, node_args: Sequence[str], outcome: str) -> str:
    """``RunOutcome.failure_kind`` of a property whose outcome is ``outcome``: "" for a pass;
    ``subject`` when the subject ended during one of its tests (exit, crash, hang), between tests
    (the run is void), or a failing item's exception is the subject's; ``assertion`` when the
    outcome is ``fail`` and every failing item is the predicate's own failure (the reporter's
    ``predicate``); else ``judge_error`` (another judge exception, a missing item, an exit status
    that disagrees, a run cut short, a judge alarm without a subject event)."""
    if outcome == "pass":
        return ""
    items, _ = _items_of(log, node_args)
    if log.subject_outside or any(n in log.subject_events for n in items):
        return "subject"
    kinds = {i.failure_kind for i in items.values() if i.outcome in {"fail", "error"}}
    if "subject" in kinds:
        return "subject"
    if outcome == "fail" and kinds == {"predicate"}:
        return "assertion"
    return "judge_error"


def case_outcomes(log: RecordLog, node_args: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Each case of a parametrized property: (node id, the reporter's outcome), sorted; empty when
    every item is one of the node ids itself (a plain test: its outcome is the property's)."""
    items, _ = _items_of(log, node_args)
    if set(items) <= set(node_args):
        return ()
    return tuple(sorted((n, i.outcome) for n, i in items.items()))


def tree_of(log: RecordLog, node_args: Sequence[str]) -> str:
    """The output tree one property's tests left: its test's tree hash, or for several tests the
    sha256 of their ``nodeid tree`` lines; "" when a test is missing or did not report one."""
    items, missing = _items_of(log, node_args)
    if missing or not items or not all(i.tree for i in items.values()):
        return ""
    if len(items) == 1:
        return next(iter(items.values())).tree
    lines = "\n".join(f"{n} {i.tree}" for n, i in sorted(items.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def _disagree(exit_code: int | None, reported: str) -> str:
    return f"report and exit status disagree (exit status {exit_code}, reported {reported})"


def _texts(items: Sequence[ItemRecord]) -> str:
    return "\n".join(
        f"{i.nodeid}: {('skipped: ' if i.outcome == 'skip' else '') + i.failure}" for i in items
    )
