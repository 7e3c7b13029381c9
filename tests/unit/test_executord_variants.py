"""Mutation v2, daemon side: variants refused before any container, one sandbox per group for all
its variants, the supervisor's stream cut per variant and each part judged like one run."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from executord.errors import InvalidArgument
from executord.runs.channel import ReportChannel
from executord.runs.fakeruntime import FakeRun, FakeRuntime, variant_lines
from executord.runs.records import RecordLog
from executord.runs.request import PropertyRun, Variant
from executord.runs.sandboxspec import RUN, SUPERVISOR_CONFIG, VARIANTS_NAME
from executord.runs.variants import (
    batch_files,
    planned_ids,
    variant_outcomes,
    variant_plan,
    variants_deadline_s,
)
from patchgate.batching import Group
from patchgate.results import RunOutcome
from patchgate.v1 import common_pb2
from tests.unit.test_executord_runs import CMD, OK, _execute, _input, _rig

BILLING = "billing/__init__.py"
SECOND = PropertyRun("p.two", (*CMD, "properties/test_x.py::test_two"))
NODE_OK, NODE_TWO = OK.command[-1], SECOND.command[-1]
V1, V2, V3 = (Variant(BILLING, b"x = %d\n" % i) for i in (1, 2, 3))


def _outcomes(report: object) -> dict[tuple[str, int], tuple[str, str]]:
    out = {}
    for o in report.outcomes:  # type: ignore[attr-defined]
        r = RunOutcome.from_proto(o)
        assert r.run_index == 1
        out[(r.property_id, r.variant)] = (r.outcome, r.failure_kind)
    return out


# -- refusals: InvalidArgument before any container ---------------------------------------------


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"runs": 2}, "runs = 1"),
        ({"judge": "off"}, "judge on"),
        ({"variants": (V1,) * 257}, "more than 256"),
        ({"variants": (Variant(BILLING, b"#" * ((1 << 20) + 1)),)}, "over 1048576 bytes"),
        ({"variants": (Variant("billing/data.txt", b""),)}, "not a .py file"),
        ({"variants": (Variant("billing/absent.py", b""),)}, "not a file of the workspace"),
        ({"variants": (Variant("../billing/__init__.py", b""),)}, "variant 1"),
        ({"variants": (Variant("/etc/passwd.py", b""),)}, "variant 1"),
        ({"source_roots": ("src",)}, "not under a source root"),
        ({"variant_scope": ("p.nope",)}, "'p.nope' is not a property of the request"),
        ({"variant_scope": ("p.ok", "p.ok")}, "names a property twice"),
        ({"variants": (), "variant_scope": ("p.ok",)}, "variant_scope without variants"),
        (
            {"variants": (Variant(BILLING, b"", scope=("p.nope",)),)},
            "variant 1: scope 'p.nope' is not a property of the request",
        ),
        (
            {"variants": (Variant(BILLING, b"", scope=("p.ok", "p.ok")),)},
            "variant 1: its scope names a property twice",
        ),
    ],
)
def test_variants_are_refused_before_any_container(
    tmp_path: Path, kw: dict[str, object], match: str
) -> None:
    rig = _rig(tmp_path)
    base: dict[str, object] = {"variants": (V1,), "runs": 1, "judge": "on"}
    with pytest.raises(InvalidArgument, match=match):
        rig.executor.prepare(_input(rig, **{**base, **kw}))
    assert rig.runtime.created == []


def test_the_refusal_control_a_good_request_is_accepted(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    prepared = rig.executor.prepare(_input(rig, variants=(V1,), runs=1))
    rig.executor.cleanup(prepared)


# -- batching ------------------------------------------------------------------------------------


def test_all_variants_of_a_group_run_in_one_sandbox_in_order(tmp_path: Path) -> None:
    """Two properties sharing a prefix, three variants: ONE container; each property has one
    outcome per variant (run 1, variant 1..3); the supervisor's config lists the variants by
    offset into a file only uid 0 reads, and holds no source itself."""
    seen: dict[str, object] = {}

    def script(spec: object) -> FakeRun:
        run_dir = Path(next(m.source for m in spec.mounts if m.target == RUN))  # type: ignore[attr-defined]
        seen["config"] = json.loads((run_dir / SUPERVISOR_CONFIG).read_text())
        blob = run_dir / VARIANTS_NAME
        seen["mode"] = stat.S_IMODE(os.stat(blob).st_mode)
        seen["blob"] = blob.read_bytes()

        def items(n: int) -> tuple[tuple[str, ...], ...] | None:
            if n == 2:  # the mutant: the predicate of p.ok fails
                return ((NODE_OK, "fail", "assert 2 == 1", "predicate"), (NODE_TWO, "pass", ""))
            return None

        return FakeRun(variant_items=items)

    rig = _rig(tmp_path, FakeRuntime(script=script))
    report = _execute(rig, properties=(OK, SECOND), variants=(V1, V2, V3), runs=1)
    assert len(rig.runtime.created) == 1
    assert _outcomes(report) == {
        ("p.ok", 1): ("pass", ""),
        ("p.ok", 2): ("fail", "assertion"),
        ("p.ok", 3): ("pass", ""),
        ("p.two", 1): ("pass", ""),
        ("p.two", 2): ("pass", ""),
        ("p.two", 3): ("pass", ""),
    }
    cfg = seen["config"]
    assert isinstance(cfg, dict)
    assert cfg["variants"] == [
        {"path": "/workspace/billing/__init__.py", "offset": i * 6, "size": 6} for i in range(3)
    ]
    assert cfg["variants_file"] == f"{RUN}/{VARIANTS_NAME}"
    assert cfg["reset_dirs"] == ["/tmp", "/dev/shm", "/dev/mqueue"]
    assert b"x = 1" not in json.dumps(cfg).encode()
    assert (seen["mode"], seen["blob"]) == (0o400, b"x = 1\nx = 2\nx = 3\n")
    assert [list(map(str, o.cases)) for o in report.outcomes] == [[]] * 6


@pytest.mark.parametrize("isolation", ["run", "property"])
def test_each_group_gets_its_own_sandbox_holding_every_variant(
    tmp_path: Path, isolation: str
) -> None:
    """Two prefixes are two groups (and ``property`` isolation: a group per property): one sandbox
    each, every variant in each."""
    other = PropertyRun("p.other", (*CMD, "-x", "properties/test_x.py::test_other"))
    rig = _rig(tmp_path)
    report = _execute(
        rig, properties=(OK, SECOND, other), variants=(V1, V2), runs=1, isolation=isolation
    )
    assert len(rig.runtime.created) == (2 if isolation == "run" else 3)
    assert set(_outcomes(report)) == {(p, n) for p in ("p.ok", "p.two", "p.other") for n in (1, 2)}
    assert set(_outcomes(report).values()) == {("pass", "")}


def test_a_variant_scope_collects_the_whole_group_and_runs_only_its_own_tests(
    tmp_path: Path,
) -> None:
    """``variant_scope`` (the covering properties): the group's batch still orders every member's
    node ids (its test modules are collected as in the suite's run) and names only the scope's
    to run; only the scope's outcomes come back; a group without a member in the scope does not
    run at all; the deadline counts the scope's tests."""
    other = PropertyRun("p.other", (*CMD, "-x", "properties/test_x.py::test_other"))
    seen: list[tuple[dict[str, object], dict[str, object]]] = []

    def script(spec: object) -> FakeRun:
        run_dir = Path(next(m.source for m in spec.mounts if m.target == RUN))  # type: ignore[attr-defined]
        info = Path(next(m.source for m in spec.mounts if m.target == "/patchgate/info"))  # type: ignore[attr-defined]
        seen.append((json.loads((info / "batch.json").read_text()),
                     json.loads((run_dir / SUPERVISOR_CONFIG).read_text())))  # fmt: skip
        return FakeRun()

    rig = _rig(tmp_path, FakeRuntime(script=script), clock_bound_ms=5000)
    report = _execute(
        rig, properties=(OK, SECOND, other), variants=(V1, V2), runs=1, variant_scope=("p.ok",)
    )
    assert len(rig.runtime.created) == 1
    assert set(_outcomes(report)) == {("p.ok", 1), ("p.ok", 2)}
    ((batch, cfg),) = seen
    assert sorted(batch["order"]) == sorted([NODE_OK, NODE_TWO])  # type: ignore[arg-type]
    assert batch["run"] == [NODE_OK]
    assert cfg["deadline_ms"] == int(variants_deadline_s(5.0, [1, 1]) * 1000) - 3000
    # without a scope every member runs (no "run" list)
    seen.clear()
    _execute(rig, properties=(OK, SECOND), variants=(V1,), runs=1)
    assert "run" not in seen[0][0]


def test_each_variant_runs_its_own_scope_and_only_the_groups_it_touches(tmp_path: Path) -> None:
    """``Variant.scope`` (the variants of several symbols in one request, each running its own
    covering properties): a group's sandbox runs only the variants whose scope holds one of its
    members, each with a batch file naming its own tests (the first scope's is the default
    ``batch.json``); the outcomes keep the request's variant numbers."""
    other = PropertyRun("p.other", (*CMD, "-x", "properties/test_x.py::test_other"))
    seen: list[tuple[dict[str, dict[str, object]], dict[str, object]]] = []

    def script(spec: object) -> FakeRun:
        run_dir = Path(next(m.source for m in spec.mounts if m.target == RUN))  # type: ignore[attr-defined]
        info = Path(next(m.source for m in spec.mounts if m.target == "/patchgate/info"))  # type: ignore[attr-defined]
        batches = {f.name: json.loads(f.read_text()) for f in sorted(info.glob("batch*.json"))}
        seen.append((batches, json.loads((run_dir / SUPERVISOR_CONFIG).read_text())))
        return FakeRun()

    rig = _rig(tmp_path, FakeRuntime(script=script), clock_bound_ms=5000)
    variants = (
        Variant(BILLING, b"x = 1\n", scope=("p.ok",)),
        Variant(BILLING, b"x = 2\n", scope=("p.two",)),
        Variant(BILLING, b"x = 3\n", scope=("p.other",)),
        Variant(BILLING, b"x = 4\n", scope=("p.two",)),
    )
    report = _execute(rig, properties=(OK, SECOND, other), variants=variants, runs=1)
    assert len(rig.runtime.created) == 2
    assert set(_outcomes(report)) == {("p.ok", 1), ("p.two", 2), ("p.other", 3), ("p.two", 4)}
    by_count = sorted(seen, key=lambda s: -len(s[1]["variants"]))  # type: ignore[arg-type]
    (batches, cfg), (other_batches, other_cfg) = by_count
    assert {n: b.get("run") for n, b in batches.items()} == {
        "batch.json": [NODE_OK], "batch-1.json": [NODE_TWO]}  # fmt: skip
    assert [v.get("batch", "") for v in cfg["variants"]] == [  # type: ignore[attr-defined]
        "", "/patchgate/info/batch-1.json", "/patchgate/info/batch-1.json"]  # fmt: skip
    assert cfg["deadline_ms"] == int(variants_deadline_s(5.0, [1, 1, 1]) * 1000) - 3000
    assert list(other_batches) == ["batch.json"]
    assert "run" not in other_batches["batch.json"]  # the group's one member: all of it runs
    assert len(other_cfg["variants"]) == 1  # type: ignore[arg-type]


def test_the_variant_bound_is_the_smaller_one_and_the_deadline_covers_every_variant(
    tmp_path: Path,
) -> None:
    seen: dict[str, object] = {}

    def script(spec: object) -> FakeRun:
        run_dir = Path(next(m.source for m in spec.mounts if m.target == RUN))  # type: ignore[attr-defined]
        seen["config"] = json.loads((run_dir / SUPERVISOR_CONFIG).read_text())
        info = Path(next(m.source for m in spec.mounts if m.target == "/patchgate/info"))  # type: ignore[attr-defined]
        seen["batch"] = json.loads((info / "batch.json").read_text())
        return FakeRun()

    rig = _rig(tmp_path, FakeRuntime(script=script), clock_bound_ms=5000)
    _execute(rig, variants=(V1, V2), runs=1, variant_bound_ms=1200)
    cfg = seen["config"]
    assert isinstance(cfg, dict)
    assert (cfg["bound_ms"], cfg["variant_bound_ms"]) == (5000, 1200)
    assert seen["batch"] == {"bound_ms": 1200, "order": [NODE_OK]}
    # the supervisor's deadline: the container's less its margin, the container's covering both
    assert cfg["deadline_ms"] == int(variants_deadline_s(1.2, [1, 1]) * 1000) - 3000
    assert variants_deadline_s(1.2, [1, 1]) == 2 * (1.2 + 5.0) + 10.0


def test_without_variants_nothing_changes_but_the_failure_kind_is_filled(tmp_path: Path) -> None:
    rig = _rig(
        tmp_path,
        FakeRuntime(script=lambda _s: FakeRun(exit_code=1, items=((NODE_OK, "fail", "no"),))),
    )
    report = _execute(rig, runs=1)
    (o,) = report.outcomes
    assert (o.outcome, o.variant, o.failure_kind) == (common_pb2.OUTCOME_FAIL, 0, "judge_error")


def test_a_reset_failure_makes_the_remaining_variants_error_not_the_earlier_ones(
    tmp_path: Path,
) -> None:
    rig = _rig(
        tmp_path,
        FakeRuntime(script=lambda _s: FakeRun(variant_stop=1, reset_failure="sysv shm 7 left")),
    )
    report = _execute(rig, variants=(V1, V2, V3), runs=1)
    got = {(o.property_id, o.variant): o for o in map(RunOutcome.from_proto, report.outcomes)}
    assert got[("p.ok", 1)].outcome == "pass"
    for n in (2, 3):
        assert (got[("p.ok", n)].outcome, got[("p.ok", n)].failure_kind) == ("error", "judge_error")
        assert "sysv shm 7 left" in got[("p.ok", n)].failure_signature


def test_a_sandbox_that_ended_early_leaves_the_completed_variants_judged(tmp_path: Path) -> None:
    rig = _rig(tmp_path, FakeRuntime(script=lambda _s: FakeRun(variant_stop=2)))
    report = _execute(rig, variants=(V1, V2, V3), runs=1)
    got = {
        o.variant: (o.outcome, o.failure_kind) for o in map(RunOutcome.from_proto, report.outcomes)
    }
    assert got == {1: ("pass", ""), 2: ("pass", ""), 3: ("error", "judge_error")}


# -- the stream cut per variant, each part judged like one run ------------------------------------

MEMBERS = [("p.ok", [NODE_OK])]


def _log(lines: list[bytes]) -> RecordLog:
    log = RecordLog(nonce="n", judged=True)
    for line in lines:
        log.feed(line)
    return log


def _kinds(log: RecordLog, count: int) -> list[tuple[str, str, int]]:
    return [(o.outcome, o.failure_kind, o.variant) for o in variant_outcomes(log, MEMBERS, count)]


def test_each_variant_is_judged_by_itself() -> None:
    subject_hang = {"kind": "subject", "event": "hang", "nodeid": NODE_OK, "detail": "",
                    "returncode": None}  # fmt: skip
    judge_exit = {"kind": "judge", "event": "exit", "returncode": 1}
    crash = {"kind": "judge", "event": "crash", "returncode": None, "detail": "signal 9"}
    lines = variant_lines(
        "n",
        [
            ([(NODE_OK, "pass", "")], 0, None),  # a control
            ([(NODE_OK, "fail", "assert 1 == 2", "predicate")], 1, None),  # a kill
            ([(NODE_OK, "error", "ValueError", "subject")], 1, None),  # the subject raised
            ([(NODE_OK, "fail", "no", "judge_error")], 1, None),  # another judge exception
            ([(NODE_OK, "fail", "assert", "predicate")], 1, [subject_hang, judge_exit]),
            ([(NODE_OK, "pass", "")], 0, [crash]),  # the judge crashed: not a pass
            ([], 0, None),  # the item is missing
            ([(NODE_OK, "pass", "")], 1, None),  # exit status disagrees with the pass
            ([(NODE_OK, "pass", "")], 0, None),  # after a broken pair, still judged
        ],
    )
    assert _kinds(_log(lines), 9) == [
        ("pass", "", 1),
        ("fail", "assertion", 2),
        ("error", "subject", 3),
        ("fail", "judge_error", 4),
        ("exceeded_bound", "subject", 5),
        ("error", "judge_error", 6),
        ("error", "judge_error", 7),
        ("error", "judge_error", 8),
        ("pass", "", 9),
    ]


def test_a_part_without_its_judge_record_is_an_error() -> None:
    lines = variant_lines("n", [([(NODE_OK, "pass", "")], 0, [])])  # no judge record
    assert _kinds(_log(lines), 1) == [("error", "judge_error", 1)]


def test_records_before_the_first_variant_or_out_of_order_void_every_variant() -> None:
    good = variant_lines("n", [([(NODE_OK, "pass", "")], 0, None)] * 2)
    assert _kinds(_log(good), 2) == [("pass", "", 1), ("pass", "", 2)]
    swapped = [json.loads(line) for line in good]
    second = next(i for i, r in enumerate(swapped) if r["kind"] == "variant" and r["index"] == 2)
    swapped[second]["index"] = 3
    log = _log([json.dumps(r).encode() for r in swapped])
    assert "variants out of order" in log.problems
    assert [k[:2] for k in _kinds(log, 2)] == [("error", "judge_error")] * 2
    before = [json.loads(line) for line in good]
    before.insert(0, {"v": 1, "nonce": "n", "seq": 0, "kind": "start", "plugin": "x", "pid": 1})
    for i, r in enumerate(before):
        r["seq"] = i
    log = _log([json.dumps(r).encode() for r in before])
    assert "report records before the first variant" in log.problems


def test_records_after_a_reset_failure_are_refused() -> None:
    lines = variant_lines(
        "n",
        [([(NODE_OK, "pass", "")], 0, None)],
        tail=[{"kind": "reset", "ok": False, "detail": "x"}, {"kind": "variant", "index": 2}],
    )
    log = _log(lines)
    assert log.reset_failure == "x"
    assert "a report record after a failed reset" in log.problems


def test_a_channel_with_variants_has_caps_scaled_to_them(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain = ReportChannel(tmp_path / "a", "n", judged=True)
    many = ReportChannel(tmp_path / "b", "n", judged=True, variants=256)
    try:
        assert many.log.max_records == 257 * plain.log.max_records
        assert many._max_bytes == plain._max_bytes + 256 * (1 << 20)
    finally:
        plain.close()
        many.close()


def test_a_channel_s_end_wakes_its_reader_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``finish`` and ``close`` wake the reader's ``select`` themselves: with a slice of an hour
    the reader still ends, its records read, as soon as the writer's stream ended and the run
    finished (before, the reader saw the end only when its slice ran out)."""
    import socket  # noqa: PLC0415

    from executord.runs import channel as chan  # noqa: PLC0415

    monkeypatch.setattr(chan, "_SLICE_S", 3600.0)
    (tmp_path / "a").mkdir()
    ch = ReportChannel(tmp_path / "a", "n0nce")
    writer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    writer.connect(str(tmp_path / "a" / chan.SOCKET_NAME))
    start = {"v": 1, "nonce": "n0nce", "seq": 0, "kind": "start", "plugin": "p"}
    writer.sendall(json.dumps(start).encode() + b"\n")
    writer.close()
    log = ch.finish(60.0)  # waits on events only: the stream's end, then the reader's
    assert not ch._thread.is_alive()
    assert (log.started, log.plugin, log.count, log.problems) == (True, "p", 1, [])
    ch.close()  # again: nothing left to release, nothing raised
    (tmp_path / "b").mkdir()
    idle = ReportChannel(tmp_path / "b", "n0nce")  # no writer at all: close alone wakes it
    idle.close()
    assert not idle._thread.is_alive()


# -- the client's side -----------------------------------------------------------------------------


def test_run_outcome_carries_failure_kind_and_variant_over_the_wire() -> None:
    o = RunOutcome.make("p", 1, "fail", "assert 1", failure_kind="assertion", variant=3)
    back = RunOutcome.from_proto(o.to_proto())
    assert (back.failure_kind, back.variant) == ("assertion", 3)
    assert RunOutcome.make("p", 1, "pass", failure_kind="assertion").failure_kind == ""
    assert "variant" not in RunOutcome.make("p", 1, "pass").to_json()
    assert RunOutcome.make("p", 1, "error", failure_kind="subject").to_json()["failure_kind"] == (
        "subject"
    )
    with pytest.raises(ValueError, match="failure kind"):
        RunOutcome.make("p", 1, "fail", failure_kind="predicate")


def test_the_client_keeps_asked_variants_and_names_the_missing_ones() -> None:
    from patchgate.envelope import Envelope  # noqa: PLC0415 - only this test
    from patchgate.executor_client import ExecutionResult, _variants_checked  # noqa: PLC0415

    outcomes = tuple(
        RunOutcome.make(pid, 1, "pass", variant=n) for pid in ("a", "b") for n in (1, 2, 9)
    )
    result = ExecutionResult(
        address="x", lane="local", executor_keyid="k", observed_fixture_digest="d",
        outcomes=tuple(o for o in outcomes if (o.property_id, o.variant) != ("b", 2)),
        transport=(), timings={}, sandbox={},
        envelope=Envelope(payload_type="t", payload=b"", signatures=()), uploaded_bytes=0,
    )  # fmt: skip
    checked = _variants_checked(result, [("a", 1), ("b", 1)], [["a", "b"], ["a", "b"]])
    assert sorted((o.property_id, o.variant) for o in checked.outcomes) == [
        ("a", 1), ("a", 2), ("b", 1),
    ]  # fmt: skip
    assert [(t.kind, t.property_id, t.detail) for t in checked.transport] == [
        ("empty_response", "b", "variant 2 not reported")
    ]
    assert _variants_checked(result, [("a", 1)], []) is result
    # each variant's own scope: only what it was asked for is kept, and only that is missed
    own = _variants_checked(result, [("a", 1), ("b", 1)], [["b"], ["a", "b"]])
    assert sorted((o.property_id, o.variant) for o in own.outcomes) == [("a", 2), ("b", 1)]
    assert [(t.property_id, t.detail) for t in own.transport] == [("b", "variant 2 not reported")]


def test_a_variant_plan_keeps_the_request_s_numbering_and_skips_out_of_scope_variants(
    tmp_path: Path,
) -> None:
    """``executord/runs/variants.py``: a variant scoped to no member of the group does not run
    in its sandbox; the others keep their 1-based index in the request, with their members."""
    rig = _rig(tmp_path)
    other = PropertyRun("p.other", (*CMD, "properties/test_x.py::test_other"))
    inp = _input(
        rig,
        properties=(OK, other),
        variants=(
            Variant(BILLING, b"x = 2\n", scope=("p.elsewhere",)),
            Variant(BILLING, b"x = 3\n", scope=(other.id,)),
            Variant(BILLING, b"x = 4\n"),
        ),
    )
    group = Group(CMD, ((OK.id, ()), (other.id, ())))
    plan = variant_plan(inp, group)
    assert plan == [(2, [other.id]), (3, [OK.id, other.id])]
    assert planned_ids(plan) == [other.id, OK.id]
    files = batch_files(tmp_path, plan, {OK.id: ["a"], other.id: ["b"]}, members=2, bound_ms=9,
                        nodes=["a", "b"])  # fmt: skip
    assert files == {(other.id,): "", (OK.id, other.id): "/patchgate/info/batch-1.json"}
    assert json.loads((tmp_path / "batch.json").read_text()) == {
        "bound_ms": 9, "order": ["a", "b"], "run": ["b"]}  # fmt: skip
