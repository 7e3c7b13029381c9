"""The mutation stage v2 with fake executors: one batch per symbol (every changed-line mutant and
the hidden controls, served as variants), kills only by the predicate, crashed and hung listed,
controls voiding evidence, the cap's sample and seed, transport re-run once, not run;
allow_unmutated and the posture row."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from client.analysis.mutation.mutants import Mutant
from client.gate.runs.judging import JudgeMode
from client.gate.runs.mutation import (
    MIN_PART_MUTANTS,
    MutationPlan,
    _Planned,
    classify,
    executed_map,
    mutation_stage,
    plan_batches,
    run_mutants,
    split_parts,
    variant_bound_ms,
)
from client.gate.runs.suite import SignedSuite
from client.gate.runs.targets import SymbolSite, executed_by
from client.gate.settings import CheckSettings
from client.verdict.posture import Facts, merge
from client.verdict.scoring import Findings, MutationTerms, score_with_evidence
from client.verdict.stability import assess, assess_all
from patchgate.digest import Manifest
from patchgate.envelope import PAYLOAD_TYPE, Envelope, fixture_statement
from patchgate.errors import PinError, RefusedError, TransportError
from patchgate.executor_client import ExecutionResult
from patchgate.pins import DirSource, PropertyPin, load_config
from patchgate.request import ExecuteRequest
from patchgate.results import RunOutcome
from tests.unit._gate_helpers import CMD, prop, run

SRC = b"def f(a, b):\n    if a < b:\n        return a + b\n    return a * 2\n"
SITE = SymbolSite("m.f", "m.py", 1, 4, "f")
STRONG = prop("p.strong", ("m.f",))
WEAK = prop("p.weak", ("m.f",))
OTHER = prop("p.other", ("m.g",))  # in the same command-prefix group: it runs with every batch
G_SRC = b"def h(x):\n    return x + 1\n"
G_SITE = SymbolSite("g.h", "g.py", 1, 2, "h")
G_PROP = prop("p.g", ("g.h",))


def _trees(tmp_path: Path, base_src: bytes | None = None) -> tuple[Path, Path]:
    root, base = tmp_path / "patched", tmp_path / "base"
    root.mkdir()
    base.mkdir()
    (root / "m.py").write_bytes(SRC)
    (root / "other.py").write_bytes(b"x = 1\n")
    (root / "g.py").write_bytes(G_SRC)
    if base_src is not None:
        (base / "m.py").write_bytes(base_src)
    return root, base


class Fake:
    """One Execute per batch. Per variant: a control (the patched source, unmutated) passes, or
    ends as ``control`` says; on a mutant "p.strong" fails by its predicate, "p.weak" passes, any
    other property as ``outcomes`` says (outcome, failure kind). ``faults`` script whole batches."""

    def __init__(
        self, address: str, faults: list[str], outcomes: dict[str, tuple[str, str]] | None = None,
        control: dict[str, str] | None = None, drop: set[int] | None = None,
    ) -> None:  # fmt: skip
        self.address = address
        self.faults = faults
        self.outcomes = {"p.strong": ("fail", "assertion"), "p.weak": ("pass", ""),
                         **(outcomes or {})}  # fmt: skip
        self.control = control or {}
        self.drop = drop or set()
        self.batches: list[dict[str, Any]] = []

    def execute(self, request: ExecuteRequest, on_progress: Any = None) -> ExecutionResult:
        workspace, properties, runs = request.workspace, request.properties, request.runs
        targets, variant_bound_ms = request.targets, request.variant_bound_ms
        variants = [(v.path, v.source, v.scope) for v in request.variants]
        variant_scope = request.variant_scope
        assert (runs, tuple(targets)) == (1, ())
        assert (workspace / "m.py").read_bytes() == SRC  # the files on disk stay the patched ones
        self.batches.append({"props": tuple(p.id for p in properties),
                             "variants": [(p, src) for p, src, _ in variants],
                             "scopes": [tuple(sc) for _, _, sc in variants],
                             "bound": variant_bound_ms, "scope": tuple(variant_scope)})  # fmt: skip
        fault = self.faults.pop(0) if self.faults else ""
        if fault == "transport":
            raise TransportError("unavailable", "gone")
        if fault == "refused":
            raise RefusedError("FAILED_PRECONDITION", "no")
        outs = []
        for n, (path, source, scope) in enumerate(variants, start=1):
            assert path in ("m.py", "g.py")
            if n in self.drop:
                continue
            for p in properties:
                if p.id not in scope:  # as the executor: a variant runs its own scope alone
                    continue
                if source in (SRC, G_SRC):
                    status, kind = self.control.get(p.id, "pass"), "judge_error"
                else:
                    status, kind = self.outcomes.get(p.id, ("pass", ""))
                why = "" if status == "pass" else "Boom: the subject"
                outs.append(RunOutcome.make(p.id, 1, status, why, failure_kind=kind, variant=n))
        return ExecutionResult(
            address=self.address, lane="local", executor_keyid="k", observed_fixture_digest="d",
            outcomes=tuple(outs), transport=(), timings={}, sandbox={}, envelope=None,
            uploaded_bytes=0,
        )  # fmt: skip

    def close(self) -> None:
        pass


def _mutants(  # type: ignore[no-untyped-def]
    *, candidates, sites, suite, suite_ms, patched, base, k, min_score, addresses, connect,
    envelope, expected_digest, fixture_root, say=lambda _m: None, concurrency=None,
):  # fmt: skip
    """``run_mutants`` on a signed suite made of these parts."""
    signed = SignedSuite(
        envelope=envelope,
        digest=expected_digest,
        workspace=patched,
        fixture_root=fixture_root,
        base=base,
        executors=tuple(addresses),
    )
    plan = MutationPlan(
        candidates=candidates, sites=sites, suite=suite, suite_ms=suite_ms, k=k, min_score=min_score
    )
    return run_mutants(signed, plan, connect, say, concurrency)


def _evidence(  # type: ignore[no-untyped-def]
    s, *, symbols, suite, classes, local, sites, patched, base, say=lambda _m: None,
    untrusted=None, min_mutation_score=0.5,
):  # fmt: skip
    """Credit with evidence as a check scores it: the executed rule, then the mutation stage."""
    signed = SignedSuite(
        envelope=_envelope(),
        digest="d",
        workspace=patched,
        fixture_root="fixtures",
        base=base,
        executors=s.executors,
        judge=JudgeMode(judge=s.judge),
    )
    found = Findings(
        symbols=symbols,
        suite=suite,
        classes=classes,
        local=local,
        remote={},
        executed=executed_map(sites, symbols, suite, local),
        untrusted=untrusted or {},
    )
    terms = MutationTerms(
        mutants=s.mutants,
        judge=s.judge,
        allow_unmutated=False,
        min_mutation_score=min_mutation_score,
    )
    return score_with_evidence(
        found, terms, mutation_stage(s, signed, sites, found, terms, say=say), say
    )


def _run(  # type: ignore[no-untyped-def]
    tmp_path: Path, faults: list[str], k: int = 16, props: Sequence[PropertyPin] = (STRONG, WEAK),
    min_score: float = 0.5, base_src: bytes | None = None, suite: Sequence[PropertyPin] = (),
    concurrency: int = 1, **fake_kw: Any,
):  # fmt: skip
    fake = Fake("a", faults, **fake_kw)
    lines: list[str] = []
    patched, base = _trees(tmp_path, base_src)
    out = _mutants(
        candidates={"m.f": list(props)}, sites={"m.f": SITE}, suite=[*props, *suite],
        suite_ms={"p.strong": 300, "p.weak": 100}, patched=patched, base=base, k=k,
        min_score=min_score, addresses=["a"], connect=lambda _a: fake, envelope=_envelope(),
        expected_digest="d", fixture_root="fixtures", say=lines.append, concurrency=concurrency,
    )  # fmt: skip
    return out, fake, lines


def _envelope(clock_bound_ms: int = 30_000) -> Envelope:
    """An (unsigned) fixture statement: the stage reads the allowed commands and the bound."""
    manifest = Manifest(pin_id="pin", seed=7, clock_bound_ms=clock_bound_ms,
                        allowed_commands=(CMD,))  # fmt: skip
    signer = SimpleNamespace(keyid="k", role="operator")
    payload = fixture_statement(manifest, signer, "2026-09-10T00:00:00Z")  # type: ignore[arg-type]
    return Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures=())


def _mutants_of(fake: Fake, batch: int = 0) -> list[bytes]:
    return [src for _p, src in fake.batches[batch]["variants"] if src != SRC]


def test_one_batch_of_every_mutant_and_the_controls_kills_by_the_predicate(tmp_path: Path) -> None:
    out, fake, lines = _run(tmp_path, [])
    m = out.results["m.f"]
    assert len(fake.batches) == 1  # one Execute: every mutant and control of the symbol
    made = len(_mutants_of(fake))
    assert made == m.made == m.candidates > 3  # a new file: every line is the patch's
    assert len(fake.batches[0]["variants"]) == made + 7  # required_controls(0.5) controls
    assert (len(m.killed["p.strong"]), "p.weak" in m.killed) == (made, False)
    assert len(m.survived["p.weak"]) == made
    assert all(" at line " in s for s in m.survived["p.weak"])
    lines_of = [int(x.rsplit(" at line ", 1)[1]) for x in m.survived["p.weak"]]
    assert lines_of == sorted(lines_of)  # source order in the receipt, whatever the batch's order
    assert m.controls == {"p.strong": 7, "p.weak": 7}
    assert m.controls_failed == {}
    assert m.seed is None  # under the cap: no sample, no randomness in what runs
    assert sum(x.startswith("[mutation ") and "/" in x.split("]")[0] for x in lines) == made
    info = out.record["symbols"]["m.f"]
    assert (info["made"], info["candidates"], info["controls"], info["not_run"]) == (
        made, made, 7, 0)  # fmt: skip
    assert info["bound_ms"] == 1500  # max(1 s, 5 x the slowest covering suite run of 300 ms)
    assert fake.batches[0]["bound"] == 1500
    assert (out.record["min_mutation_score"], out.record["controls_required"]) == (0.5, 7)
    assert m.judge("p.strong", 0.5)[0] == 1
    assert m.judge("p.weak", 0.5)[0] == 0


def test_a_symbols_mutants_split_over_idle_slots_each_part_with_its_own_controls(
    tmp_path: Path,
) -> None:
    """With two batches in flight and one symbol, its mutants go in two batches (two sandboxes
    at once): every mutant runs once, each batch carries the required controls, and the verdict
    is the one a single batch gives."""
    out, fake, _ = _run(tmp_path, [], concurrency=2, min_score=0.9)  # 2 controls a batch
    m = out.results["m.f"]
    assert len(fake.batches) == 2
    parts = [_mutants_of(fake, i) for i in (0, 1)]
    assert all(len(p) >= MIN_PART_MUTANTS for p in parts)
    assert sorted(parts[0] + parts[1]) == sorted(set(parts[0] + parts[1]))  # none twice
    assert len(parts[0]) + len(parts[1]) == m.made
    assert [len(b["variants"]) - len(p) for b, p in zip(fake.batches, parts, strict=True)] == [2, 2]
    assert m.controls == {"p.strong": 4, "p.weak": 4}
    assert (len(m.killed["p.strong"]), len(m.survived["p.weak"])) == (m.made, m.made)
    info = out.record["symbols"]["m.f"]
    assert (info["controls"], info["batches"], info["not_run"]) == (4, 2, 0)
    assert out.record["mutants_run"] == m.made
    assert m.judge("p.strong", 0.9)[0] == 1
    # at the default threshold (7 controls a batch) parts of half the mutants are too small
    (tmp_path / "default").mkdir()
    _, one, _ = _run(tmp_path / "default", [], concurrency=2)
    assert len(one.batches) == 1


def _two_symbols(tmp_path: Path, g_ms: int, concurrency: int = 1) -> tuple[Any, Fake]:
    fake = Fake("a", [], outcomes={"p.g": ("fail", "assertion")})
    patched, base = _trees(tmp_path)
    out = _mutants(
        candidates={"m.f": [STRONG, WEAK], "g.h": [G_PROP]}, sites={"m.f": SITE, "g.h": G_SITE},
        suite=[STRONG, WEAK, G_PROP], suite_ms={"p.strong": 300, "p.weak": 100, "p.g": g_ms},
        patched=patched, base=base, k=16, min_score=0.5, addresses=["a"],
        connect=lambda _a: fake, envelope=_envelope(), expected_digest="d",
        fixture_root="fixtures", concurrency=concurrency,
    )  # fmt: skip
    return out, fake


def test_symbols_whose_runs_are_alike_share_one_batch_each_variant_running_its_own_scope(
    tmp_path: Path,
) -> None:
    """Two symbols in one command-prefix group with the same bound go in one batch (one sandbox
    start instead of two), their variants in one shuffled order; each variant names the symbol's
    own covering properties as its scope, and only those outcomes count for it."""
    out, fake = _two_symbols(tmp_path, g_ms=300)
    assert len(fake.batches) == 1
    ((batch),) = fake.batches
    paths = [p for p, _ in batch["variants"]]
    assert set(paths) == {"m.py", "g.py"}
    assert {(p, sc) for p, sc in zip(paths, batch["scopes"], strict=True)} == {
        ("m.py", ("p.strong", "p.weak")), ("g.py", ("p.g",))}  # fmt: skip
    assert set(batch["scope"]) == {"p.strong", "p.weak", "p.g"}  # the union, for old executors
    f, h = out.results["m.f"], out.results["g.h"]
    assert (len(f.killed["p.strong"]), len(f.survived["p.weak"])) == (f.made, f.made)
    assert len(h.killed["p.g"]) == h.made > 0
    assert f.controls == {"p.strong": 7, "p.weak": 7}
    assert h.controls == {"p.g": 7}
    assert "p.g" not in f.killed
    assert "p.strong" not in h.killed
    assert out.record["mutants_run"] == f.made + h.made


def test_symbols_with_different_bounds_get_batches_of_their_own(tmp_path: Path) -> None:
    _, fake = _two_symbols(tmp_path, g_ms=1000)  # 5 s bound against 1.5 s: not alike
    assert len(fake.batches) == 2
    assert sorted(b["bound"] for b in fake.batches) == [1500, 5000]


def test_split_parts_fills_idle_slots_only_with_parts_big_enough() -> None:
    assert split_parts({}, 4) == {}
    assert split_parts({"a": 6}, 1) == {"a": 1}
    assert split_parts({"a": 6}, 2) == {"a": 2}
    assert split_parts({"a": 5}, 2) == {"a": 1}  # two parts of 2 and 3: not worth two sandboxes
    assert split_parts({"a": 16, "b": 3}, 4) == {"a": 3, "b": 1}
    assert split_parts({"a": 6, "b": 6, "c": 6}, 2) == {"a": 1, "b": 1, "c": 1}
    # each part carries the symbol's controls: no part smaller than them
    assert split_parts({"a": 6}, 2, controls=2) == {"a": 2}
    assert split_parts({"a": 6}, 2, controls=7) == {"a": 1}  # 3 + 7 twice: more than 6 + 7 once
    assert split_parts({"a": 16}, 2, controls=7) == {"a": 2}


def test_no_part_holds_more_than_a_batch_does() -> None:
    """The executor refuses a batch over 256 variants: a symbol's mutants go in as many parts as
    hold them beside its controls, before any idle slot is filled."""
    assert split_parts({"a": 254}, 1, controls=2) == {"a": 1}
    assert split_parts({"a": 255}, 1, controls=2) == {"a": 2}
    assert split_parts({"a": 600, "b": 3}, 1, controls=7) == {"a": 3, "b": 1}
    assert split_parts({"a": 10}, 4, controls=2, cap=6) == {"a": 3}  # 4 parts: under 3 each
    with pytest.raises(ValueError, match="no room"):
        split_parts({"a": 1}, 1, controls=256)


def test_a_symbol_with_more_mutants_than_a_batch_holds_runs_them_all_in_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("client.gate.runs.mutation.MAX_BATCH_VARIANTS", 5)
    out, fake, _ = _run(tmp_path, [], k=6, min_score=1.0)  # 2 controls: 3 mutants a batch
    m = out.results["m.f"]
    assert m.made == 6
    assert [len(b["variants"]) for b in fake.batches] == [5, 5]
    assert sum(len(_mutants_of(fake, i)) for i in range(2)) == 6
    assert (m.not_run, m.ran("p.strong"), m.controls["p.strong"]) == (0, 6, 4)
    assert out.record["symbols"]["m.f"]["batches"] == 2


def test_controls_that_fill_a_batch_are_a_problem_said_not_a_refusal(tmp_path: Path) -> None:
    """min_mutation_score 0.01 needs 459 controls a batch: no batch can hold one mutant beside
    them, so none is sent, and the symbol says why instead of counting refused batches."""
    out, fake, _ = _run(tmp_path, [], k=2, min_score=0.01)
    assert fake.batches == []
    credit, why = out.results["m.f"].judge("p.strong", 0.01)
    assert credit == 0
    assert "needs 459 hidden controls a batch" in why, why
    assert "at most 256 variants" in out.record["symbols"]["m.f"]["problem"]


def test_the_controls_sit_at_random_positions(tmp_path: Path) -> None:
    """The order of a batch comes from the OS: over a few checks the controls move."""
    seen = set()
    for i in range(6):
        (tmp_path / str(i)).mkdir()
        _, fake, _ = _run(tmp_path / str(i), [], k=2)
        seen.add(tuple(src == SRC for _p, src in fake.batches[0]["variants"]))
    assert len(seen) > 1


def test_only_the_lines_the_patch_wrote_are_mutated(tmp_path: Path) -> None:
    base = b"def f(a, b):\n    if a < b:\n        return a - b\n    return a * 2\n"
    out, _fake, _ = _run(tmp_path, [], base_src=base)
    labels = [*out.results["m.f"].killed["p.strong"]]
    assert labels
    assert all(label.endswith(" at line 3") for label in labels), labels


def test_the_cap_draws_a_sample_and_records_its_seed(tmp_path: Path) -> None:
    out, fake, _ = _run(tmp_path, [], k=2)
    m = out.results["m.f"]
    assert (m.made, len(_mutants_of(fake))) == (2, 2)
    assert m.candidates > 2
    assert isinstance(m.seed, int)
    assert out.record["symbols"]["m.f"]["seed"] == m.seed


def test_the_batch_collects_the_covering_properties_whole_group(tmp_path: Path) -> None:
    """Every member of a covering property's command-prefix group goes with each variant (the
    same test modules collected as in the suite); only the covering properties run (the scope)
    and are counted."""
    out, fake, _ = _run(tmp_path, [], k=2, props=(STRONG,), suite=(OTHER,))
    assert fake.batches[0]["props"] == ("p.strong", "p.other")
    assert fake.batches[0]["scope"] == ("p.strong",)
    assert "p.other" not in out.results["m.f"].controls


def test_transport_re_runs_the_batch_once_then_not_run(tmp_path: Path) -> None:
    (tmp_path / "twice").mkdir()
    (tmp_path / "once").mkdir()
    out, fake, _ = _run(tmp_path / "twice", ["transport", "transport"], k=2)
    m = out.results["m.f"]
    assert len(fake.batches) == 2  # the batch, and its one re-run
    assert (m.not_run, m.ran("p.strong")) == (2, 0)
    out, fake, _ = _run(tmp_path / "once", ["transport"], k=2)
    assert len(fake.batches) == 2
    assert out.results["m.f"].not_run == 0
    assert len(out.results["m.f"].killed["p.strong"]) == 2


def test_a_refusal_is_not_run_and_not_re_run(tmp_path: Path) -> None:
    out, fake, _ = _run(tmp_path, ["refused"], k=1)
    m = out.results["m.f"]
    assert (m.not_run, m.ran("p.strong"), len(fake.batches)) == (1, 0, 1)
    assert m.judge("p.strong", 0.5) == (0, "no mutant ran (1 not run: transport or refusal)")


def test_a_variant_without_an_outcome_is_not_run(tmp_path: Path) -> None:
    out, _, _ = _run(tmp_path, [], k=2, drop=set(range(1, 40)))
    assert out.results["m.f"].not_run == 2


def test_no_mutant_could_be_made(tmp_path: Path) -> None:
    patched, base = _trees(tmp_path, base_src=None)
    (patched / "m.py").write_bytes(b"def f():\n    pass\n")
    out = _mutants(
        candidates={"m.f": [STRONG]}, sites={"m.f": SymbolSite("m.f", "m.py", 1, 2, "f")},
        suite=[STRONG], suite_ms={}, patched=patched, base=base, k=4, min_score=0.5,
        addresses=["a"], connect=lambda _a: Fake("a", []), envelope=_envelope(),
        expected_digest="d", fixture_root="fixtures",
    )  # fmt: skip
    assert out.results["m.f"].judge("p.strong", 0.5)[1].startswith("no mutant could be made")


def test_a_docstring_only_change_has_no_mutable_site(tmp_path: Path) -> None:
    base = b'def f(a, b):\n    "old"\n    return a + b\n'
    patched, base_dir = _trees(tmp_path, base_src=base)
    (patched / "m.py").write_bytes(b'def f(a, b):\n    "new"\n    return a + b\n')
    fake = Fake("a", [])
    out = _mutants(
        candidates={"m.f": [STRONG]}, sites={"m.f": SymbolSite("m.f", "m.py", 1, 3, "f")},
        suite=[STRONG], suite_ms={}, patched=patched, base=base_dir, k=4, min_score=0.5,
        addresses=["a"], connect=lambda _a: fake, envelope=_envelope(),
        expected_digest="d", fixture_root="fixtures",
    )  # fmt: skip
    assert fake.batches == []
    why = out.results["m.f"].judge("p.strong", 0.5)[1]
    assert "no mutable site on the lines the patch changed" in why, why


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


def test_an_error_is_crashed_and_a_bound_is_hung_never_a_kill(tmp_path: Path) -> None:
    """Issue 21: only the predicate's failure kills; the subject raising, a judge error (``None
    >= 0``), a failure marked as the subject's, and a hang are listed and not scored."""
    crash, judged, marked, hang = (prop(f"p.{n}", ("m.f",)) for n in ("crash", "je", "sub", "hang"))
    out, _, _ = _run(tmp_path, [], k=2, props=(crash, judged, marked, hang), outcomes={
        "p.crash": ("error", "subject"), "p.je": ("fail", "judge_error"),
        "p.sub": ("fail", "subject"), "p.hang": ("exceeded_bound", ""),
    })  # fmt: skip
    m = out.results["m.f"]
    assert (m.killed, m.survived) == ({}, {})
    for pid in ("p.crash", "p.je", "p.sub"):
        assert m.scored(pid) == 0
        assert len(m.crashed[pid]) == 2
    assert all(x.endswith(": error (Boom: the subject)") for x in m.crashed["p.crash"])
    assert len(m.hung["p.hang"]) == 2
    assert m.judge("p.crash", 0.5)[0] == 0


