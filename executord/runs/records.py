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
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from patchgate.batching import node_arguments

__all__ = [
    "MAX_RECORDS",
    "MAX_RECORD_BYTES",
    "MISSING",
    "BatchVerdict",
    "ItemRecord",
    "RecordLog",
    "batch_outcomes",
    "case_outcomes",
    "node_arguments",
    "property_outcome",
    "tree_of",
]

MAX_RECORD_BYTES = 128 << 10
MAX_RECORDS = 10_000
MAX_FAILURE_CHARS = 4096
MAX_NODEID_CHARS = 4096
MISSING = "missing from the test report: "
_MAX_PROBLEMS = 4
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ITEM_OUTCOMES = frozenset({"pass", "fail", "error", "skip", "exceeded_bound"})
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


@dataclass
class RecordLog:
    """Everything one run's reporter sent, checked line by line as it arrives."""

    nonce: str
    plugin: str = ""
    started: bool = False
    exitstatus: int | None = None
    items: dict[str, ItemRecord] = field(default_factory=dict)
    collect_errors: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    count: int = 0

    def problem(self, reason: str) -> None:
        """Note a problem with the channel (kept once, at most a few)."""
        if reason not in self.problems and len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(reason)

    def feed(self, line: bytes) -> None:
        """One line from the channel (without its newline)."""
        self.count += 1
        if self.count > MAX_RECORDS:
            self.problem(f"more than {MAX_RECORDS} report records")
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
        if self.exitstatus is not None:
            self.problem("a report record after the final one")
            return
        try:
            self._accept(rec)
        except (KeyError, TypeError, ValueError):
            self.problem("a report record of an unknown shape")

    def _accept(self, rec: dict[str, Any]) -> None:
        kind = rec["kind"]
        if (kind == "start") == self.started:
            self.problem("the report does not begin with exactly one start record")
        elif kind == "start":
            self.started, self.plugin = True, _text(rec["plugin"], MAX_NODEID_CHARS)
        elif kind == "collect":
            self.collect_errors.append(
                (_text(rec["nodeid"], MAX_NODEID_CHARS), _text(rec["failure"], MAX_FAILURE_CHARS))
            )
        elif kind == "item":
            self._item(rec)
        elif kind == "finish":
            status = rec["exitstatus"]
            if type(status) is not int:
                raise TypeError("exitstatus")
            self.exitstatus = status
        else:
            raise ValueError(kind)

    def _item(self, rec: dict[str, Any]) -> None:
        executed = rec["executed"]
        if not isinstance(executed, list):
            raise TypeError("executed")
        tree = rec.get("tree", "")
        if not isinstance(tree, str) or (tree and not _HEX64.fullmatch(tree)):
            raise TypeError("tree")
        item = ItemRecord(
            nodeid=_text(rec["nodeid"], MAX_NODEID_CHARS),
            outcome=str(rec["outcome"]),
            duration_ms=int(rec["duration_ms"]),
            failure=_text(rec["failure"], MAX_FAILURE_CHARS),
            executed=tuple(sorted({_text(e, MAX_NODEID_CHARS) for e in executed})),
            tree=tree,
        )
        if item.outcome not in _ITEM_OUTCOMES:
            raise ValueError(item.outcome)
        first = self.items.setdefault(item.nodeid, item)
        if first.outcome != item.outcome:
            self.problem(f"record taken back for {item.nodeid}")


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
    outcomes = {i.outcome for i in log.items.values()}
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
    out: dict[str, BatchVerdict] = {}
    clean = (
        not ended
        and not log.problems
        and log.started
        and log.plugin == plugin
        and log.exitstatus is not None
        and exit_code == log.exitstatus
    )
    if log.problems:
        why = "report channel problem in its batch: " + "; ".join(log.problems)
    elif ended:
        why = f"its batch was {ended}"
    elif not log.started or log.plugin != plugin:
        why = "its batch sent no report"
    elif log.exitstatus is None:
        why = "its batch ended without the reporter's final record"
    else:
        why = f"its batch's exit status {exit_code} disagreed with its report"
    for pid, node_args in members:
        items, missing = _items_of(log, node_args)
        ms = sum(i.duration_ms for i in items.values())
        if clean:
            got = property_outcome(log, node_args, exit_code, plugin, bound_text)
            if got[0] == "error" and got[1].startswith(MISSING):
                out[pid] = BatchVerdict(None, "missing from its batch's report", ms)
            else:
                out[pid] = BatchVerdict(
                    got, "", ms, tree_of(log, node_args), case_outcomes(log, node_args)
                )
            continue
        if log.problems or missing or not log.started or log.plugin != plugin:
            out[pid] = BatchVerdict(None, why, ms)
            continue
        executed = tuple(sorted({e for i in items.values() for e in i.executed}))
        cases = case_outcomes(log, node_args)
        kinds = {i.outcome for i in items.values()}
        if "exceeded_bound" in kinds:
            out[pid] = BatchVerdict(("exceeded_bound", bound_text, executed), "", ms, cases=cases)
        elif kinds & {"error", "skip"}:
            bad = [i for i in items.values() if i.outcome in {"error", "skip"}]
            out[pid] = BatchVerdict(("error", _texts(bad), executed), "", ms, cases=cases)
        elif "fail" in kinds:
            failed = [i for i in items.values() if i.outcome == "fail"]
            out[pid] = BatchVerdict(("fail", _texts(failed), executed), "", ms, cases=cases)
        else:
            out[pid] = BatchVerdict(None, why, ms)
    return out


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
