"""The mutation stage with fake executors: kills, survivors, transport re-run once, not run; the
mutant's tree never writes through to the patched tree; allow_unmutated and the posture row."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from client.gate.runs.mutation import mutant_tree, run_mutants, score_with_evidence
from client.gate.runs.targets import SymbolSite, executed_by
from client.gate.settings import CheckSettings
from client.verdict.posture import Facts, merge
from client.verdict.stability import assess
from patchgate.errors import PinError, RefusedError, TransportError
from patchgate.executor_client import ExecutionResult
from patchgate.pins import DirSource, PropertyPin, load_config
from patchgate.results import RunOutcome
from tests.unit._gate_helpers import prop, run

SRC = b"def f(a, b):\n    if a < b:\n        return a + b\n    return a * 2\n"
SITE = SymbolSite("m.f", "m.py", 1, 4, "f")
STRONG = prop("p.strong", ("m.f",))
WEAK = prop("p.weak", ("m.f",))


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "patched"
    root.mkdir()
    (root / "m.py").write_bytes(SRC)
    (root / "other.py").write_bytes(b"x = 1\n")
    return root


class Fake:
    """Runs "p.strong" as a failure on any mutant, "p.weak" as a pass, any other property as
    ``outcomes`` says; scripted faults for the mutants. A control (the patched tree unmutated)
    passes, or ends as ``control`` says."""

    def __init__(
        self, address: str, faults: list[str], outcomes: dict[str, str] | None = None,
        control: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        self.address = address
        self.faults = faults
        self.outcomes = {"p.weak": "pass", **(outcomes or {})}
        self.control = control or {}
        self.calls: list[tuple[str, ...]] = []
        self.controls: list[tuple[str, ...]] = []

    def execute(self, *, workspace: Path, properties: Sequence[PropertyPin], runs: int = 2,
                targets: Sequence[tuple[str, int, int, str]] = (),
                **_: Any) -> ExecutionResult:  # fmt: skip
        assert runs == 1
        src = (workspace / "m.py").read_bytes()
        assert targets == (("m.py", 1, len(src.splitlines()), "m.f"),)  # the symbol's range
        if src == SRC:  # a control: every property passes unless scripted otherwise
            self.controls.append(tuple(p.id for p in properties))
            return self._result(
                tuple(RunOutcome.make(p.id, 1, self.control.get(p.id, "pass"), "",
                                      executed=("m.f",)) for p in properties)
            )  # fmt: skip
        self.calls.append(tuple(p.id for p in properties))
        fault = self.faults.pop(0) if self.faults else ""
        if fault == "transport":
            raise TransportError("unavailable", "gone")
        if fault == "refused":
            raise RefusedError("FAILED_PRECONDITION", "no")
        outs = tuple(
            RunOutcome.make(p.id, 1, self.outcomes.get(p.id, "fail"), "Boom: the subject",
                            executed=() if p.id == "p.early" else ("m.f",))
            for p in properties
        )  # fmt: skip
        return self._result(outs)

    def _result(self, outs: tuple[RunOutcome, ...]) -> ExecutionResult:
        return ExecutionResult(
            address=self.address, lane="local", executor_keyid="k", observed_fixture_digest="d",
            outcomes=outs, transport=(), timings={}, sandbox={}, envelope=None, uploaded_bytes=0,
        )  # fmt: skip

    def close(self) -> None:
        pass


def _run(  # type: ignore[no-untyped-def]
    tmp_path: Path, faults: list[str], k: int = 3, props: Sequence[PropertyPin] = (STRONG, WEAK),
    min_score: float = 0.5, **fake_kw: Any,
):  # fmt: skip
    fake = Fake("a", faults, **fake_kw)
    lines: list[str] = []
    out = run_mutants(
        candidates={"m.f": list(props)}, sites={"m.f": SITE}, patched=_tree(tmp_path), k=k,
        patch_sha256="0" * 64, addresses=["a"], connect=lambda _a: fake, envelope=None,  # type: ignore[arg-type]
        expected_digest="d", fixture_root="fixtures", say=lines.append,
        min_mutation_score=min_score, concurrency=1,
    )  # fmt: skip
    return out, fake, lines


def test_a_failing_property_kills_and_a_passing_one_lets_survive(tmp_path: Path) -> None:
    out, fake, lines = _run(tmp_path, [])
    m = out.results["m.f"]
    assert (m.made, m.scored("p.strong"), m.scored("p.weak")) == (3, 3, 3)
    assert (len(m.killed["p.strong"]), "p.weak" in m.killed) == (3, False)
    assert len(m.survived["p.weak"]) == 3
    assert all(" at line " in s for s in m.survived["p.weak"])
    assert len(fake.calls) == 3  # one Execute per mutant, both properties in it
    assert len(fake.controls) == 7  # and required_controls(0.5) unmutated ones
    assert m.controls == {"p.strong": 7, "p.weak": 7}
    assert m.controls_failed == {}
    assert sum("[mutation " in x for x in lines) == 10
    assert out.record["symbols"]["m.f"] == {
        "made": 3, "sites": m.sites, "skipped": 0, "not_run": 0, "controls": 7
    }  # fmt: skip
    assert (out.record["min_mutation_score"], out.record["controls_required"]) == (0.5, 7)
    assert out.record["mutants_run"] == 3
    assert m.judge("p.strong", 0.5)[0] == 1
    assert m.judge("p.weak", 0.5)[0] == 0


def test_transport_is_no_kill_re_run_once_then_not_run(tmp_path: Path) -> None:
    out, fake, _ = _run(tmp_path, ["transport", "transport", "transport"], k=2)
    m = out.results["m.f"]
    # mutant 1: transport twice -> not run; mutant 2: transport, then runs
    assert m.not_run == 1
    assert (m.ran("p.strong"), m.ran("p.weak")) == (1, 1)
    assert len(fake.calls) == 4


def test_a_refusal_is_not_run_and_not_re_run(tmp_path: Path) -> None:
    out, fake, _ = _run(tmp_path, ["refused"], k=1)
    m = out.results["m.f"]
    assert (m.not_run, m.ran("p.strong"), len(fake.calls)) == (1, 0, 1)
    assert m.judge("p.strong", 0.5) == (0, "no mutant ran (1 not run: transport or refusal)")


def test_no_mutant_could_be_made(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "m.py").write_bytes(b"def f():\n    pass\n")
    out = run_mutants(
        candidates={"m.f": [STRONG]}, sites={"m.f": SymbolSite("m.f", "m.py", 1, 2, "f")},
        patched=root, k=4, patch_sha256="0" * 64, addresses=["a"],
        connect=lambda _a: Fake("a", []), envelope=None,  # type: ignore[arg-type]
        expected_digest="d", fixture_root="fixtures",
    )  # fmt: skip
    assert out.results["m.f"].judge("p.strong", 0.5)[1].startswith("no mutant could be made")


def test_the_mutant_tree_replaces_one_file_and_never_writes_the_patched_tree(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path)
    with mutant_tree(root, "m.py", b"MUTANT\n") as tree:
        assert (tree / "m.py").read_bytes() == b"MUTANT\n"
        assert (tree / "other.py").read_bytes() == b"x = 1\n"
        assert (tree / "other.py").stat().st_ino == (root / "other.py").stat().st_ino
    assert (root / "m.py").read_bytes() == SRC
    assert not tree.exists()


def test_executed_needs_every_run_and_counts_nested_targets() -> None:
    outer = SymbolSite("m.C", "m.py", 1, 20, "C")
    inner = SymbolSite("m.C.meth", "m.py", 5, 8, "C.meth")
    mod = SymbolSite("module:m", "m.py", 1, 20, None)
    sites = {s.symbol: s for s in (outer, inner, mod)}

    def ran(*names: str) -> RunOutcome:
        return RunOutcome.make("p", 1, "pass", "", executed=names)

    assert executed_by(sites, "m.C", [ran("m.C.meth"), ran("m.C")])
    assert not executed_by(sites, "m.C.meth", [ran("m.C.meth"), ran("m.C")])
    assert not executed_by(sites, "m.C", [ran(), ran()])
    assert not executed_by(sites, "m.C", [None, None])
    assert executed_by(sites, "module:m", [run("p", 1, "pass")])
    assert not executed_by(sites, "m.gone", [ran("m.gone")])


def test_allow_unmutated_is_a_reviewed_boolean(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.patchgate]\nallow_unmutated = true\n")
    assert load_config(DirSource(tmp_path)).allow_unmutated is True
    (tmp_path / "pyproject.toml").write_text("[tool.patchgate]\n")
    assert load_config(DirSource(tmp_path)).allow_unmutated is False
    (tmp_path / "pyproject.toml").write_text('[tool.patchgate]\nallow_unmutated = "yes"\n')
    with pytest.raises(PinError, match="allow_unmutated"):
        load_config(DirSource(tmp_path))


def test_an_unmutated_check_is_not_admitted() -> None:
    passed = Facts(decision="admit", coverage=1.0, changed_symbols=1, suite_passed=True)
    assert merge(passed).admit
    no = merge(Facts(decision="admit", coverage=1.0, changed_symbols=1, suite_passed=True,
                     unmutated=True))  # fmt: skip
    assert (no.posture, no.admit) == ("reject_credit", False)


def test_a_failure_that_never_reached_the_symbol_is_no_kill(tmp_path: Path) -> None:
    """A run that failed before it executed the mutated symbol (an import-time guard that notices
    its own mutation) does not kill: the mutant survives it."""
    early = prop("p.early", ("m.f",))
    out, _, lines = _run(tmp_path, [], k=2, props=(early,))
    m = out.results["m.f"]
    assert (m.ran("p.early"), m.killed) == (2, {})
    assert len(m.survived["p.early"]) == 2
    progress = [x for x in lines if x.startswith("[mutation ") and ": control: " not in x]
    assert len(progress) == 2
    assert all(x.endswith(": survived") for x in progress)


def test_an_error_is_crashed_and_a_bound_is_hung_never_a_kill(tmp_path: Path) -> None:
    """Issue 21: only the predicate's failure kills; the subject raising (``error``) and a hang
    (``exceeded_bound``) are listed with a short why and not scored."""
    crash, hang = prop("p.crash", ("m.f",)), prop("p.hang", ("m.f",))
    out, _, _ = _run(tmp_path, [], k=2, props=(crash, hang),
                     outcomes={"p.crash": "error", "p.hang": "exceeded_bound"})  # fmt: skip
    m = out.results["m.f"]
    assert (m.killed, m.survived, m.scored("p.crash"), m.scored("p.hang")) == ({}, {}, 0, 0)
    assert len(m.crashed["p.crash"]) == 2
    assert all(x.endswith(": Boom: the subject") for x in m.crashed["p.crash"])
    assert len(m.hung["p.hang"]) == 2
    assert m.judge("p.crash", 0.5)[0] == 0


def test_a_control_that_does_not_pass_is_recorded_and_voids_the_evidence(tmp_path: Path) -> None:
    out, fake, lines = _run(tmp_path, [], k=2, control={"p.strong": "error"})
    m = out.results["m.f"]
    assert len(fake.controls) == 7
    assert len(m.controls_failed["p.strong"]) == 7
    assert all(x.endswith(": error") for x in m.controls_failed["p.strong"])
    assert "p.weak" not in m.controls_failed
    credit, why = m.judge("p.strong", 0.5)
    assert (credit, why.startswith("mutation control failed (control ")) == (0, True)
    assert any("control: failed (p.strong error)" in x for x in lines)


def test_the_controls_follow_the_threshold(tmp_path: Path) -> None:
    out, fake, _ = _run(tmp_path, [], k=2, min_score=0.1)
    assert len(fake.controls) == 44
    assert out.results["m.f"].controls["p.strong"] == 44
    assert out.record["controls_required"] == 44


def _settings(mutants: int) -> CheckSettings:
    return CheckSettings(repo=Path("r"), base="HEAD", patch=Path("p"), draft_id="d",
                         drafter="human", signer="s", executors=(), mutants=mutants)  # fmt: skip


def _with_evidence(tmp_path: Path, mutants: int, min_score: float, untrusted: str = ""):  # type: ignore[no-untyped-def]
    local = {
        "p.strong": assess("p.strong", [run("p.strong", 1, "pass"), run("p.strong", 2, "pass")])
    }
    return score_with_evidence(
        _settings(mutants), symbols=["m.f"], suite=[STRONG], classes={"p.strong": "property"},
        local=local, remote={}, sites={"m.f": SITE}, patched=_tree(tmp_path),
        allow_unmutated=False, envelope=None, digest="d", fixture_root="fixtures",  # type: ignore[arg-type]
        executor_keyring=None, patch_sha256="0" * 64, say=lambda _m: None, untrusted=untrusted,
        min_mutation_score=min_score,
    )  # fmt: skip


def test_the_mutation_entry_records_the_threshold_whether_or_not_the_stage_ran(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, off = _with_evidence(tmp_path / "a", 0, 0.9)
    assert off == {"enabled": False, "allow_unmutated": False, "min_mutation_score": 0.9,
                   "controls_required": 2}  # fmt: skip
    report, untrusted = _with_evidence(tmp_path / "b", 4, 0.1, untrusted="m.py:1 name __file__")
    assert (untrusted["min_mutation_score"], untrusted["controls_required"]) == (0.1, 44)
    assert report.credits == {"m.f": 0}
