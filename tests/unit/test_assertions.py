"""client.analysis.classify.assertions: assertion classes of test functions, judged by ast only."""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from textwrap import dedent

import pytest

from client.analysis.classify import assertions
from client.analysis.classify.assertions import (
    ASSERTION_CLASSES,
    _segment,
    _SourceLines,
    classify_properties,
    classify_property,
    classify_source,
)
from patchgate.pins import node_id_of

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)

BILLING = Path(__file__).resolve().parents[2] / "examples" / "billing"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def judge(body: str, *, name: str = "test_it", header: str = "") -> tuple[str, tuple[str, ...]]:
    source = dedent(header) + "\n" + dedent(body)
    report = classify_source(
        source.encode(), property_id="p", node_id=f"t.py::{name}", names=name.split("::")
    )
    assert report.assertion_class in ASSERTION_CLASSES
    return report.assertion_class, report.freeze_ids


def cls(body: str, **kwargs: str) -> str:
    return judge(body, **kwargs)[0]


# -- the billing example -------------------------------------------------------------------------


def billing_classes() -> dict[str, str]:
    pins = json.loads((BILLING / "pins" / "properties.json").read_text())
    return {
        p["id"]: classify_property(BILLING, p["id"], p["command"]).assertion_class
        for p in pins["properties"]
    }


def test_billing_example_classes() -> None:
    got = billing_classes()
    worked_example = {
        "billing.prorate.non_negative",
        "billing.prorate.bounded",
        "billing.invoice_total.matches_fixture",
        "billing.orders.boundary_non_negative",
    }
    assert {pid: got[pid] for pid in worked_example} == {
        "billing.prorate.non_negative": "property",
        "billing.prorate.bounded": "property",
        "billing.invoice_total.matches_fixture": "fixture_eq",
        "billing.orders.boundary_non_negative": "property",
    }


def test_worked_example_repair_is_a_property() -> None:
    body = """
    def test_it():
        orders = load_orders(FIXTURES / "orders_min.json")
        order = next(o for o in orders if o.order_id == "A-2")
        assert invoice_total(order) == sum(line.net for line in order.lines)
    """
    assert cls(body) == "property"


def test_worked_example_fixture_equality() -> None:
    body = """
    def test_it():
        order = make_order()
        assert invoice_total(order) == load_fixture("invoice.json")
    """
    assert cls(body) == "fixture_eq"


def test_predicate_hash_is_sha256_of_source_with_decorators(tmp_path: Path) -> None:
    source = '"""m"""\n\n\n@pytest.mark.slow\n@other\ndef test_a():\n    assert f() > 0\n'
    (tmp_path / "t.py").write_text(source)
    report = classify_property(tmp_path, "p", [*PYTEST, "t.py::test_a"])
    expected = "@pytest.mark.slow\n@other\ndef test_a():\n    assert f() > 0"
    assert report.predicate_hash == hashlib.sha256(expected.encode()).hexdigest()


def test_predicate_hash_of_a_method(tmp_path: Path) -> None:
    source = "class TestX:\n    def test_a(self):\n        assert f() > 0\n"
    (tmp_path / "t.py").write_text(source)
    report = classify_property(tmp_path, "p", [*PYTEST, "t.py::TestX::test_a"])
    expected = "def test_a(self):\n        assert f() > 0"
    assert report.predicate_hash == hashlib.sha256(expected.encode()).hexdigest()
    assert (report.assertion_class, report.function) == ("property", "TestX::test_a")


