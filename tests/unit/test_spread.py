"""client.gate.runs.spread and client.gate.runs.durations: batched suites cut into chunks by cost,
the durations memory that only spreads work, and run_lane with isolation run (fake executors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client.gate.runs import durations
from client.gate.runs.spread import plan_chunks
from patchgate.executor_client import ExecutionResult
from patchgate.pins import PropertyPin
from patchgate.results import RunOutcome
from tests.unit.test_execution import Fleet, _run, lost, ok

PYTEST = ("python", "-m", "pytest")
ALLOWED = [PYTEST]


def _p(pid: str, *prefix: str) -> PropertyPin:
    return PropertyPin(
        id=pid, claim="c", property_class="pure_fn", covers=("m.f",),
        command=(*PYTEST, *prefix, f"t.py::{pid}"),
    )  # fmt: skip


def _ids(chunks: list[list[PropertyPin]]) -> list[list[str]]:
    return [[p.id for p in c] for c in chunks]


def test_one_slot_takes_the_whole_suite_in_one_chunk() -> None:
    suite = [_p(f"p{i}") for i in range(5)]
    assert _ids(plan_chunks(suite, ALLOWED, 1, {})) == [[f"p{i}" for i in range(5)]]


def test_groups_stay_whole_when_there_are_enough_of_them() -> None:
    """Two prefixes, two slots: one group per chunk, never mixed."""
    suite = [_p("a1"), _p("b1", "-x"), _p("a2"), _p("b2", "-x")]
    assert sorted(_ids(plan_chunks(suite, ALLOWED, 2, {}))) == [["a1", "a2"], ["b1", "b2"]]


def test_one_group_is_halved_for_two_slots() -> None:
    suite = [_p(f"p{i}") for i in range(6)]
    chunks = _ids(plan_chunks(suite, ALLOWED, 2, {}))
    assert len(chunks) == 2
    assert sorted(i for c in chunks for i in c) == sorted(p.id for p in suite)


def test_the_split_follows_the_remembered_costs() -> None:
    """One slow group against three fast ones: the slow one gets a chunk of its own."""
    suite = [_p("slow", "-s"), _p("f1", "-a"), _p("f2", "-b"), _p("f3", "-c")]
    costs = {"slow": 9000.0, "f1": 10.0, "f2": 10.0, "f3": 10.0}
    assert _ids(plan_chunks(suite, ALLOWED, 2, costs)) == [["slow"], ["f1", "f2", "f3"]]
    even = _ids(plan_chunks(suite, ALLOWED, 2, {}))
    assert even != [["slow"], ["f1", "f2", "f3"]]  # without the memory: two and two


def test_more_slots_than_properties_gives_one_property_per_chunk() -> None:
    suite = [_p("a"), _p("b")]
    assert sorted(_ids(plan_chunks(suite, ALLOWED, 8, {}))) == [["a"], ["b"]]


def test_durations_round_trip_and_are_keyed_by_id_and_command(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    a, b = _p("a"), _p("b")
    durations.save(path, [a, b], [RunOutcome.make("a", 1, "pass", duration_ms=100),
                                  RunOutcome.make("a", 2, "pass", duration_ms=300)])  # fmt: skip
    assert durations.load(path, [a, b]) == {"a": 200.0}
    moved = PropertyPin(
        id="a", claim="c", property_class="pure_fn", covers=(), command=(*PYTEST, "other.py")
    )
    assert durations.load(path, [moved]) == {}


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[]", '{"v": 2, "ms": {}}', '{"v": 1, "ms": []}',
     '{"v": 1, "ms": {"k": "x", "j": -5, "i": true, "h": 1e12}}'],
)  # fmt: skip
def test_a_corrupt_durations_file_is_an_empty_memory(tmp_path: Path, text: str) -> None:
    path = tmp_path / "d.json"
    path.write_text(text)
    assert durations.load(path, [_p("a")]) == {}
    durations.save(path, [_p("a")], [RunOutcome.make("a", 1, "pass", duration_ms=5)])
    assert json.loads(path.read_text())["v"] == 1


def test_an_unwritable_durations_path_never_fails(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    durations.save(blocker / "d.json", [_p("a")], [RunOutcome.make("a", 1, "pass")])


def test_xdg_cache_home_decides_where_the_memory_lives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert durations.default_path() == Path("/somewhere/patchgate/durations.json")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    assert durations.default_path().is_relative_to(Path.home())


def _chunked(address: str, props: list[str], lost_ids: set[str]) -> ExecutionResult:
    """One result for a chunk: outcomes for every property but ``lost_ids`` (transport)."""
    parts = [lost(address, p) if p in lost_ids else ok(address, p) for p in props]
    first = parts[0]
    return ExecutionResult(
        address=address, lane="local", executor_keyid=f"key-{address}",
        observed_fixture_digest=first.observed_fixture_digest or "d" * 64,
        outcomes=tuple(o for r in parts for o in r.outcomes),
        transport=tuple(t for r in parts for t in r.transport),
        timings={}, sandbox={}, envelope=None, uploaded_bytes=0,
    )  # fmt: skip


def test_run_isolation_sends_one_chunk_per_address_and_reruns_only_lost_properties() -> None:
    """Two addresses, six properties: two Executes of three; a property lost to transport in its
    chunk is re-run once, alone, on the other address, and keeps only that one's outcomes."""
    seen: list[tuple[str, list[str], str]] = []
    suite = [_p(f"p{i}") for i in range(6)]

    class ChunkFleet(Fleet):
        def connect(self, address: str):  # type: ignore[no-untyped-def, override]
            fleet = self

            class C:
                def __init__(self) -> None:
                    self.address = address

                def execute(self, request, on_progress=None):  # type: ignore[no-untyped-def]
                    ids = [p.id for p in request.properties]
                    with fleet.lock:
                        seen.append((address, ids, request.isolation))
                    first = len([s for s in seen if "p1" in s[1]]) == 1
                    return _chunked(address, ids, {"p1"} if first else set())

                def close(self) -> None:
                    pass

            return C()

    fleet = ChunkFleet(lambda a, p, n: ok(a, p))
    result = _run(fleet, ["A", "B"], suite=suite, isolation="run")
    assert {o.property_id for o in result.outcomes} == {p.id for p in suite}
    first_round = [s for s in seen if len(s[1]) > 1]
    assert len(first_round) == 2
    assert all(iso == "run" for _, _, iso in seen)
    assert sorted(i for _, ids, _ in first_round for i in ids) == [p.id for p in suite]
    lost_on = next(a for a, ids, _ in first_round if "p1" in ids)
    other = "B" if lost_on == "A" else "A"
    assert seen[-1] == (other, ["p1"], "run")
    assert len(result.retried) == 2  # p1's two runs on the first address
    assert {o.property_id for o in result.outcomes}.issuperset({"p1"})
    p1 = [r for r in result.results if r["property_id"] == "p1"]
    assert [(r["address"], r["attempt"]) for r in p1] == [(lost_on, 1), (other, 2)]
    assert result.transport == []


def test_a_lane_result_entry_names_the_runs_a_property_ran_alone_and_why() -> None:
    """The executor's alone list reaches the receipt's results entry of that property only."""
    from client.gate.runs.execution import _result_entry  # noqa: PLC0415 - a private helper

    res = ok("A", "p0")
    res = ExecutionResult(**{**res.__dict__, "alone": (("p0", 2, "its batch was OOM-killed"),)})
    assert _result_entry(res, "p0", 1)["alone"] == {"2": "its batch was OOM-killed"}
    assert "alone" not in _result_entry(res, "p1", 1)
