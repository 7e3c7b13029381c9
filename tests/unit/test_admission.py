"""The admission matrix (DESIGN §6 step 6): each row, first match wins, suite and skipped lists."""

from __future__ import annotations

from client.verdict.admission import covering, covers_symbol, decide
from patchgate.symbols import Symbol
from tests.unit._gate_helpers import prop

PRORATE = prop("p.prorate", ("billing.prorate",))
TOTAL = prop("p.total", ("billing.invoice_total",))
SLOW = prop("p.slow", ("billing.orders.load_orders",), "bounded_time")
PROBE = prop("p.probe", ("billing.prorate",), "external_probe")
CLASSES = {"p.prorate": "property", "p.total": "fixture_eq", "p.slow": "property"}


def _decide(**kw: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = {
        "provenance_problems": (),
        "signature_problem": None,
        "properties": (PRORATE, TOTAL, SLOW),
        "assertion_classes": CLASSES,
        "changed_symbols": ("billing.prorate", "billing.invoice_total"),
    }
    args.update(kw)
    return decide(**args)  # type: ignore[arg-type]


def test_admit_when_no_row_before_fires() -> None:
    d = _decide()
    assert (d.decision, d.row, d.admitted) == ("admit", "admit", True)


def test_provenance_row_wins_over_every_other_row() -> None:
    d = _decide(provenance_problems=("empty patch",), signature_problem="absent")
    assert (d.decision, d.row, d.reasons) == ("reject_provenance", "provenance", ("empty patch",))


def test_signature_not_by_operator_key_is_reject_fixture_role() -> None:
    d = _decide(signature_problem="signed by an executor key")
    assert (d.decision, d.row) == ("reject_fixture_role", "fixture_role")


def test_fixture_role_row_precedes_class_row() -> None:
    d = _decide(signature_problem="absent", properties=(PROBE,), assertion_classes={})
    assert d.decision == "reject_fixture_role"


def test_ineligible_class_covering_a_changed_symbol_is_reject_class() -> None:
    d = _decide(properties=(PRORATE, PROBE))
    assert (d.decision, d.row) == ("reject_class", "class")
    assert "p.probe" in d.reasons[0]


def test_tautology_covering_a_changed_symbol_is_reject_class() -> None:
    d = _decide(assertion_classes={**CLASSES, "p.prorate": "tautology"})
    assert d.decision == "reject_class"


def test_ineligible_property_covering_nothing_changed_is_skipped_and_listed() -> None:
    d = _decide()
    assert d.decision == "admit"
    assert d.suite == ("p.prorate", "p.total")
    assert [p for p, _ in d.skipped] == ["p.slow"]


def test_tautology_covering_nothing_changed_is_skipped() -> None:
    d = _decide(
        assertion_classes={**CLASSES, "p.total": "tautology"}, changed_symbols=("billing.prorate",)
    )
    assert d.decision == "admit"
    assert "p.total" in dict(d.skipped)


def test_external_probe_never_enters_the_suite() -> None:
    d = _decide(properties=(PRORATE, prop("p.ext", ("other.thing",), "external_probe")))
    assert d.suite == ("p.prorate",)
    assert "external_probe" in dict(d.skipped)["p.ext"]


def test_record_carries_decision_row_and_skipped() -> None:
    rec = _decide().to_record().to_json()
    assert rec["kind"] == "admission"
    assert rec["row"] == "admit"
    assert rec["skipped"] == [{"property_id": "p.slow", "reason": rec["skipped"][0]["reason"]}]


def S(module: str, qualname: str = "") -> Symbol:
    return Symbol.make(module, qualname)


def test_covers_matches_nested_methods_and_module_code_but_not_prefix_names() -> None:
    assert covers_symbol("billing.Line", S("billing", "Line.net"))
    assert covers_symbol("billing.prorate", S("billing", "prorate.<locals>.clamp"))
    assert covers_symbol("billing.orders", S("billing.orders"))
    assert covers_symbol("billing.orders", S("billing.orders", "load_orders"))
    assert not covers_symbol("billing.prorate", S("billing", "prorate_all"))
    assert not covers_symbol("billing.orders.load_orders", S("billing.orders"))


def test_a_package_entry_never_covers_a_sub_module() -> None:
    """Issue 13: ``covers: ["pkg"]`` credited a change in ``pkg/sub.py``."""
    assert not covers_symbol("pkg", S("pkg.sub", "f"))
    assert not covers_symbol("pkg", S("pkg.sub"))
    assert not covers_symbol("pkg", S("pkg.sub.deeper", "C.m"))
    assert covers_symbol("pkg", S("pkg", "f"))


def test_a_symbol_entry_never_reaches_into_another_module_of_the_same_name() -> None:
    """``pkg.sub`` as a class of ``pkg/__init__.py`` is not the module ``pkg/sub.py``."""
    assert covers_symbol("pkg.sub", S("pkg", "sub.f"))
    assert not covers_symbol("pkg.sub", S("pkg", "subway"))
    assert covers_symbol("pkg.sub", S("pkg.sub", "f"))
    assert not covers_symbol("pkg.sub.f", S("pkg", "sub"))


def test_a_plain_name_is_covered_only_by_an_equal_entry() -> None:
    """Without its module a name is ambiguous: fail closed, never a prefix."""
    assert covers_symbol("billing.prorate", "billing.prorate")
    assert not covers_symbol("billing", "billing.prorate")
    assert not covers_symbol("billing.Line", "billing.Line.net")
    assert covers_symbol("billing", "module:billing")
    assert not covers_symbol("bill", "module:billing")


def test_covering_keeps_the_gate_symbols() -> None:
    pin = prop("p", ("pkg",))
    assert covering(pin, [S("pkg", "f"), S("pkg.sub", "g"), S("pkg")]) == ("pkg.f", "module:pkg")


def test_unknown_covers_are_listed_in_the_record_whatever_the_decision() -> None:
    for extra in ({}, {"signature_problem": "absent"}):
        rec = _decide(unknown_covers=("p.total: billing.nope",), **extra).to_record().to_json()
        assert rec["unknown_covers"] == ["p.total: billing.nope"]
    assert _decide().to_record().to_json()["unknown_covers"] == []


def test_a_quarantined_property_is_skipped_with_its_reason_and_does_not_run() -> None:
    """Issue 17: a property quarantined by a valid freeze citation is listed, never run."""
    d = _decide(quarantined={"p.total": "quarantined by a freeze citation (FLK-1 until x)"})
    assert d.admitted
    assert "p.total" not in d.suite
    assert ("p.total", "quarantined by a freeze citation (FLK-1 until x)") in d.skipped
