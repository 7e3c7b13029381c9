"""The reporter's records and the outcome rule (``runs.records``): junk, caps, order, agreement."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from executord.runs.records import (
    MAX_RECORD_BYTES,
    MAX_RECORDS,
    RecordLog,
    batch_outcomes,
    case_outcomes,
    node_arguments,
    property_outcome,
)
from tests.strategies import junk_json_bytes

NONCE = "n" * 32
PLUGIN = "/patchgate/reporter/patchgate_reporter.py"
NODE = "properties/test_x.py::test_ok"


def _line(seq: int, kind: str, nonce: str = NONCE, **fields: Any) -> bytes:
    return json.dumps({"v": 1, "nonce": nonce, "seq": seq, "kind": kind, **fields}).encode()


def _item(seq: int, nodeid: str = NODE, outcome: str = "pass", **extra: Any) -> bytes:
    fields = {"nodeid": nodeid, "outcome": outcome, "duration_ms": 1, "failure": "", "executed": []}
    return _line(seq, "item", **{**fields, **extra})


def _log(*lines: bytes) -> RecordLog:
    log = RecordLog(nonce=NONCE)
    for line in lines:
        log.feed(line)
    return log


def _session(*items: bytes, status: int = 0) -> RecordLog:
    start = _line(0, "start", plugin=PLUGIN, pid=1)
    return _log(start, *items, _line(len(items) + 1, "finish", exitstatus=status))


def test_a_clean_pass() -> None:
    """Start, one passing item, finish 0, exit 0: pass."""
    assert property_outcome(_session(_item(1)), [NODE], 0, PLUGIN) == ("pass", "", ())


def test_a_clean_fail_carries_the_failure_text() -> None:
    """A failed item with exit 1: fail, the text names the node id."""
    log = _session(_item(1, outcome="fail", failure="AssertionError: no"), status=1)
    outcome, text, _ = property_outcome(log, [NODE], 1, PLUGIN)
    assert (outcome, text) == ("fail", f"{NODE}: AssertionError: no")


def test_executed_targets_are_the_union_over_the_property_items() -> None:
    """Each item's executed targets, merged and sorted."""
    log = _session(
        _item(1, f"{NODE}[1]", executed=["b.g", "a.f"]), _item(2, f"{NODE}[2]", executed=["a.f"])
    )
    assert property_outcome(log, [NODE], 0, PLUGIN)[2] == ("a.f", "b.g")


def test_junk_lines_make_the_run_error() -> None:
    """Not JSON, not an object, unknown version: a channel problem, never a pass."""
    for junk in (b"not json", b"[1,2]", json.dumps({"v": 2}).encode(), b"\xff\xfe"):
        log = _log(_line(0, "start", plugin=PLUGIN, pid=1), junk)
        assert log.problems, junk
        assert property_outcome(log, [NODE], 0, PLUGIN)[0] == "error"


def test_a_record_with_another_nonce_is_refused() -> None:
    """A replayed or forged record without this run's nonce."""
    forged = _line(1, "item", nonce="x" * 32, nodeid=NODE, outcome="pass", duration_ms=1)
    log = _log(_line(0, "start", plugin=PLUGIN, pid=1), forged)
    outcome, text, _ = property_outcome(log, [NODE], 0, PLUGIN)
    assert outcome == "error"
    assert "nonce" in text


def test_records_out_of_sequence_are_refused() -> None:
    """An injected record shifts the sequence: the next real record is out of sequence."""
    log = _log(_line(0, "start", plugin=PLUGIN, pid=1), _item(1), _item(1, "other::t"))
    assert "report records out of sequence" in log.problems


def test_a_contradicting_record_is_taken_back_and_the_first_wins() -> None:
    """pass then fail for one node id: error "record taken back"; an identical repeat is fine."""
    log = _session(_item(1), _item(2, outcome="fail"), status=1)
    outcome, text, _ = property_outcome(log, [NODE], 1, PLUGIN)
    assert (outcome, "record taken back" in text) == ("error", True)
    assert log.items[NODE].outcome == "pass"
    assert _session(_item(1), _item(2)).problems == []


