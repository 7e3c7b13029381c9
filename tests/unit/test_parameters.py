"""A parametrized property's parameter list is part of its predicate (issue 24): the predicate
hash moves when a patch edits the cases, wherever they are written, and only then."""

from __future__ import annotations

import hashlib

from client.analysis.classify.assertions import classify_source

NODE = "properties/test_p.py::test_p"

BASE = """\
import pytest
from billing import prorate

BASE_CASES = [(10, 1), (10, 2)]
CASES = BASE_CASES + [(0, 1)]
UNRELATED = 1


@pytest.mark.parametrize("amount,days", CASES)
def test_p(amount, days):
    assert prorate(amount, days) >= 0
"""


def _report(source: str, names: tuple[str, ...] = ("test_p",), node: str = NODE):  # type: ignore[no-untyped-def]
    return classify_source(source.encode(), property_id="p", node_id=node, names=names)


def _hash(source: str, names: tuple[str, ...] = ("test_p",)) -> str:
    return _report(source, names).predicate_hash


def test_the_cases_are_part_of_the_predicate_wherever_they_are_written() -> None:
    """The attacks: drop the case that fails (in the list the decorator names, or in the list
    that one is built from), or empty it; each moves the hash. An unrelated line does not."""
    base = _hash(BASE)
    assert _report(BASE).assertion_class == "property"
    moved = [
        BASE.replace("+ [(0, 1)]", "+ []"),
        BASE.replace("[(10, 1), (10, 2)]", "[(10, 1)]"),
        BASE.replace("CASES = BASE_CASES + [(0, 1)]", "CASES = []"),
        BASE.replace('"amount,days", CASES', '"amount,days", BASE_CASES'),
    ]
    for patched in moved:
        assert _hash(patched) != base, patched
    assert _hash(BASE.replace("UNRELATED = 1", "UNRELATED = 2")) == base


def test_a_plain_test_and_literal_cases_keep_the_hash_of_their_source() -> None:
    """No parameter list outside the function: the hash is the function's source, as before
    (receipts written before parametrized properties still verify)."""
    plain = "def test_p():\n    assert 1 + 1 == 2\n"
    assert _hash(plain) == hashlib.sha256(plain.rstrip("\n").encode()).hexdigest()
    literal = '@pytest.mark.parametrize("x", [1, 2])\ndef test_p(x):\n    assert x > 0\n'
    assert (
        _hash("import pytest\n" + literal) == hashlib.sha256(literal.rstrip().encode()).hexdigest()
    )


def test_class_and_module_marks_are_part_of_the_predicate() -> None:
    """A class's parametrize decorator, a class's or module's pytestmark, and a class attribute
    the cases come from."""
    cls = """\
import pytest

pytestmark = pytest.mark.parametrize("seed", [1, 2])


@pytest.mark.parametrize("n", [3, 4])
class TestP:
    WIDTHS = [5, 6]

    @pytest.mark.parametrize("w", WIDTHS)
    def test_p(self, seed, n, w):
        assert seed + n + w > 0
"""
    names = ("TestP", "test_p")
    base = _hash(cls, names)
    for old, new in (("[1, 2]", "[1]"), ("[3, 4]", "[3]"), ("[5, 6]", "[5]")):
        assert _hash(cls.replace(old, new), names) != base, old


def test_fixture_data_through_parameters_stays_fixture_equality() -> None:
    source = """\
import json
import pytest
from billing import total

CASES = json.loads(open("fixtures/cases.json").read())


@pytest.mark.parametrize("order,expected", CASES)
def test_p(order, expected):
    assert total(order) == expected
"""
    assert _report(source).assertion_class == "fixture_eq"
