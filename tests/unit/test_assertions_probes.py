"""client.analysis.classify.probes: an assertion whose truth does not depend on the value the code
under test returned is a ``tautology`` (issue 22, item 5).

The forms of the issue are the list below; each has a control of the same shape that depends on
the value and stays a ``property``. Both are checked through the classifier (a whole test
function) and through :func:`vacuous` itself.
"""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from client.analysis.classify.assertions import classify_source
from client.analysis.classify.constfold import Names
from client.analysis.classify.probes import BOUND, probes_for, vacuous

HEADER = """\
import math

import pytest

from billing import prorate as f
"""

#: (form, a control of the same shape that can fail)
FORMS = [
    ("(f(x) >= 0) | True", "(f(x) >= 0) | False"),
    ("f(x) or True", "f(x) or False"),
    ("isinstance(f(x), object)", "isinstance(f(x), int)"),
    ("f(x) in (True, False)", "f(x) in (True,)"),
    ("s >= 0 or s < 0", "s >= 0 or s < -1"),
    ("f(x) == pytest.approx(0, abs=1e300)", "f(x) == pytest.approx(0, abs=1e-3)"),
    ("max(f(x), 0) >= 0", "max(f(x), 0) >= 1"),
    ("math.isfinite(1)", "math.isfinite(f(x))"),
]
NAMES = Names(origins={"math": "math", "pytest": "pytest"})


def _cls(assertion: str) -> tuple[str, str]:
    body = f"""
    def test_it():
        x = 3
        s = f(x)
        assert {assertion}
    """
    got = classify_source(
        (HEADER + dedent(body)).encode(), property_id="p", node_id="t.py::test_it",
        names=["test_it"],
    )  # fmt: skip
    return got.assertion_class, got.detail


@pytest.mark.parametrize(("form", "control"), FORMS, ids=[f for f, _ in FORMS])
def test_each_form_is_a_tautology_and_its_control_a_property(form: str, control: str) -> None:
    klass, detail = _cls(form)
    assert klass == "tautology", detail
    assert _cls(control)[0] == "property"


@pytest.mark.parametrize(("form", "control"), FORMS, ids=[f for f, _ in FORMS])
def test_the_rule_itself(form: str, control: str) -> None:
    assert vacuous(ast.parse(form, mode="eval").body, NAMES)
    assert not vacuous(ast.parse(control, mode="eval").body, NAMES)


@pytest.mark.parametrize(
    "expr",
    [
        "f(x) >= 0",
        "f(x) == 3",
        "f(x) == f(x)",  # two calls, two values: a determinism check
        "s == s.lower()",  # a method call is a leaf of its own
        "' ' not in s",
        "f(x) > 1e15",  # always false on the probes: it fails, it is no tautology
        "len(f(x)) > 0",
        "f(x) is None",
        "0 <= f(a) <= a",
        "isinstance(f(x), Decimal)",  # a class the evaluator does not know
        "f(x) == Decimal('1')",
        "f(x) and g(x)",
        "[y for y in f(x)] == []",  # a comprehension: unknown, never vacuous
        "(y := f(x)) >= 0 or y < 0",
        "f(x) == pytest.approx(0.3)",
    ],
)
def test_value_dependent_checks_are_not_vacuous(expr: str) -> None:
    assert not vacuous(ast.parse(expr, mode="eval").body, NAMES)


@pytest.mark.parametrize(
    "expr", ["len(f(x)) >= 0", "s == s", "abs(f(x)) >= 0", "bool(f(x)) in (True, False)"]
)
def test_more_vacuous_forms(expr: str) -> None:
    assert vacuous(ast.parse(expr, mode="eval").body, NAMES)


def test_the_probes_are_finite_bounded_and_typed() -> None:
    values = probes_for([3, "x", 2e15])
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    assert all(abs(v) <= BOUND for v in numbers)
    assert not any(v != v for v in numbers)  # no NaN
    for wanted in (3, 2, 4, "x", None, "", (), (0,), [], [0], {}):
        assert any(type(v) is type(wanted) and v == wanted for v in values), wanted
    assert probes_for([], {bool}) == (True, False)


def test_assert_true_call_forms_too() -> None:
    body = """
    import unittest

    class T(unittest.TestCase):
        def test_it(self):
            self.assertTrue(max(f(3), 0) >= 0)
    """
    got = classify_source(
        (HEADER + dedent(body)).encode(), property_id="p", node_id="t.py::T::test_it",
        names=["T", "test_it"],
    )  # fmt: skip
    assert got.assertion_class == "tautology", got.detail


@pytest.mark.parametrize(
    ("expr", "wanted"),
    [
        ("round(f(x), k) >= 0", False),  # k probed to -1e15: round would compute 10**10**15
        ("round(1, -(10**15)) == 0", False),  # refused by the evaluator: not decided, no hang
        ("round(f(x), 2) >= 0 or True", True),
        ("(f(x) * 10**15) % 7 >= 0 or True", False),  # a power: not modelled, never vacuous
        ("A >= 0 or A < 0", False),  # a name bound to itself: unknown, not a tautology
    ],
)
def test_the_evaluator_bounds_what_test_text_can_make_it_compute(expr: str, wanted: bool) -> None:
    names = Names(constants={"A": ast.parse("A", mode="eval").body})
    assert vacuous(ast.parse(expr, mode="eval").body, names) is wanted