def test_anything_after_the_final_record_is_refused() -> None:
    """A record after finish (an atexit forger) makes the run error."""
    log = _session(_item(1))
    log.feed(_item(3, "properties/test_x.py::test_late"))
    assert "a report record after the final one" in log.problems
    assert property_outcome(log, [NODE], 0, PLUGIN)[0] == "error"


def test_oversized_record_and_too_many_records() -> None:
    """One record over the size cap, or more records than the count cap: error."""
    big = _item(1, failure="x" * MAX_RECORD_BYTES)
    assert any("bytes" in p for p in _session(big).problems)
    log = _log(_line(0, "start", plugin=PLUGIN, pid=1))
    for i in range(1, MAX_RECORDS + 2):
        log.feed(_item(i, f"t.py::t{i}"))
    assert any("more than" in p for p in log.problems)
    assert len(log.items) < MAX_RECORDS


def test_start_must_come_first_and_once() -> None:
    """An item before start, or a second start: error."""
    assert _log(_line(0, "item", nodeid=NODE)).problems
    two = _log(_line(0, "start", plugin=PLUGIN, pid=1), _line(1, "start", plugin=PLUGIN, pid=1))
    assert two.problems


def test_bad_field_types_are_a_problem_not_a_crash() -> None:
    """exitstatus as a string, executed as a string, unknown outcome, unknown kind."""
    for line in (
        _line(1, "finish", exitstatus="0"),
        _item(1, executed="a.f"),
        _item(1, outcome="passed"),
        _line(1, "wat"),
        _item(1, nodeid=7),
    ):
        log = _log(_line(0, "start", plugin=PLUGIN, pid=1), line)
        assert log.problems, line


@given(st.lists(junk_json_bytes, max_size=6), st.sampled_from([0, 1, None]))
def test_junk_never_passes(lines: list[bytes], exit_code: int | None) -> None:
    """Whatever arrives without a valid start, item and finish, the property is never pass."""
    log = _log(*lines)
    assert property_outcome(log, [NODE], exit_code, PLUGIN)[0] != "pass"


def test_node_arguments_follow_the_allowed_prefix() -> None:
    """Words after the longest allowed prefix that are not flags; ./ stripped."""
    allowed = [("python", "-m", "pytest"), ("python", "-m", "pytest", "-q", "-p", "no:x")]
    argv = ("python", "-m", "pytest", "-q", "-p", "no:x", "./a.py::t", "-x", "b/")
    assert node_arguments(argv, allowed) == ["a.py::t", "b/"]


def test_values_of_options_are_not_node_ids() -> None:
    """-p NAME, -k EXPR, --deselect ID after the prefix are options, not node ids."""
    argv = ("python", "-m", "pytest", "-p", "no:cacheprovider", "-k", "fast", "a.py", "--tb=short")
    assert node_arguments(argv, [("python", "-m", "pytest")]) == ["a.py"]
    argv = ("python", "-m", "pytest", "--deselect", "a.py::t2", "a.py::t1")
    assert node_arguments(argv, [("python", "-m", "pytest")]) == ["a.py::t1"]


def test_items_match_by_node_id_parametrization_class_file_and_directory() -> None:
    """t, t[...] and t::... match t; a file or directory matches what lies under it."""
    log = _session(
        _item(1, "d/a.py::t[1]"), _item(2, "d/a.py::C::m"), _item(3, "d/b.py::u"), status=0
    )
    for arg in ("d/a.py::t", "d/a.py::C", "d/a.py", "d", "d/"):
        assert property_outcome(log, [arg], 0, PLUGIN)[0] == "pass", arg
    for arg in ("d/a.py::t1", "d/a", "d/a.py::C::mm", "e"):
        assert property_outcome(log, [arg], 0, PLUGIN)[0] == "error", arg


