"""When a pre-listed flake may excuse a failing property (client.verdict.flakes; issue 13)."""

from __future__ import annotations

import dataclasses
import datetime as dt

from client.verdict.flakes import DYNAMIC, changed_code_explains, observe_flakes, quarantined
from client.verdict.stability import Stability, assess
from patchgate.pins import Flake, PropertyPin
from patchgate.results import RunOutcome
from patchgate.symbols import Symbol
from tests.unit._gate_helpers import prop, run

CLOCK = dt.datetime(2026, 9, 10, tzinfo=dt.UTC)
TEST_ID = "tests/test_w.py::test_drain"
FLK = Flake(
    id="FLK-1",
    signature="TimeoutError: worker",
    opened_on=dt.date(2026, 9, 1),
    expires_on=dt.date(2026, 10, 1),
    tests=(TEST_ID,),
)


def _prop(covers: tuple[str, ...] = ("m.other",)) -> PropertyPin:
    """A property whose test is the flake's listed test."""
    p = prop("p.w", covers)
    return dataclasses.replace(p, command=(*p.command[:-1], TEST_ID))


def _stab(*outcomes: tuple[str, str]) -> dict[str, Stability]:
    return {"p.w": assess("p.w", [run("p.w", i, o, f) for i, (o, f) in enumerate(outcomes, 1)])}


