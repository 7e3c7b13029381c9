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
from client.verdict.stability import assess_all
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
    """Runs "p.strong" as a failure on any mutant, "p.weak" as a pass; scripted faults."""

    def __init__(self, address: str, faults: list[str]) -> None:
        self.address = address
        self.faults = faults
        self.calls: list[tuple[str, ...]] = []

    def execute(self, *, workspace: Path, properties: Sequence[PropertyPin], runs: int = 2,
                targets: Sequence[tuple[str, int, int, str]] = (),
                **_: Any) -> ExecutionResult:  # fmt: skip
        assert runs == 1
        src = (workspace / "m.py").read_bytes()
        assert src != SRC  # the mutant is what runs
        self.calls.append(tuple(p.id for p in properties))
        fault = self.faults.pop(0) if self.faults else ""
        if fault == "transport":
            raise TransportError("unavailable", "gone")
        if fault == "refused":
            raise RefusedError("FAILED_PRECONDITION", "no")
        assert targets == (("m.py", 1, len(src.splitlines()), "m.f"),)  # the mutant's range
        outs = tuple(
            RunOutcome.make(p.id, 1, "fail" if p.id != "p.weak" else "pass", "",
                            executed=() if p.id == "p.early" else ("m.f",))
            for p in properties
        )  # fmt: skip
        return ExecutionResult(
            address=self.address, lane="local", executor_keyid="k", observed_fixture_digest="d",
            outcomes=outs, transport=(), timings={}, sandbox={}, envelope=None, uploaded_bytes=0,
        )  # fmt: skip

    def close(self) -> None:
        pass


def _run(
    tmp_path: Path, faults: list[str], k: int = 3, props: Sequence[PropertyPin] = (STRONG, WEAK)
):  # type: ignore[no-untyped-def]
    fake = Fake("a", faults)
    lines: list[str] = []
    out = run_mutants(
        candidates={"m.f": list(props)}, sites={"m.f": SITE}, patched=_tree(tmp_path), k=k,
        patch_sha256="0" * 64, addresses=["a"], connect=lambda _a: fake, envelope=None,  # type: ignore[arg-type]
        expected_digest="d", fixture_root="fixtures", say=lines.append,
    )  # fmt: skip
    return out, fake, lines


def test_a_failing_property_kills_and_a_passing_one_lets_survive(tmp_path: Path) -> None:
    out, fake, lines = _run(tmp_path, [])
    m = out.results["m.f"]
    assert (m.made, m.ran, m.killed) == (3, {"p.strong": 3, "p.weak": 3}, {"p.strong": 3})
    assert len(m.survivors["p.weak"]) == 3
    assert all(" at line " in s for s in m.survivors["p.weak"])
    assert len(fake.calls) == 3  # one Execute per mutant, both properties in it
    assert sum("[mutation " in x for x in lines) == 3
    assert out.record["symbols"]["m.f"] == {"made": 3, "skipped": 0, "not_run": 0}
    assert m.judge("p.strong")[0] == 1
    assert m.judge("p.weak")[0] == 0


def test_transport_is_no_kill_re_run_once_then_not_run(tmp_path: Path) -> None:
    out, fake, _ = _run(tmp_path, ["transport", "transport", "transport"], k=2)
    m = out.results["m.f"]
    # mutant 1: transport twice -> not run; mutant 2: transport, then runs
    assert m.not_run == 1
    assert m.ran == {"p.strong": 1, "p.weak": 1}
    assert len(fake.calls) == 4


def test_a_refusal_is_not_run_and_not_re_run(tmp_path: Path) -> None:
    out, fake, _ = _run(tmp_path, ["refused"], k=1)
    m = out.results["m.f"]
    assert (m.not_run, m.ran, len(fake.calls)) == (1, {}, 1)
    assert m.judge("p.strong") == (0, "no mutant ran (1 not run: transport or refusal)")


def test_no_mutant_could_be_made(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "m.py").write_bytes(b"def f():\n    pass\n")
    out = run_mutants(
        candidates={"m.f": [STRONG]}, sites={"m.f": SymbolSite("m.f", "m.py", 1, 2, "f")},
        patched=root, k=4, patch_sha256="0" * 64, addresses=["a"],
        connect=lambda _a: Fake("a", []), envelope=None,  # type: ignore[arg-type]
        expected_digest="d", fixture_root="fixtures",
    )  # fmt: skip
    assert out.results["m.f"].judge("p.strong")[1].startswith("no mutant could be made")


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
    assert (m.ran, m.killed) == ({"p.early": 2}, {})
    assert len(m.survivors["p.early"]) == 2
    assert all(x.endswith(": survived") for x in lines if x.startswith("[mutation "))


def test_an_untrusted_symbol_runs_no_mutant_and_the_others_run_as_usual(tmp_path: Path) -> None:
    """``untrusted`` is per symbol (issue 20 item 6): ``m.f`` gets its reason and no mutant; ``m.g``
    goes to the stage as before (its source is gone, so it reports that, reaching no executor);
    the record keeps the map."""
    g_site = SymbolSite("m.g", "gone.py", 1, 2, "g")
    props = [prop("p.f", ("m.f",)), prop("p.g", ("m.g",))]
    outcomes = [
        RunOutcome.make(p.id, i, "pass", "", executed=("m.f", "m.g")) for p in props for i in (1, 2)
    ]
    settings = CheckSettings(
        repo=tmp_path, base="HEAD", patch=tmp_path / "p.diff", draft_id="d", drafter="x",
        signer="unix:/nonexistent", executors=("unix:/nonexistent",), mutants=3,
    )  # fmt: skip
    why = "the patch adds code that can observe its own mutation (m.py:2 attribute .__code__)"
    lines: list[str] = []
    report, record = score_with_evidence(
        settings, symbols=["m.f", "m.g"], suite=props, classes={p.id: "property" for p in props},
        local=assess_all([p.id for p in props], outcomes), remote={},
        sites={"m.f": SITE, "m.g": g_site}, patched=_tree(tmp_path), allow_unmutated=False,
        envelope=None, digest="d", fixture_root="fixtures", executor_keyring=None,  # type: ignore[arg-type]
        patch_sha256="0" * 64, say=lines.append, untrusted={"m.f": why},
    )  # fmt: skip
    assert report.uncredited["m.f"] == f"mutation evidence not trusted: {why}"
    assert "not trusted" not in report.uncredited["m.g"]
    assert record["untrusted"] == {"m.f": why}
    assert set(record["symbols"]) == {"m.g"}
    assert any(line.startswith("mutation: m.f not run") for line in lines)