def test_missing_item_names_the_collection_error() -> None:
    """No item for the node id: error, with the collection error when there is one."""
    log = _log(
        _line(0, "start", plugin=PLUGIN, pid=1),
        _line(1, "collect", nodeid="properties/test_x.py", failure="ImportError: nope"),
        _line(2, "finish", exitstatus=2),
    )
    outcome, text, _ = property_outcome(log, [NODE], 2, PLUGIN)
    assert outcome == "error"
    assert "missing from the test report" in text
    assert "ImportError: nope" in text


# -- batches: several properties in one run, and the fallback decision --------------------------

A, B = "properties/test_x.py::test_a", "properties/test_x.py::test_b"
MEMBERS = [("pa", [A]), ("pb", [B])]
BOUND = "clock bound 500 ms exceeded"


def _batch(*items: bytes, status: int | None = 0) -> RecordLog:
    lines = [_line(0, "start", plugin=PLUGIN, pid=1), *items]
    if status is not None:
        lines.append(_line(len(items) + 1, "finish", exitstatus=status))
    return _log(*lines)


def test_a_clean_batch_gives_each_property_its_own_outcome() -> None:
    """One passes, one fails, exit 1 for the whole batch: pass and fail, nothing runs alone."""
    log = _batch(_item(1, A), _item(2, B, "fail", failure="AssertionError: x"), status=1)
    got = batch_outcomes(log, MEMBERS, 1, PLUGIN, bound_text=BOUND)
    assert got["pa"].outcome == ("pass", "", ())
    assert got["pa"].alone == ""
    assert got["pb"].outcome == ("fail", f"{B}: AssertionError: x", ())


def test_a_pass_beside_a_failure_in_the_batch_needs_exit_status_one() -> None:
    """Exit 0 while an item failed: the exit status disagrees for every member (forged exit)."""
    log = _batch(_item(1, A), _item(2, B, "fail"), status=0)
    assert property_outcome(log, [A], 0, PLUGIN)[0] == "error"


def test_a_property_past_its_bound_is_exceeded_and_the_others_stand() -> None:
    """The reporter's exceeded_bound item: that property exceeded_bound, its neighbour passes."""
    log = _batch(_item(1, A, "exceeded_bound"), _item(2, B), status=1)
    got = batch_outcomes(log, MEMBERS, 1, PLUGIN, bound_text=BOUND)
    assert got["pa"].outcome == ("exceeded_bound", BOUND, ())
    assert got["pb"].outcome == ("pass", "", ())


def test_an_oom_killed_batch_keeps_reported_failures_and_reruns_the_rest_alone() -> None:
    """A crash cannot make a pass: the reported pass and the unreported property run alone."""
    log = _batch(_item(1, A, "fail", failure="no"), status=None)
    got = batch_outcomes(log, [*MEMBERS, ("pc", ["c.py::t"])], 137, PLUGIN, ended="OOM-killed")
    assert got["pa"].outcome is not None
    assert got["pa"].outcome[0] == "fail"
    assert got["pb"].outcome is None
    assert got["pb"].alone == "its batch was OOM-killed"
    log = _batch(_item(1, A), status=None)
    got = batch_outcomes(log, MEMBERS, 137, PLUGIN, ended="OOM-killed")
    assert got["pa"].outcome is None
    assert got["pb"].outcome is None


def test_a_batch_without_a_final_record_or_with_a_disagreeing_exit_reruns_passes_alone() -> None:
    """``os._exit`` mid-batch, or an exit status the reporter did not send: no pass stands."""
    crashed = batch_outcomes(_batch(_item(1, A), status=None), MEMBERS, 0, PLUGIN)
    assert crashed["pa"].alone == "its batch ended without the reporter's final record"
    forged = batch_outcomes(_batch(_item(1, A), _item(2, B), status=1), MEMBERS, 0, PLUGIN)
    assert forged["pa"].outcome is None
    assert "disagreed" in forged["pa"].alone