def _observe(p: PropertyPin, local: dict[str, Stability], **kw: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = {
        "suite": (p,),
        "local": local,
        "citations": {},
        "flakes": (FLK,),
        "clock": CLOCK,
        "changed_symbols": (Symbol.make("m", "f"),),
        # a trustworthy record: the property's runs imported only a module the patch left alone
        "imported": {"p.w": frozenset({"elsewhere"})},
    }
    args.update(kw)
    return observe_flakes(**args)  # type: ignore[arg-type]


def test_matching_failure_of_a_property_covering_no_changed_symbol_is_an_observation() -> None:
    report = _observe(_prop(), _stab(("pass", ""), ("fail", "TimeoutError: worker at 0x1f")))
    assert [(o.flake_id, o.test_id, o.property_id) for o in report.observations] == [
        ("FLK-1", TEST_ID, "p.w")
    ]
    assert report.observations[0].signature == "TimeoutError: worker"
    assert set(report.observations[0].to_json()) == {
        "property_id", "test_id", "flake_id", "signature", "observed"
    }  # fmt: skip
    assert report.problems == report.refused == ()


def test_a_flake_never_excuses_a_property_that_covers_a_changed_symbol() -> None:
    """Issue 13: a patch that makes a covered function raise the flake's signature."""
    failing = ("fail", "TimeoutError: worker")
    report = _observe(_prop(("m.f",)), _stab(failing, failing))
    assert report.observations == ()
    assert "cannot excuse p.w" in report.refused[0]
    assert "m.f" in report.refused[0]


def test_a_module_cover_of_the_changed_symbol_is_also_refused() -> None:
    failing = ("error", "TimeoutError: worker")
    report = _observe(_prop(("m",)), _stab(failing, failing), changed_symbols=("module:m",))
    assert report.observations == ()


def test_a_flake_never_excuses_a_run_that_executed_changed_code() -> None:
    """The property covers something else, but its failing run executed the changed symbol."""
    failing = RunOutcome.make("p.w", 2, "fail", "TimeoutError: worker", executed=("m.f",))
    local = {"p.w": assess("p.w", [run("p.w", 1, "pass"), failing])}
    report = _observe(_prop(("m.other",)), local)
    assert report.observations == ()
    assert "m.f" in report.refused[0]


def test_exceeded_bound_is_never_a_flake() -> None:
    bound = ("exceeded_bound", "TimeoutError: worker")  # even if the text happened to match
    assert _observe(_prop(), _stab(("pass", ""), bound)).observations == ()
    assert _observe(_prop(), _stab(bound, bound)).observations == ()


def test_one_matching_run_does_not_excuse_another_that_failed_otherwise() -> None:
    report = _observe(
        _prop(), _stab(("fail", "TimeoutError: worker"), ("fail", "AssertionError: 1 != 2"))
    )
    assert report.observations == ()


def test_an_empty_signature_matches_nothing() -> None:
    blank = dataclasses.replace(FLK, signature="   ")
    report = _observe(_prop(), _stab(("pass", ""), ("fail", "anything")), flakes=(blank,))
    assert report.observations == ()


def test_cited_flake_with_a_different_failure_is_an_r4_mismatch() -> None:
    p = prop("p.w", ("m.x",))
    local = {"p.w": assess("p.w", [run("p.w", 1, "fail", "AssertionError"), run("p.w", 2, "pass")])}
    report = _observe(p, local, citations={"p.w": ["FLK-1"]})
    assert report.observations == ()
    assert "FLK-1" in report.problems[0]


def test_expired_flake_is_never_observed() -> None:
    local = _stab(("fail", "TimeoutError: worker"), ("pass", ""))
    report = _observe(
        _prop(), local, citations={"p.w": ["FLK-1"]}, clock=dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
    )
    assert report.observations == ()


def test_a_flake_not_listing_the_test_and_not_cited_is_not_relevant() -> None:
    p = prop("p.w", ("m.x",))
    local = {
        "p.w": assess("p.w", [run("p.w", 1, "fail", "TimeoutError: worker"), run("p.w", 2, "pass")])
    }
    assert _observe(p, local).observations == ()


# -- quarantine (issue 17): a skip citing a valid flake is a citation, not an error --------------


def _held(klass: str = "freeze_ref", ids: tuple[str, ...] = ("FLK-1",), clock: dt.datetime = CLOCK):  # type: ignore[no-untyped-def]
    return quarantined(
        properties=(_prop(),),
        assertion_classes={"p.w": klass},
        citations={"p.w": ids} if ids else {},
        flakes=(FLK,),
        clock=clock,
    )


def test_a_skip_citing_a_valid_flake_quarantines_the_property() -> None:
    held = _held()
    assert list(held) == ["p.w"]
    assert "FLK-1 until 2026-10-01" in held["p.w"]


def test_an_expired_or_unknown_citation_quarantines_nothing() -> None:
    assert _held(clock=dt.datetime(2026, 10, 1, tzinfo=dt.UTC)) == {}
    assert _held(ids=("FLK-9",)) == {}
    assert _held(ids=("FLK-1", "FLK-9")) == {}  # every cited id must be valid


def test_a_real_predicate_that_mentions_a_flake_id_is_not_quarantined() -> None:
    assert _held(klass="property") == {}
    assert _held(ids=()) == {}


# -- issue 22: a flake never excuses a failure that changed code can explain ----------------------

FAILING = ("fail", "TimeoutError: worker")


def test_without_a_record_no_excuse_when_the_patch_changed_any_production_code() -> None:
    # --judge off, and every run today: no trustworthy record of what the runs imported. The
    # property covers m.other only, the patch changed m.f (a module constant its test reads, a
    # function its test module calls at import): the failure is a property miss.
    report = _observe(_prop(), _stab(FAILING, FAILING), imported=None)
    assert report.observations == ()
    assert report.refused == (
        "flake FLK-1 cannot excuse p.w: no trustworthy record of what its runs imported, and the "
        "patch changed production code (m.f)",
    )
    missing = _observe(_prop(), _stab(FAILING, FAILING), imported={"other": frozenset()})
    assert missing.observations == ()  # a record of another property is no record of this one


def test_without_a_record_a_patch_that_changed_no_production_code_may_be_excused() -> None:
    report = _observe(_prop(), _stab(FAILING, FAILING), imported=None, changed_symbols=())
    assert [o.flake_id for o in report.observations] == ["FLK-1"]


def test_with_a_record_only_changed_modules_the_runs_imported_explain_it() -> None:
    changed = (Symbol.make("pkg.limits", ""), Symbol.make("pkg.other", "g"))
    # imported pkg.limits (a module constant the test reads): no excuse
    hit = _observe(
        _prop(), _stab(FAILING, FAILING), changed_symbols=changed,
        imported={"p.w": frozenset({"pkg", "pkg.limits"})},
    )  # fmt: skip
    assert hit.observations == ()
    assert (
        "its runs imported modules whose code the patch changed (module:pkg.limits)"
        in (hit.refused[0])
    )
    # imported only pkg.checkout: a change of pkg.other cannot explain it
    clear = _observe(
        _prop(), _stab(FAILING, FAILING), changed_symbols=changed[1:],
        imported={"p.w": frozenset({"pkg.checkout"})},
    )  # fmt: skip
    assert [o.flake_id for o in clear.observations] == ["FLK-1"]


def test_the_explaining_symbols() -> None:
    changed = [Symbol.make("pkg", "f"), Symbol.make("pkg.sub", "g"), Symbol("pkg.x", "")]
    assert changed_code_explains(changed, None) == tuple(sorted(changed))
    assert changed_code_explains(changed, frozenset({DYNAMIC})) == tuple(sorted(changed))
    # importing pkg.mod runs pkg/__init__.py; a symbol of no module always explains
    assert changed_code_explains(changed, frozenset({"pkg.mod"})) == ("pkg.f", "pkg.x")
    assert changed_code_explains(changed, frozenset({"pkg.sub"})) == ("pkg.f", "pkg.sub.g", "pkg.x")
    assert changed_code_explains(["plain.name"], frozenset({"elsewhere"})) == ("plain.name",)
