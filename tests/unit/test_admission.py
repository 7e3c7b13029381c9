"""The admission matrix (DESIGN §6 step 6): each row, first match wins, suite and skipped lists."""

from __future__ import annotations

from client.verdict.admission import covers_symbol, decide
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


def test_covers_matches_nested_methods_and_module_code_but_not_prefix_names() -> None:
    assert covers_symbol("billing.Line", "billing.Line.net")
    assert covers_symbol("billing.prorate", "billing.prorate.<locals>.clamp")
    assert covers_symbol("billing.orders", "module:billing.orders")
    assert not covers_symbol("billing.prorate", "billing.prorate_all")
    assert not covers_symbol("billing.orders.load_orders", "module:billing.orders")