def test_a_channel_problem_reruns_every_member_alone() -> None:
    """A record without the nonce: nothing of the batch is believed, failures included."""
    log = _batch(_item(1, A, "fail"), _line(2, "item", nonce="x" * 32), status=1)
    got = batch_outcomes(log, MEMBERS, 1, PLUGIN)
    assert all(v.outcome is None and v.alone.startswith("report channel") for v in got.values())


def test_a_property_missing_from_a_clean_batch_runs_alone() -> None:
    """pytest stopped at another property's collection error: the missing one runs alone."""
    log = _batch(_item(1, A), status=0)
    got = batch_outcomes(log, MEMBERS, 0, PLUGIN)
    assert got["pa"].outcome == ("pass", "", ())
    assert got["pb"].outcome is None
    assert got["pb"].alone == "missing from its batch's report"


def test_a_batch_that_sent_nothing_reruns_everything_alone() -> None:
    """No start record (the reporter never loaded): every member alone."""
    got = batch_outcomes(_log(), MEMBERS, 2, PLUGIN)
    assert {v.alone for v in got.values()} == {"its batch sent no report"}


def test_an_items_output_tree_is_the_propertys_tree_and_a_bad_one_is_a_problem() -> None:
    """Issue 17: each item may carry the sha256 of its output area; a property's tree is its
    test's, several tests' are hashed together, a missing one is "" (not measured)."""
    from executord.runs.records import tree_of  # noqa: PLC0415 - one test of the tree

    log = _session(_item(1, tree="a" * 64))
    assert tree_of(log, [NODE]) == "a" * 64
    other = "properties/test_x.py::test_two"
    two = _session(_item(1, tree="a" * 64), _item(2, nodeid=other, tree="b" * 64))
    assert tree_of(two, ["properties/test_x.py"]) not in ("", "a" * 64, "b" * 64)
    assert tree_of(_session(_item(1)), [NODE]) == ""
    assert tree_of(log, ["properties/test_x.py::test_gone"]) == ""
    bad = _session(_item(1, tree="not-a-hash"))
    assert bad.problems
    assert tree_of(bad, [NODE]) == ""


def test_a_parametrized_property_passes_only_when_every_case_passes() -> None:
    """Issue 24: a property naming a parametrized test function is all its cases. One failing case
    fails the property, one skipped case errors it, and each case's outcome is kept; a property
    naming one case id is that case alone; a plain test has no cases."""
    cases = [_item(1, f"{NODE}[a]"), _item(2, f"{NODE}[b]", outcome="fail", failure="no")]
    log = _session(*cases, status=1)
    outcome, text, _ = property_outcome(log, [NODE], 1, PLUGIN)
    assert (outcome, text) == ("fail", f"{NODE}[b]: no")
    assert case_outcomes(log, [NODE]) == ((f"{NODE}[a]", "pass"), (f"{NODE}[b]", "fail"))
    assert property_outcome(log, [f"{NODE}[a]"], 1, PLUGIN)[0] == "pass"  # the run's exit is 1
    assert case_outcomes(log, [f"{NODE}[a]"]) == ()  # a single case id: its own outcome
    skipped = _session(_item(1, f"{NODE}[a]"), _item(2, f"{NODE}[b]", outcome="skip"))
    assert property_outcome(skipped, [NODE], 0, PLUGIN)[0] == "error"
    assert case_outcomes(skipped, [NODE])[1] == (f"{NODE}[b]", "skip")
    assert case_outcomes(_session(_item(1)), [NODE]) == ()
    (verdict,) = batch_outcomes(log, [("p", [NODE])], 1, PLUGIN).values()
    assert verdict.cases == case_outcomes(log, [NODE])
