"""client.analysis.classify.assertions: vacuous properties (issue 15, the classifier).

Each form below is a property that cannot fail (``tautology``), that checks no visible predicate
on the code under test (``opaque``), or whose expected values come from fixture data
(``fixture_eq``); each has an attacker's variant, and a control shows that ordinary code of the
same shape with a real check stays a ``property``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from textwrap import dedent

import pytest

from client.analysis.classify.assertions import classify_property, classify_source
from client.analysis.classify.production import production_in

BILLING = Path(__file__).resolve().parents[2] / "examples" / "billing"

HEADER = """\
import contextlib
import json
from contextlib import suppress
from unittest import mock
from unittest.mock import MagicMock

import pytest

from billing import prorate
from properties.conftest import FIXTURES, load_fixture
"""


def report(body: str, *, header: str = HEADER, name: str = "test_it") -> tuple[str, str]:
    source = header + "\n" + dedent(body)
    got = classify_source(
        source.encode(), property_id="p", node_id=f"t.py::{name}", names=name.split("::")
    )
    return got.assertion_class, got.detail


def cls(body: str, **kwargs: str) -> str:
    return report(body, **kwargs)[0]


# -- always-true assertions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        'assert (prorate(a, u, p) >= 0, "prorate is non-negative")',
        "assert (prorate(a, u, p) >= 0,)",
        "assert [prorate(a, u, p) >= 0]",
        "assert {prorate(a, u, p) >= 0}",
        "assert {'ok': prorate(a, u, p) >= 0}",
        "assert lambda: prorate(a, u, p) >= 0",
        "assert (prorate(a, u, p) >= 0 for _ in range(3))",
        'assert f"{prorate(a, u, p)} is fine"',
        'assert f"{prorate(a, u, p)!r}"',
        "assert 'prorate(a, u, p) >= 0'",
        "assert all([])",
        "assert all(())",
        "assert all(prorate(a, u, p) >= 0 for a in [])",
        "assert not any([])",
        "assert any([]) or True",
        "assert prorate(a, u, p) >= 0 if False else True",
        "assert test_it",  # a function object
        "self.assertTrue((prorate(a, u, p) >= 0, 'msg'))",
        "self.assertFalse([])",
    ],
)
def test_always_true_assertion_is_a_tautology(statement: str) -> None:
    assert cls(f"def test_it(self, a, u, p):\n    {statement}\n") == "tautology"


@pytest.mark.parametrize(
    "statement",
    [
        "assert prorate(a, u, p) >= 0",
        "assert (prorate(a, u, p) >= 0)",  # parentheses are not a tuple
        'assert prorate(a, u, p) >= 0, "prorate is non-negative"',  # the message form
        "assert [x for x in prorate_all(a)]",  # a comprehension may be empty
        "assert f'{prorate(a, u, p)}'",  # may render as an empty string
        "assert all(prorate(a, u, p) >= 0 for a in amounts)",
        "assert all([prorate(a, u, p) >= 0, prorate(a, 0, p) == a])",
        "assert not any(prorate(a, u, p) < 0 for a in amounts)",
        "assert ()",  # always false: it fails whenever it runs
    ],
)
def test_same_shapes_with_a_real_check_stay_properties(statement: str) -> None:
    assert cls(f"def test_it(a, u, p, amounts):\n    {statement}\n") == "property"


def test_tuple_detail_says_it_is_always_true() -> None:
    klass, detail = report("def test_it(a):\n    assert (prorate(a, 1, 2) >= 0, 'msg')\n")
    assert klass == "tautology"
    assert "always true" in detail
    assert "line" in detail


# -- two names for one value, constants behind names --------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "x = prorate(a, u, p)\n    y = x\n    assert x == y",
        "x = y = prorate(a, u, p)\n    assert x == y",
        "x = prorate(a, u, p)\n    y = x\n    z = y\n    assert z == x",
        "expected = 3\n    got = 3\n    assert got == expected",
        "assert LIMIT == 10",
        "assert ENABLED",
    ],
)
def test_aliases_and_constants_are_seen_through(body: str) -> None:
    header = HEADER + "LIMIT = 10\nENABLED = True\n"
    assert cls(f"def test_it(a, u, p):\n    {body}\n", header=header) == "tautology"


@pytest.mark.parametrize(
    "body",
    [
        "x = prorate(a, u, p)\n    y = prorate(a, u, p)\n    assert x == y",  # determinism
        "x = prorate(a, u, p)\n    y = x\n    y = prorate(a, 0, p)\n    assert x == y",
        "for i in range(3):\n        y = x\n        x = prorate(a, i, p)\n        assert x == y",
        "x = []\n    fill(x)\n    assert x == [1]",  # a list can change: not a constant
        "assert COUNTER == 10",  # rebound by a function of the module
    ],
)
def test_rebound_or_mutable_names_are_not_constants(body: str) -> None:
    header = HEADER + "COUNTER = 10\ndef bump():\n    global COUNTER\n    COUNTER += 1\n"
    assert cls(f"def test_it(a, u, p, x):\n    {body}\n", header=header) == "property"


# -- unreachable assertions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "if False:\n        assert prorate(a, u, p) >= 0",
        "if 0:\n        assert prorate(a, u, p) >= 0",
        "if None:\n        assert prorate(a, u, p) >= 0",
        "if not True:\n        assert prorate(a, u, p) >= 0",
        "if 1 == 2:\n        assert prorate(a, u, p) >= 0",
        "if DEBUG:\n        assert prorate(a, u, p) >= 0",
        "if TYPE_CHECKING:\n        assert prorate(a, u, p) >= 0",
        "debug = False\n    if debug:\n        assert prorate(a, u, p) >= 0",
        "if True:\n        pass\n    else:\n        assert prorate(a, u, p) >= 0",
        "while False:\n        assert prorate(a, u, p) >= 0",
        "while 0:\n        assert prorate(a, u, p) >= 0",
        "return\n    assert prorate(a, u, p) >= 0",
        "raise SystemExit(0)\n    assert prorate(a, u, p) >= 0",
        "if a:\n        pytest.skip('later')\n        assert prorate(a, u, p) >= 0",
        "if a:\n        return\n    else:\n        return\n    assert prorate(a, u, p) >= 0",
        "for i in range(3):\n        continue\n        assert prorate(a, i, p) >= 0",
        "for i in range(3):\n        break\n        assert prorate(a, i, p) >= 0",
        "while True:\n        pass\n    assert prorate(a, u, p) >= 0",
    ],
)
def test_unreachable_assertions_are_tautologies(body: str) -> None:
    header = HEADER + "from typing import TYPE_CHECKING\nDEBUG = False\n"
    klass, detail = report(f"def test_it(a, u, p):\n    {body}\n", header=header)
    assert klass == "tautology", detail
    assert "unreachable" in detail


@pytest.mark.parametrize(
    "iterable",
    ["[]", "()", "{}", '""', "b''", "range(0)", "range(5, 5)", "set()", "CASES", "zip([], xs)"],
)
def test_assertions_in_a_loop_over_an_empty_literal_are_tautologies(iterable: str) -> None:
    header = HEADER + "CASES = []\n"
    body = f"def test_it(p, xs):\n    for a in {iterable}:\n        assert prorate(a, 1, p) >= 0\n"
    klass, detail = report(body, header=header)
    assert klass == "tautology", detail
    assert "empty" in detail


@pytest.mark.parametrize(
    "body",
    [
        "if a > 0:\n        assert prorate(a, u, p) >= 0",
        "if DEBUG:\n        assert prorate(a, u, p) >= 0",  # DEBUG is rebound below
        "if not a:\n        return\n    assert prorate(a, u, p) >= 0",
        "for case in CASES:\n        assert prorate(case, u, p) >= 0",
        "for i in range(500):\n        assert prorate(a, i, p) >= 0",
        "for i in range(3):\n        if i:\n            continue\n"
        "        assert prorate(a, i, p) >= 0",
        "while True:\n        assert prorate(a, u, p) >= 0\n        break",
        "try:\n        return\n    finally:\n        assert prorate(a, u, p) >= 0",
        "for a in ITEMS:\n        assert prorate(a, u, p) >= 0",  # ITEMS is appended to
    ],
)
def test_reachable_assertions_stay_properties(body: str) -> None:
    header = (
        HEADER + "DEBUG = False\nDEBUG = True\nCASES = [1, 2, 3]\nITEMS = []\nITEMS.append(1)\n"
    )
    klass, detail = report(f"def test_it(a, u, p):\n    {body}\n", header=header)
    assert klass == "property", detail


# -- swallowed assertion failures -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "try:\n        assert prorate(a, u, p) >= 0\n    except AssertionError:\n        pass",
        "try:\n        assert prorate(a, u, p) >= 0\n    except Exception:\n        pass",
        "try:\n        assert prorate(a, u, p) >= 0\n    except BaseException:\n        pass",
        "try:\n        assert prorate(a, u, p) >= 0\n    except:\n        pass",
        "try:\n        assert prorate(a, u, p) >= 0\n    except (ValueError, AssertionError):\n"
        "        print('ignored')",
        "try:\n        assert prorate(a, u, p) >= 0\n    except E:\n        pass",
        "try:\n        assert prorate(a, u, p) >= 0\n    except AssertionError:\n"
        "        assert True",
        "try:\n        assert prorate(a, u, p) >= 0\n    finally:\n        return",
        "for i in range(2):\n        try:\n            assert prorate(a, i, p) >= 0\n"
        "        finally:\n            continue",
        "with contextlib.suppress(AssertionError):\n        assert prorate(a, u, p) >= 0",
        "with suppress(Exception):\n        assert prorate(a, u, p) >= 0",
        "with pytest.raises(AssertionError):\n        assert prorate(a, u, p) < 0",
        "with pytest.raises((ValueError, AssertionError)):\n        assert prorate(a, u, p) < 0",
        "with pytest.raises(Exception):\n        self.assertLess(prorate(a, u, p), 0)",
        "with self.assertRaises(AssertionError):\n        assert prorate(a, u, p) < 0",
    ],
)
def test_swallowed_assertions_are_tautologies(body: str) -> None:
    header = HEADER + "E = AssertionError\n"
    klass, detail = report(f"def test_it(self, a, u, p):\n    {body}\n", header=header)
    assert klass == "tautology", detail


@pytest.mark.parametrize(
    "body",
    [
        "try:\n        assert prorate(a, u, p) >= 0\n    except ValueError:\n        pass",
        "try:\n        assert prorate(a, u, p) >= 0\n    except AssertionError:\n        raise",
        "try:\n        assert prorate(a, u, p) >= 0\n    except Exception as exc:\n"
        "        pytest.fail(f'prorate broke: {exc}')",
        "try:\n        value = prorate(a, u, p)\n    except Exception:\n        value = -1\n"
        "    assert value >= 0",
        "with pytest.raises(ValueError):\n        prorate(a, u, 0)",
        "with pytest.raises(AssertionError):\n        prorate(a, u, 0)",  # the code raises it
        "with suppress(KeyError):\n        assert prorate(a, u, p) >= 0",
    ],
)
def test_reported_failures_stay_properties(body: str) -> None:
    klass, detail = report(f"def test_it(self, a, u, p):\n    {body}\n")
    assert klass == "property", detail


def test_a_swallowed_assertion_beside_a_real_one_is_a_property() -> None:
    body = """
    def test_it(a, u, p):
        try:
            assert prorate(a, u, p) > 10
        except AssertionError:
            pass
        assert prorate(a, u, p) >= 0
    """
    assert cls(body) == "property"


# -- helpers of the test module -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("helper", "call"),
    [
        ("def holds(v):\n    return v\n", "assert holds(True)"),
        ("def holds(v):\n    '''Doc.'''\n    return bool(v)\n", "assert holds(1 == 1)"),
        ("def holds(v):\n    return v\n", "x = prorate(a, u, p)\n    assert holds(x == x)"),
        ("def holds(v):\n    return True\n", "assert holds(prorate(a, u, p) >= 0)"),
        ("holds = lambda v: True\n", "assert holds(prorate(a, u, p) >= 0)"),
        ("def holds(*_):\n    print('checked')\n    return 'yes'\n", "assert holds(a)"),
    ],
)
def test_a_helper_returning_its_argument_or_a_constant_is_a_tautology(
    helper: str, call: str
) -> None:
    klass, detail = report(f"def test_it(a, u, p):\n    {call}\n", header=HEADER + helper)
    assert klass == "tautology", detail


@pytest.mark.parametrize(
    ("helper", "call"),
    [
        ("def ok(v):\n    return v >= 0\n", "assert ok(a)"),
        ("def ok(v):\n    return json.dumps(v) != ''\n", "assert ok(u)"),
        ("def ok():\n    return len(str(7)) == 1\n", "assert ok()"),
        ("def ok(*vals):\n    return all(v > 0 for v in vals)\n", "assert ok(1, 2)"),
    ],
)
def test_a_helper_that_never_reaches_the_code_under_test_is_opaque(helper: str, call: str) -> None:
    klass, detail = report(f"def test_it(a, u):\n    {call}\n", header=HEADER + helper)
    assert klass == "opaque", detail
    assert "no visible predicate" in detail


@pytest.mark.parametrize(
    ("helper", "call"),
    [
        ("def ok(v):\n    return v >= 0\n", "assert ok(prorate(a, u, p))"),
        ("def ok(v):\n    return v >= 0\n", "x = prorate(a, u, p)\n    assert ok(x)"),
        ("def ok(v):\n    return prorate(v, 1, 2) >= 0\n", "assert ok(a)"),
        (
            "def inner(v):\n    return prorate(v, 1, 2)\ndef ok(v):\n    return inner(v) >= 0\n",
            "assert ok(a)",
        ),
        (
            "def ok(out):\n    return out.getvalue() != ''\n",
            "out = io.StringIO()\n    prorate(a, u, p, out=out)\n    assert ok(out)",
        ),
    ],
)
def test_a_helper_over_the_code_under_test_is_a_property(helper: str, call: str) -> None:
    klass, detail = report(f"def test_it(a, u, p):\n    {call}\n", header=HEADER + helper)
    assert klass == "property", detail


def test_a_method_helper_is_read_like_a_module_helper() -> None:
    body = """
    class TestX:
        def holds(self, v):
            return v

        def test_it(self):
            assert self.holds(True)
    """
    assert cls(body, name="TestX::test_it") == "tautology"


def test_a_bare_helper_call_is_opaque() -> None:
    header = HEADER + "def check(v):\n    assert prorate(v, 1, 2) >= 0\n"
    klass, detail = report("def test_it(a):\n    check(a)\n", header=header)
    assert klass == "opaque"
    assert "no visible assertion" in detail


# -- mocks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "m = MagicMock()\n    prorate(a, 1, m)\n    m.assert_called_once()",
        "m = mock.Mock()\n    prorate(a, 1, m)\n    m.assert_called_with(1)",
        "with mock.patch('billing.helpers.log') as log:\n        prorate(a, 1, 2)\n"
        "    log.assert_not_called()",
        "sink.assert_called_once_with(1)",
        "m = MagicMock()\n    prorate(a, 1, m)\n    m.assert_something_custom()",
        "m = MagicMock()\n    prorate(a, 1, m)\n    assert m.called",
        "m = MagicMock()\n    prorate(a, 1, m)\n    assert m.call_count == 1",
        "m = MagicMock()\n    prorate(a, 1, m)\n    assert m.call_args == mock.call(1)",
    ],
)
def test_a_mock_assertion_alone_is_opaque(body: str) -> None:
    klass, detail = report(f"def test_it(a, sink):\n    {body}\n")
    assert klass == "opaque", detail
    assert "no visible predicate" in detail


def test_a_mock_assertion_beside_a_real_check_is_a_property() -> None:
    body = """
    def test_it(a):
        m = MagicMock()
        assert prorate(a, 1, 2) >= 0
        m.assert_not_called()
    """
    assert cls(body) == "property"


def test_an_unreachable_mock_assertion_is_a_tautology() -> None:
    body = "def test_it(mock_log):\n    if False:\n        mock_log.assert_called_once()\n"
    assert cls(body) == "tautology"


# -- fixture equality the classifier reads through ------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "for raw, expected in json.loads(fixture):\n        assert prorate(*raw) == expected",
        "for raw, expected in load_fixture('cases.json'):\n"
        "        assert prorate(*raw) == expected",
        "for case in json.loads((FIXTURES / 'cases.json').read_text()):\n"
        "        assert prorate(case['in'], 1, 2) == case['out']",
        "cases = load_fixture('cases.json')\n    for name, case in cases.items():\n"
        "        assert prorate(case['in'], 1, 2) == case['out']",
        "cases = load_fixture('cases.json')\n    for i, (raw, out) in enumerate(cases):\n"
        "        assert prorate(raw, 1, 2) == out",
        "cases = load_fixture('cases.json')\n"
        "    assert [prorate(c['in'], 1, 2) for c in cases] == [c['out'] for c in cases]",
        "expected = {c['id']: c['out'] for c in load_fixture('cases.json')}\n"
        "    assert prorate(1, 1, 2) == expected['a']",
        "assert all(prorate(r, 1, 2) == e for r, e in load_fixture('cases.json'))",
        "for raw, expected in CASES:\n        assert prorate(raw, 1, 2) == expected",
        "for raw, expected in cases():\n        assert prorate(raw, 1, 2) == expected",
    ],
)
def test_expected_values_read_from_fixtures_in_loops_are_fixture_eq(body: str) -> None:
    header = (
        HEADER
        + "CASES = json.loads((FIXTURES / 'cases.json').read_text())\n"
        + "def cases():\n    return load_fixture('cases.json')\n"
    )
    klass, detail = report(f"def test_it(fixture):\n    {body}\n", header=header)
    assert klass == "fixture_eq", detail


@pytest.mark.parametrize(
    "decorator",
    [
        "@pytest.mark.parametrize('raw, expected', load_fixture('cases.json'))",
        "@pytest.mark.parametrize(('raw', 'expected'), CASES)",
        "@pytest.mark.parametrize(['raw', 'expected'], cases())",
        "@pytest.mark.parametrize(argnames='raw,expected', argvalues=CASES)",
        "@pytest.mark.parametrize('raw, expected', [(c['in'], c['out']) for c in CASES])",
    ],
)
def test_parametrize_values_from_a_fixture_file_are_fixture_eq(decorator: str) -> None:
    header = (
        HEADER
        + "CASES = json.loads((FIXTURES / 'cases.json').read_text())\n"
        + "def cases():\n    with open(FIXTURES / 'cases.json') as f:\n"
        + "        return json.load(f)\n"
    )
    body = f"{decorator}\ndef test_it(raw, expected):\n    assert prorate(raw, 1, 2) == expected\n"
    klass, detail = report(body, header=header)
    assert klass == "fixture_eq", detail


def test_parametrize_on_the_class_is_read_too() -> None:
    body = """
    @pytest.mark.parametrize("raw, expected", load_fixture("cases.json"))
    class TestX:
        def test_it(self, raw, expected):
            assert prorate(raw, 1, 2) == expected
    """
    assert cls(body, name="TestX::test_it") == "fixture_eq"


@pytest.mark.parametrize(
    "body",
    [
        "for case in CASES:\n        assert prorate(case, 1, 2) >= 0",  # literal inputs
        "for raw in load_fixture('inputs.json'):\n        assert prorate(raw, 1, 2) >= 0",
        "for raw in load_fixture('inputs.json'):\n"
        "        assert prorate(raw, 1, 2) == prorate(raw, 1, 2) * 1",
        "for raw, out in [(1, 2), (3, 4)]:\n        assert prorate(raw, 1, 2) == out",
    ],
)
def test_fixture_inputs_and_literal_cases_stay_properties(body: str) -> None:
    header = HEADER + "CASES = [1, 2, 3]\n"
    klass, detail = report(f"def test_it():\n    {body}\n", header=header)
    assert klass == "property", detail


@pytest.mark.parametrize(
    "decorator",
    [
        "@pytest.mark.parametrize('raw, expected', [(1, 2), (3, 4)])",
        "@pytest.mark.parametrize('raw', load_fixture('inputs.json'))",  # inputs, no expectation
    ],
)
def test_parametrize_with_literal_or_input_values_stays_a_property(decorator: str) -> None:
    body = f"{decorator}\ndef test_it(raw):\n    assert prorate(raw, 1, 2) >= 0\n"
    assert cls(body) == "property"


# -- precedence -----------------------------------------------------------------------------------


def test_a_tautology_and_a_mock_assertion_without_a_real_one_is_a_tautology() -> None:
    body = "def test_it(mock_log):\n    assert True\n    mock_log.assert_called_once()\n"
    assert cls(body) == "tautology"


def test_fixture_equality_beside_a_tautology_is_fixture_eq() -> None:
    body = "def test_it():\n    assert (1,)\n    assert prorate(1, 1, 2) == load_fixture('a')\n"
    assert cls(body) == "fixture_eq"


def test_an_unreachable_fixture_equality_is_a_tautology_not_fixture_eq() -> None:
    body = "def test_it():\n    if False:\n        assert prorate(1, 1, 2) == load_fixture('a')\n"
    assert cls(body) == "tautology"


# -- the code under test, read from the checkout --------------------------------------------------


def test_production_modules_of_the_billing_example() -> None:
    production = production_in(BILLING)
    assert production("billing")
    assert production("billing.orders")
    assert not production("properties.conftest")  # an oracle path and a conftest
    assert not production("properties")
    assert not production("json")  # not in the checkout
    assert not production("billing.nope")


def test_production_modules_follow_source_roots(tmp_path: Path) -> None:
    (tmp_path / "src" / "textkit").mkdir(parents=True)
    (tmp_path / "src" / "textkit" / "__init__.py").write_text("")
    (tmp_path / "src" / "textkit" / "test_core.py").write_text("")
    (tmp_path / "textkit.py").write_text("")  # outside the source root: harness, not code
    production = production_in(tmp_path)
    assert production("textkit")
    assert not production("textkit.test_core")
    (tmp_path / "pyproject.toml").write_text('[tool.patchgate]\nsource_roots = ["lib"]\n')
    assert not production_in(tmp_path)("textkit")


def test_a_symlinked_module_is_not_production(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text("")
    (tmp_path / "alias.py").symlink_to(tmp_path / "real.py")
    production = production_in(tmp_path)
    assert production("real")
    assert not production("alias")


def test_helpers_are_judged_against_the_checkouts_code(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("def price(x):\n    return x\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "helpers.py").write_text("def ok(v):\n    return v > 0\n")
    (tmp_path / "tests" / "test_shop.py").write_text(
        "from shop import price\n"
        "from tests.helpers import ok as imported_ok\n"
        "def ok(v):\n    return v > 0\n"
        "def uses(v):\n    return imported_ok(v)\n"
        "def test_real():\n    assert ok(price(3))\n"
        "def test_opaque():\n    assert uses(3)\n"
    )
    command = ["python", "-m", "pytest", "tests/test_shop.py::test_real"]
    assert classify_property(tmp_path, "p", command).assertion_class == "property"
    command[-1] = "tests/test_shop.py::test_opaque"
    report_ = classify_property(tmp_path, "p", command)
    assert report_.assertion_class == "opaque"
    assert "uses()" in report_.detail


def test_the_billing_example_keeps_its_classes() -> None:
    pins = json.loads((BILLING / "pins" / "properties.json").read_text())
    got = {
        p["id"]: classify_property(BILLING, p["id"], p["command"]).assertion_class
        for p in pins["properties"]
    }
    assert got["billing.invoice_total.matches_fixture"] == "fixture_eq"
    assert {k for k, v in got.items() if v == "property"} == {
        "billing.prorate.non_negative",
        "billing.prorate.bounded",
        "billing.orders.boundary_non_negative",
        "billing.prorate.exact",
    }


# -- ordinary tests of this repository that once read wrong ---------------------------------------


def test_a_function_whose_name_ends_in_patch_is_not_a_mock() -> None:
    body = """
    def test_it(repo):
        t = _judge_patch(repo, b"x")
        assert t.symbols == ("billing.Line.net",)
    """
    assert cls(body) == "property"


def test_patch_imported_from_mock_is_a_mock() -> None:
    header = HEADER + "from unittest.mock import patch\n"
    body = """
    def test_it():
        with patch("billing.log") as log:
            prorate(1, 1, 2)
        log.assert_called_once_with(1)
    """
    assert cls(body, header=header) == "opaque"


def test_an_exception_named_after_fixtures_in_parametrize_is_not_fixture_content() -> None:
    body = """
    @pytest.mark.parametrize(("exc", "code"), [(FixtureScanError(missing=["a"]), 2)])
    def test_it(exc, code):
        assert exit_code_for(exc) == code
    """
    assert cls(body) == "property"


@pytest.mark.parametrize(
    "path", ["tests/unit/test_diffparse.py", "tests/unit/test_credit.py", "tests/unit/test_pins.py"]
)
def test_every_test_of_real_modules_gets_a_class_without_raising(path: str) -> None:
    """The readers never raise on ordinary code and find no tautology in these tests."""
    raw = (BILLING.parents[1] / path).read_bytes()
    tree = ast.parse(raw)
    tests = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name[:5] == "test_"]
    got = [
        classify_source(raw, property_id="p", node_id=f"{path}::{t}", names=[t]).assertion_class
        for t in tests
    ]
    assert set(got) <= {"property", "opaque", "fixture_eq"}
    assert "property" in got


@pytest.mark.parametrize(
    "helper",
    [
        "def holds(v):\n    return v > 0\ndef holds(v):\n    return v\n",  # redefined
        "if True:\n    def holds(v):\n        return v\n",  # under a condition
        "try:\n    def holds(v):\n        return v\nexcept ImportError:\n    holds = None\n",
    ],
)
def test_a_helper_defined_twice_or_under_a_condition_is_not_a_way_out(helper: str) -> None:
    klass, detail = report("def test_it():\n    assert holds(True)\n", header=HEADER + helper)
    assert klass in {"opaque", "tautology"}, detail


def test_a_redefined_helper_that_reaches_the_code_is_a_property() -> None:
    helper = "def ok(v):\n    return v\ndef ok(v):\n    return prorate(v, 1, 2) >= 0\n"
    assert cls("def test_it(a):\n    assert ok(a)\n", header=HEADER + helper) == "property"


def test_an_early_return_when_a_constant_is_false_makes_the_rest_unreachable() -> None:
    header = HEADER + "DEBUG = False\n"
    body = "def test_it(a):\n    if not DEBUG:\n        return\n    assert prorate(a, 1, 2) >= 0\n"
    assert cls(body, header=header) == "tautology"


def test_a_fallback_def_beside_an_import_of_the_code_is_the_code() -> None:
    header = (
        HEADER
        + "try:\n    from billing import is_valid\nexcept ImportError:\n"
        + "    def is_valid(v):\n        return True\n"
    )
    assert cls("def test_it():\n    assert is_valid(3)\n", header=header) == "property"
