"""Mutation v2's mutant maker (issue 21): sites only on the changed lines of the symbol's own
statements, the Decimal literal as a constant, every candidate or a recorded-seed sample, and
changed_lines from difflib."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings

from client.analysis.mutation.mutants import NO_SITE, MutantSet, changed_lines, make_mutants
from tests.strategies import python_edits

SRC = b'''"""The module."""
import os
from decimal import Decimal

LIMIT = 10
TAX = Decimal("0.01")


def register(n):
    return lambda f: f


@register(7)
def price(a, b=3):
    """Price."""
    if a < b:
        return a + b
    return a * 2


def outer(x):
    y = x + 1

    @register(8)
    def inner(z=4):
        return z - 1

    return inner(y) > 0


class Order(Base, flag=5):
    """An order."""

    rate = 2

    def total(self, items):
        return sum((i.price for i in items), Decimal("0"))

    if LIMIT > 3:
        cap = LIMIT - 1

    def count(self):
        return len(self.rate)


print(LIMIT * 2)
'''


def _line(text: str, src: bytes = SRC) -> int:
    """The 1-based number of the first line of ``src`` holding ``text``."""
    return next(n for n, ln in enumerate(src.decode().splitlines(), 1) if text in ln)


def _make(qualname: str | None, *marks: str, cap: int = 1000, seed: int | None = None) -> MutantSet:
    """The mutants of ``qualname`` when the lines holding ``marks`` are the changed ones."""
    lines = frozenset(_line(m) for m in marks)
    return make_mutants(SRC, qualname, changed_lines=lines, cap=cap, seed=seed)


def _labels(ms: MutantSet) -> set[str]:
    return {m.label for m in ms.mutants}


def _changed_text(ms: MutantSet, line: int) -> set[str]:
    """The text of ``line`` in each mutant (the line count unchanged)."""
    return {m.source.decode().splitlines()[line - 1].strip() for m in ms.mutants}


# functions


def test_a_functions_sites_are_on_its_changed_lines_only() -> None:
    ms = _make("price", "return a + b")
    n = _line("return a + b")
    assert _labels(ms) == {
        f"return-none at line {n}", f"pass at line {n}", f"arith at line {n}",
    }  # fmt: skip
    assert (ms.sites, ms.candidates, ms.skipped, ms.seed, ms.problem) == (3, 3, 0, None, "")
    assert _labels(_make("price", "if a < b:")) == {
        f"negate at line {_line('if a < b:')}", f"compare at line {_line('if a < b:')}",
    }  # fmt: skip


def test_a_changed_default_and_decorator_are_the_functions_sites() -> None:
    assert _changed_text(_make("price", "def price("), _line("def price(")) == {
        "def price(a, b=(4)):", "def price(a, b=(2)):",
    }  # fmt: skip
    assert _changed_text(_make("price", "@register(7)"), _line("@register(7)")) == {
        "@register((8))", "@register((6))",
    }  # fmt: skip


def test_a_change_outside_the_symbol_gives_it_nothing() -> None:
    ms = _make("price", "LIMIT = 10", "y = x + 1", "rate = 2")
    assert (ms.mutants, ms.sites, ms.problem) == ((), 0, NO_SITE)


# nested definitions


def test_the_outer_functions_change_does_not_mutate_the_nested_def() -> None:
    """Every line of ``outer`` changed: its own statements only, not ``inner``'s decorator,
    default or body (``outer.<locals>.inner`` is its own symbol)."""
    marks = ("def outer", "y = x + 1", "@register(8)", "def inner", "return z - 1", "inner(y) > 0")
    ms = _make("outer", *marks)
    lines = {m.line for m in ms.mutants}
    assert lines == {_line("y = x + 1"), _line("inner(y) > 0")}
    assert ms.sites == ms.candidates + ms.skipped > 0


def test_the_nested_defs_change_does_not_mutate_the_outer_function() -> None:
    marks = ("@register(8)", "def inner", "return z - 1")
    assert _make("outer", *marks).problem == NO_SITE
    inner = _make("outer.<locals>.inner", *marks)
    assert {m.line for m in inner.mutants} == {_line(m) for m in marks}
    assert _make("outer.<locals>.inner", "y = x + 1", "inner(y) > 0").problem == NO_SITE


# classes and methods


def test_a_changed_method_gives_its_class_no_mutant_and_the_method_its_own() -> None:
    mark = "return sum((i.price"
    assert _make("Order", mark).problem == NO_SITE
    meth = _make("Order.total", mark)
    assert {m.line for m in meth.mutants} == {_line(mark)}
    assert meth.mutants


def test_a_changed_class_attribute_mutates_only_that_statement_not_the_methods() -> None:
    ms = _make("Order", "rate = 2")
    n = _line("rate = 2")
    assert _labels(ms) == {
        f"pass at line {n}",
        f"constant+1 at line {n}",
        f"constant-1 at line {n}",
    }
    assert _make("Order.count", "rate = 2").problem == NO_SITE
    assert _make("Order.total", "rate = 2").problem == NO_SITE


def test_a_classes_bases_keywords_and_nested_block_are_its_own() -> None:
    assert _changed_text(_make("Order", "class Order("), _line("class Order(")) == {
        "class Order(Base, flag=(6)):", "class Order(Base, flag=(4)):",
    }  # fmt: skip
    ops = {m.operator for m in _make("Order", "if LIMIT > 3:", "cap = LIMIT - 1").mutants}
    assert ops == {"negate", "compare", "constant+1", "constant-1", "pass", "arith"}


def test_a_method_changed_with_its_class_keeps_them_apart() -> None:
    marks = ("rate = 2", "return len(self.rate)")
    assert {m.line for m in _make("Order", *marks).mutants} == {_line("rate = 2")}
    lines = {m.line for m in _make("Order.count", *marks).mutants}
    assert lines == {_line("return len(self.rate)")}


# module code


def test_module_code_mutates_only_its_changed_top_level_statements() -> None:
    ms = _make(None, "LIMIT = 10", "return a * 2", "rate = 2")
    n = _line("LIMIT = 10")
    assert _labels(ms) == {
        f"pass at line {n}",
        f"constant+1 at line {n}",
        f"constant-1 at line {n}",
    }


def test_an_unchanged_import_gives_no_pass_mutant() -> None:
    ms = _make(None, "TAX = Decimal", "print(LIMIT")
    assert all(m.line not in (_line("import os"), _line("from decimal")) for m in ms.mutants)
    assert ms.mutants
    changed = _make(None, "import os")  # the same statement changed: it is a site
    assert _labels(changed) == {f"pass at line {_line('import os')}"}


def test_a_docstring_only_change_has_no_mutable_site() -> None:
    for qualname, mark in ((None, '"""The module."""'), ("price", '"""Price."""'),
                           ("Order", '"""An order."""')):  # fmt: skip
        ms = _make(qualname, mark)
        assert ms == MutantSet(problem=NO_SITE), qualname


def test_a_comment_or_a_pure_deletion_has_no_mutable_site() -> None:
    base = b"def f(a):\n    x = a + 1\n    y = a * 2\n    return x\n"
    patched = base.replace(b"    y = a * 2\n", b"")
    assert changed_lines(base, patched) == frozenset()
    ms = make_mutants(patched, "f", changed_lines=changed_lines(base, patched), cap=8)
    assert (ms.mutants, ms.problem) == ((), NO_SITE)
    commented = base.replace(b"    y = a * 2\n", b"    # y\n    y = a * 2\n")
    lines = changed_lines(base, commented)
    assert lines == {3}
    assert make_mutants(commented, "f", changed_lines=lines, cap=8).problem == NO_SITE


# the Decimal literal


def test_the_decimal_literal_of_sum_is_a_constant() -> None:
    ms = _make("Order.total", "return sum((i.price")
    n = _line("return sum((i.price")
    by_op = {m.operator: m.source.decode().splitlines()[n - 1].strip() for m in ms.mutants}
    assert by_op["constant+1"] == 'return sum((i.price for i in items), Decimal("1"))'
    assert by_op["constant-1"] == 'return sum((i.price for i in items), Decimal("-1"))'
    assert set(by_op) == {"constant+1", "constant-1", "return-none", "pass"}


def test_a_decimal_with_a_fraction_keeps_a_valid_number() -> None:
    assert _changed_text(_make(None, 'TAX = Decimal("0.01")'), _line("TAX = ")) == {
        'TAX = Decimal("1.01")', 'TAX = Decimal("-0.99")', "pass",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("call", "plus", "minus"),
    [
        ('decimal.Decimal("2.50")', 'decimal.Decimal("3.50")', 'decimal.Decimal("1.50")'),
        ("Decimal('1E+2')", 'Decimal("101")', 'Decimal("99")'),
        ('Fraction("1/3")', 'Fraction("4/3")', 'Fraction("-2/3")'),
        ('fractions.Fraction("0.5")', 'fractions.Fraction("3/2")', 'fractions.Fraction("-1/2")'),
        ('Decimal("1e-30")', 'Decimal("1.000000000000000000000000000001")',
         'Decimal("-0.999999999999999999999999999999")'),
    ],
)  # fmt: skip
def test_each_number_constructor_shifts_its_literal(call: str, plus: str, minus: str) -> None:
    src = f"def f():\n    return {call}\n".encode()
    ms = make_mutants(src, "f", changed_lines={2}, cap=10)
    got = {m.operator: m.source.decode().splitlines()[1].strip() for m in ms.mutants}
    assert got["constant+1"] == f"return {plus}"
    assert got["constant-1"] == f"return {minus}"


@pytest.mark.parametrize(
    "call", ['Decimal("NaN")', 'Decimal("-Infinity")', 'Decimal("abc")', 'Decimal(x)',
             'str("0")', 'Fraction("1/0")', 'Decimal("1e99999999")', 'Decimal()'],
)  # fmt: skip
def test_a_string_that_is_not_a_finite_number_literal_is_no_constant(call: str) -> None:
    src = f"def f(x):\n    return {call}\n".encode()
    ops = {m.operator for m in make_mutants(src, "f", changed_lines={2}, cap=10).mutants}
    assert ops == {"return-none", "pass"}


# all of them, or a recorded sample


def test_under_the_cap_every_candidate_in_source_order_seed_none_and_pure() -> None:
    marks = ("if a < b:", "return a + b", "return a * 2")
    one = _make("price", *marks, cap=100, seed=123)
    assert one == _make("price", *marks, cap=100)  # the caller's seed is not used: no cap applied
    assert one.seed is None
    assert len(one.mutants) == one.candidates == one.sites - one.skipped
    at_cap = _make("price", *marks, cap=one.candidates)
    assert (at_cap.mutants, at_cap.seed) == (one.mutants, None)  # exactly cap: no sample
    lines = [m.line for m in one.mutants]
    assert lines == sorted(lines)
    assert len(set(lines)) == 3


def test_over_the_cap_a_sample_of_cap_with_its_seed_in_source_order() -> None:
    marks = ("if a < b:", "return a + b", "return a * 2")
    every = _make("price", *marks, cap=100).mutants
    one = _make("price", *marks, cap=3, seed=42)
    assert (len(one.mutants), one.seed, one.candidates) == (3, 42, len(every))
    assert one == _make("price", *marks, cap=3, seed=42)
    indexes = [every.index(m) for m in one.mutants]
    assert indexes == sorted(indexes)
    samples = {_make("price", *marks, cap=3, seed=s).mutants for s in range(10)}
    assert len(samples) > 1


def test_over_the_cap_without_a_seed_one_is_drawn_and_recorded() -> None:
    marks = ("if a < b:", "return a + b", "return a * 2")
    drawn = _make("price", *marks, cap=2)
    assert drawn.seed is not None
    assert 0 <= drawn.seed < 2**64
    assert drawn == _make("price", *marks, cap=2, seed=drawn.seed)
    assert len({_make("price", *marks, cap=2).seed for _ in range(4)}) > 1


def test_cap_zero_is_the_stage_off() -> None:
    assert _make("price", "return a + b", cap=0) == MutantSet()
    assert make_mutants(b"def (", "f", changed_lines={1}, cap=0) == MutantSet()


# changed_lines


@pytest.mark.parametrize(
    ("base", "patched", "lines"),
    [
        (b"a\nb\nc\n", b"a\nb\nc\n", set()),
        (b"a\nb\nc\n", b"a\nX\nY\nb\nc\n", {2, 3}),  # insert
        (b"a\nb\nc\n", b"a\nB\nc\n", {2}),  # replace
        (b"a\nb\nc\nd\n", b"a\nd\n", set()),  # delete
        (b"a\nb\n", b"a\nb\nc", {3}),  # appended, no final newline
        (None, b"a\nb\nc\n", {1, 2, 3}),  # a new file
        (None, b"", set()),
        (b"a\nb\n", b"a\r\nB\r\n", {2}),  # line ends are not a change
    ],
)
def test_changed_lines(base: bytes | None, patched: bytes, lines: set[int]) -> None:
    assert changed_lines(base, patched) == lines


def test_changed_lines_agree_with_ast_line_numbers() -> None:
    base = b"def f(a):\n    return a\n"
    patched = b"def f(a):\n    b = a\n    return a - 1\n"
    lines = changed_lines(base, patched)
    ms = make_mutants(patched, "f", changed_lines=lines, cap=50)
    assert {m.line for m in ms.mutants} == {2, 3} == lines


def test_a_mutant_whose_tree_is_the_patched_file_s_is_dropped() -> None:
    """``1e300 + 1 == 1e300``: both constant mutants of it parse to the patched file's own tree
    and are not made, for a function (its definition compared alone) and for the module's
    top-level code (the whole tree compared); the other operators' mutants are."""
    src = b"import os\n\ndef f(x):\n    return x + 1e300\n\nLIMIT = 1e300\n"
    in_f = make_mutants(src, "f", changed_lines=range(3, 5), cap=100)
    assert sorted(m.operator for m in in_f.mutants) == ["arith", "pass", "return-none"]
    assert (in_f.sites, in_f.skipped) == (5, 2)  # the two constants skipped
    top = make_mutants(src, None, changed_lines=range(6, 7), cap=100)
    assert [m.operator for m in top.mutants] == ["pass"]
    assert (top.sites, top.skipped) == (3, 2)


# the property


@settings(max_examples=60, deadline=None)
@given(python_edits())
def test_a_mutant_differs_from_the_patched_file_only_on_changed_lines(
    edit: tuple[bytes, bytes, list[str | None]],
) -> None:
    base, patched, qualnames = edit
    lines = changed_lines(base, patched)
    original = patched.splitlines()
    tree = ast.dump(ast.parse(patched))
    for qualname in qualnames:
        ms = make_mutants(patched, qualname, changed_lines=lines, cap=1000)
        assert ms.sites == ms.candidates + ms.skipped
        assert len(ms.mutants) == ms.candidates
        assert bool(ms.mutants) != bool(ms.problem)
        for m in ms.mutants:
            new = m.source.splitlines()
            assert ast.dump(ast.parse(m.source)) != tree
            assert new[: m.line - 1] == original[: m.line - 1]  # nothing before the site
            assert any(line >= m.line for line in lines)  # the site meets a changed line
            if len(new) == len(original):
                differ = {
                    n for n, (a, b) in enumerate(zip(original, new, strict=True), 1) if a != b
                }
                assert differ
                assert differ <= lines, (qualname, m.label)