def test_predicate_hash_moves_when_the_test_changes(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("def test_a():\n    assert f() > 0\n")
    first = classify_property(tmp_path, "p", ["pytest", "t.py::test_a"]).predicate_hash
    (tmp_path / "t.py").write_text("def test_a():\n    assert f() >= 0\n")
    assert classify_property(tmp_path, "p", ["pytest", "t.py::test_a"]).predicate_hash != first


# -- missing things are opaque, not exceptions ------------------------------------------------


def test_missing_file_is_opaque(tmp_path: Path) -> None:
    report = classify_property(tmp_path, "p", [*PYTEST, "nope.py::test_a"])
    assert (report.assertion_class, report.predicate_hash) == ("opaque", "")
    assert "does not exist" in report.detail


def test_missing_function_is_opaque(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("def test_b():\n    assert f()\n")
    report = classify_property(tmp_path, "p", [*PYTEST, "t.py::test_a"])
    assert report.assertion_class == "opaque"
    assert "no test function" in report.detail


def test_unparsable_file_is_opaque(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("def test_a(:\n")
    assert classify_property(tmp_path, "p", ["t.py::test_a"]).assertion_class == "opaque"


def test_too_deeply_nested_file_is_opaque(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("def test_a():\n    assert " + "-" * 5_000 + "1\n")
    assert classify_property(tmp_path, "p", ["t.py::test_a"]).assertion_class == "opaque"


def test_command_without_node_id_is_opaque(tmp_path: Path) -> None:
    report = classify_property(tmp_path, "p", [*PYTEST, "t.py"])
    assert report.assertion_class == "opaque"
    assert "node id" in report.detail


def test_unsafe_node_path_is_opaque(tmp_path: Path) -> None:
    report = classify_property(tmp_path, "p", ["../outside.py::test_a"])
    assert report.assertion_class == "opaque"


def test_symlink_leaving_the_repo_is_opaque(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("def test_a():\n    assert f() > 0\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "t.py").symlink_to(outside)
    report = classify_property(repo, "p", ["t.py::test_a"])
    assert (report.assertion_class, report.detail) == ("opaque", "the test file leaves the repo.")


def test_parametrized_node_id_finds_the_function(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("def test_a(x):\n    assert f(x) > 0\n")
    report = classify_property(tmp_path, "p", ["t.py::test_a[1-2]"])
    assert report.assertion_class == "property"


@pytest.mark.parametrize(
    ("command", "node"),
    [
        ([*PYTEST, "properties/t.py::test_a"], "properties/t.py::test_a"),
        ([*PYTEST, "properties/t.py"], None),
        (["pytest", "-k", "a::b", "t.py::C::test_m"], "t.py::C::test_m"),
        ([*PYTEST, "-W", "ignore::SomeWarning", "t.py::test_a"], "t.py::test_a"),
        ([*PYTEST, "-o", "filterwarnings=ignore::X", "t.py::test_a"], "t.py::test_a"),
        ([*PYTEST, "-W", "ignore::SomeWarning"], None),
    ],
)
def test_node_id_of(command: list[str], node: str | None) -> None:
    """The node id is a positional word as pytest parses argv: an option's value never is one."""
    assert node_id_of(command) == node


def test_a_warning_filter_in_the_command_is_not_read_as_the_test(tmp_path: Path) -> None:
    """Real libraries, second round: ``-W ignore::SomeWarning`` (pytest's two-word form) left the
    property's assertions 'not visible'; the test after it is the one classified."""
    (tmp_path / "t.py").write_text("def test_a(x):\n    assert f(x) > 0\n")
    report = classify_property(
        tmp_path, "p", [*PYTEST, "-W", "ignore::SomeWarning", "t.py::test_a"]
    )
    assert report.assertion_class == "property"


# -- tautologies -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "assert True",
        "assert 1",
        "assert 'yes'",
        "assert 1 == 1",
        "assert (1, 2) == (1, 2)",
        "assert not False",
        "assert x == x",
        "assert order.total == order.total",
        "assert x == copy(x)",
        "assert x == copy.deepcopy(x)",
        "assert list(x) == x",
        "assert x == x.copy()",
        "assert x == x[:]",
        "assert x is x",
        "assert x or True",
        "assert True and 1 == 1",
        "self.assertTrue(True)",
        "self.assertEqual(x, x)",
    ],
)
def test_tautologies(statement: str) -> None:
    assert cls(f"def test_it(self, x):\n    {statement}\n") == "tautology"


@pytest.mark.parametrize(
    "statement",
    [
        "assert f(x) == f(x)",  # a determinism check calls code: not a tautology
        "assert x == sorted(x)",
        "assert x == y",
        "assert x",
        "assert isinstance(x, int)",
        "assert False",
        "assert f(x) >= 0",
        "assert x == 1 and y == y",
        "self.assertEqual(f(x), 3)",
        "np.testing.assert_array_equal(f(x), y)",
    ],
)
def test_real_assertions_are_properties(statement: str) -> None:
    assert cls(f"def test_it(self, x, y):\n    {statement}\n") == "property"


def test_pytest_raises_is_a_property() -> None:
    body = "def test_it():\n    with pytest.raises(ValueError):\n        prorate(1, 1, 0)\n"
    assert cls(body) == "property"


def test_pytest_raises_call_form_is_a_property() -> None:
    assert cls("def test_it():\n    pytest.raises(ValueError, prorate, 1, 1, 0)\n") == "property"


def test_unittest_assert_raises_is_a_property() -> None:
    body = "def test_it(self):\n    with self.assertRaises(ValueError):\n        f()\n"
    assert cls(body) == "property"


# -- fixture equality --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "assert total(o) == Decimal(load_fixture('invoice.json'))",
        "assert load_fixture('invoice.json')['total'] == total(o)",
        "assert total(o) != read_fixture('a')",
        "assert total(o) == json.load(open('fixtures/invoice.json'))",
        "assert total(o) == json.loads((FIXTURES / 'invoice.json').read_text())",
        "assert render(o) == Path('tests/fixtures/out.txt').read_text()",
        "expected = load_fixture('invoice.json')\n    assert total(o) == expected",
        "raw = load_fixture('i.json')\n    expected = Decimal(raw['t'])\n"
        "    assert total(o) == expected",
        "with open(FIXTURE_DIR / 'a.json') as f:\n        expected = json.load(f)\n"
        "    assert total(o) == expected",
        "assert render(o) == snapshot",
        "snapshot.assert_match(render(o), 'out.txt')",
        "assert_match(render(o))",
        "self.assertEqual(total(o), load_fixture('i.json'))",
    ],
)
def test_fixture_equality(body: str) -> None:
    assert cls(f"def test_it(o, snapshot):\n    {body}\n") == "fixture_eq"


def test_fixture_used_as_input_is_not_fixture_equality() -> None:
    body = """
    def test_it():
        order = parse(load_fixture("orders.json"))
        assert total(order) == sum(line.net for line in order.lines)
    """
    assert cls(body) == "property"


def test_ordering_against_a_fixture_is_a_property() -> None:
    assert cls("def test_it(o):\n    assert total(o) >= load_fixture('floor')\n") == "property"


def test_fixture_equality_beside_a_real_predicate_is_fixture_eq() -> None:
    body = """
    def test_it(o):
        assert total(o) >= 0
        assert total(o) == load_fixture("invoice.json")
    """
    assert cls(body) == "fixture_eq"


def test_tautology_beside_a_real_predicate_is_a_property() -> None:
    assert cls("def test_it(o):\n    assert True\n    assert total(o) >= 0\n") == "property"


# -- freezes, skips, opaque --------------------------------------------------------------------


def test_skip_marker_citing_a_flake_is_freeze_ref() -> None:
    body = """
    @pytest.mark.skip(reason="FLK-1044: checkout worker timeout")
    def test_it(o):
        assert total(o) >= 0
    """
    assert judge(body) == ("freeze_ref", ("FLK-1044",))


def test_xfail_marker_citing_a_flake_is_freeze_ref() -> None:
    body = '@pytest.mark.xfail(reason="see FLK-7", strict=False)\ndef test_it():\n    assert f()\n'
    assert judge(body) == ("freeze_ref", ("FLK-7",))


def test_unconditional_skip_call_is_freeze_ref() -> None:
    body = 'def test_it():\n    pytest.skip("flaky: FLK-1044")\n    assert f() > 0\n'
    assert judge(body) == ("freeze_ref", ("FLK-1044",))


def test_conditional_skip_call_with_real_assertion_is_a_property() -> None:
    body = 'def test_it():\n    if slow():\n        pytest.xfail("FLK-9")\n    assert f() > 0\n'
    assert judge(body) == ("property", ("FLK-9",))


def test_conditional_skip_call_alone_is_freeze_ref() -> None:
    body = 'def test_it():\n    if slow():\n        pytest.skip("FLK-9")\n    f()\n'
    assert judge(body) == ("freeze_ref", ("FLK-9",))


def test_class_marker_citing_a_flake_applies_to_methods() -> None:
    body = """
    @pytest.mark.xfail(reason="FLK-3")
    class TestX:
        def test_it(self):
            assert f() > 0
    """
    assert judge(body, name="TestX::test_it") == ("freeze_ref", ("FLK-3",))


def test_module_pytestmark_citing_a_flake_applies() -> None:
    body = 'pytestmark = [pytest.mark.skip(reason="FLK-5")]\ndef test_it():\n    assert f()\n'
    assert judge(body) == ("freeze_ref", ("FLK-5",))


def test_skip_without_flake_id_is_opaque() -> None:
    body = '@pytest.mark.skip(reason="later")\ndef test_it():\n    assert f() > 0\n'
    assert judge(body) == ("opaque", ())


def test_skipif_without_flake_id_keeps_the_assertions() -> None:
    body = "@pytest.mark.skipif(sys.platform == 'win32', reason='posix')\ndef test_it():\n"
    assert cls(body + "    assert f() > 0\n") == "property"


def test_no_assertion_is_opaque() -> None:
    assert cls("def test_it():\n    f()\n    print('ok')\n") == "opaque"


def test_assertion_in_nested_function_is_not_counted() -> None:
    body = "def test_it():\n    def check():\n        assert f() > 0\n"
    assert cls(body) == "opaque"


def test_async_test_function() -> None:
    assert cls("async def test_it():\n    assert await f() > 0\n") == "property"


def _this_repos_tests() -> list[tuple[str, list[str]]]:
    """Every test function of a few of this repository's own test files, as property commands."""
    root = Path(__file__).resolve().parents[2]
    out = []
    for rel in ("tests/unit/test_assertions.py", "tests/unit/test_digest.py"):
        for line in (root / rel).read_text().splitlines():
            if line.startswith("def test_"):
                name = line[4:].split("(", 1)[0]
                out.append((f"{rel}::{name}", [*PYTEST, f"{rel}::{name}"]))
    return out


def test_a_suite_is_classified_as_each_property_alone() -> None:
    """classify_properties (one parse per file) gives exactly the reports of one-by-one calls."""
    root = Path(__file__).resolve().parents[2]
    props = _this_repos_tests()
    pins = json.loads((BILLING / "pins" / "properties.json").read_text())["properties"]
    assert len(props) > 20
    assert classify_properties(root, props) == {
        pid: classify_property(root, pid, cmd) for pid, cmd in props
    }
    billing = [(p["id"], p["command"]) for p in pins]
    assert classify_properties(BILLING, billing) == {
        pid: classify_property(BILLING, pid, cmd) for pid, cmd in billing
    }


def test_a_test_file_is_analysed_once_for_all_its_properties(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression (batched runs): a suite in one file was re-parsed per property, quadratic in N."""
    calls: list[int] = []
    real = assertions.module_flow
    monkeypatch.setattr(assertions, "module_flow", lambda tree: calls.append(1) or real(tree))
    root = Path(__file__).resolve().parents[2]
    props = [p for p in _this_repos_tests() if p[0].startswith("tests/unit/test_assertions.py")]
    assert len(props) > 10
    classify_properties(root, props)
    assert len(calls) == 1


def _reference_segment(source: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The predicate text as the gate took it before lines were split once per file."""
    start = func.decorator_list[0] if func.decorator_list else func
    line = source.splitlines()[start.lineno - 1]
    col = len(line) - len(line.lstrip()) if func.decorator_list else func.col_offset
    span = ast.Pass(lineno=start.lineno, col_offset=col, end_lineno=func.end_lineno)
    span.end_col_offset = func.end_col_offset
    return ast.get_source_segment(source, span) or ""


_ODD_SOURCES = (
    "def test_a():\r\n    assert f(1) == 2\r\n\r\n"
    "@mark\r\ndef test_b():  # caf\u00e9\r\n    pass\r\n",
    "x = 1\rdef test_c():\r    assert g() \r\n@a\n@b(1)\ndef test_d(): assert h()\n",
    "def test_e():\n    s = '\u2028\u00e9'\n    assert s\n\f\ndef test_f():\n    assert 1 < f()",
    "class TestG:\n    @pytest.mark.parametrize('x', [1])\n    def test_h(self, x):\n"
    "        assert x  # \u00e9\u00e9\n\n    async def test_i(self): assert await k()\n",
)


@pytest.mark.parametrize("index", range(len(_ODD_SOURCES)))
def test_predicate_text_is_what_ast_gives_for_odd_line_ends(index: int) -> None:
    """Splitting a file's lines once (not once per test) keeps every predicate hash: the text is
    ``ast.get_source_segment``'s, with ``\\r\\n``, ``\\r``, form feeds and non-ASCII."""
    source = _ODD_SOURCES[index]
    lines = _SourceLines.of(source)
    funcs = [n for n in ast.walk(ast.parse(source)) if isinstance(n, _FUNCS)]
    assert funcs
    for func in funcs:
        assert _segment(lines, func) == _reference_segment(source, func), func.name


def test_predicate_text_is_what_ast_gives_for_every_test_in_this_repo() -> None:
    """The same over every function of the project's own test modules (hundreds of shapes)."""
    root = Path(__file__).resolve().parents[1]
    seen = 0
    for path in sorted(root.rglob("test_*.py")):
        source = path.read_text(encoding="utf-8")
        lines = _SourceLines.of(source)
        for func in ast.walk(ast.parse(source)):
            if isinstance(func, _FUNCS):
                assert _segment(lines, func) == _reference_segment(source, func), (path, func.name)
                seen += 1
    assert seen > 1000