def test_a_control_that_does_not_pass_is_recorded_and_voids_the_evidence(tmp_path: Path) -> None:
    out, _fake, lines = _run(tmp_path, [], k=2, control={"p.strong": "error"})
    m = out.results["m.f"]
    assert len(m.controls_failed["p.strong"]) == 7
    assert all(x.startswith("error") for x in m.controls_failed["p.strong"])
    assert "p.weak" not in m.controls_failed
    credit, why = m.judge("p.strong", 0.5)
    assert (credit, why.startswith("mutation control failed")) == (0, True)
    assert any("FAILED for p.strong" in x for x in lines)


def test_the_controls_follow_the_threshold(tmp_path: Path) -> None:
    out, fake, _ = _run(tmp_path, [], k=2, min_score=0.1)
    assert sum(src == SRC for _p, src in fake.batches[0]["variants"]) == 44
    assert out.results["m.f"].controls["p.strong"] == 44
    assert out.record["controls_required"] == 44


def test_the_mutant_bound_is_capped_by_the_clock_and_floored_at_a_second() -> None:
    assert variant_bound_ms(30_000, [100]) == 1000
    assert variant_bound_ms(30_000, [900, 2000]) == 10_000
    assert variant_bound_ms(4_000, [2000]) == 4_000
    assert variant_bound_ms(0, []) == 1000


def test_only_the_predicate_kills() -> None:
    def o(status: str, kind: str = "") -> RunOutcome:
        return RunOutcome.make("p", 1, status, "" if status == "pass" else "x", failure_kind=kind)

    assert classify(o("fail", "assertion")) == "killed"
    assert classify(o("pass")) == "survived"
    assert classify(o("exceeded_bound")) == "hung"
    for status, kind in (("fail", "subject"), ("fail", "judge_error"), ("error", "subject"),
                         ("error", "judge_error")):  # fmt: skip
        assert classify(o(status, kind)) == "crashed"


def _settings(mutants: int) -> CheckSettings:
    return CheckSettings(repo=Path("r"), base="HEAD", patch=Path("p"), draft_id="d",
                         drafter="human", signer="s", executors=(), mutants=mutants)  # fmt: skip


def _with_evidence(tmp_path: Path, mutants: int, min_score: float, untrusted: str = ""):  # type: ignore[no-untyped-def]
    """score_with_evidence of one symbol; ``untrusted``: its reason, when not trusted."""
    local = {
        "p.strong": assess("p.strong", [run("p.strong", 1, "pass"), run("p.strong", 2, "pass")])
    }
    return _evidence(
        _settings(mutants), symbols=["m.f"], suite=[STRONG], classes={"p.strong": "property"},
        local=local, sites={"m.f": SITE}, patched=_trees(tmp_path)[0],
        base=tmp_path / "base",
        untrusted={"m.f": untrusted} if untrusted else None,
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
    report, record = _evidence(
        settings, symbols=["m.f", "m.g"], suite=props, classes={p.id: "property" for p in props},
        local=assess_all([p.id for p in props], outcomes),
        sites={"m.f": SITE, "m.g": g_site}, patched=_trees(tmp_path)[0], base=tmp_path / "base",
        say=lines.append, untrusted={"m.f": why},
    )  # fmt: skip
    assert report.uncredited["m.f"] == f"mutation evidence not trusted: {why}"
    assert "not trusted" not in report.uncredited["m.g"]
    assert record["untrusted"] == {"m.f": why}
    assert set(record["symbols"]) == {"m.g"}
    assert any(line.startswith("mutation: m.f not run") for line in lines)


def _planned(symbol: str, path: str, n: int, covering: tuple[str, ...]) -> Any:
    mutants = tuple(Mutant("arith", i, f"m{symbol}{i}".encode()) for i in range(1, n + 1))
    return _Planned(symbol, path, b"patched", covering, 1000, mutants)


def test_batch_planning_is_a_pure_function_of_its_inputs_and_its_random_source() -> None:
    """Every mutant in exactly one batch, every part of a symbol with its full number of
    controls, and the same random source gives the same batches."""
    planned = [_planned("m.f", "m.py", 12, ("p.strong",)), _planned("g.h", "g.py", 2, ("p.g",))]
    suite = [STRONG, G_PROP]

    def plan(seed: int, slots: int) -> tuple[list[Any], dict[str, int]]:
        return plan_batches(planned, suite, [CMD], controls=3, slots=slots, rng=random.Random(seed))

    batches, parts = plan(1, slots=4)
    assert parts == {"m.f": 3, "g.h": 1}  # spare slots deal m.f's 12 mutants into 3 parts of 4
    made = [v.mutant for b in batches for v in b.variants if v.mutant is not None]
    assert sorted(m.line for m in made if m.source.startswith(b"mm.f")) == list(range(1, 13))
    assert len(made) == 14
    for b in batches:
        for symbol in b.symbols:
            controls = [v for v in b.variants if v.symbol == symbol and v.mutant is None]
            assert len(controls) == 3
            assert {v.source for v in controls} == {b"patched"}
    assert [b.n for b in batches] == list(range(1, len(batches) + 1))
    assert plan(1, slots=4)[0] == batches
    assert plan(2, slots=4)[0] != batches  # the order is drawn, not derived from the inputs
    one, parts_one = plan(1, slots=1)
    assert parts_one == {"m.f": 1, "g.h": 1}
    assert sum(len(b.variants) for b in one) == 14 + 2 * 3
