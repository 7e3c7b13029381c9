"""client.analysis.patch.symbols: changed symbols of one module from its base and patched ASTs."""

from __future__ import annotations

from textwrap import dedent

import pytest

from client.analysis.patch.roles import Layout
from client.analysis.patch.symbols import compare_module, defined_names
from patchgate.symbols import Symbol

LAYOUT = Layout(
    source_roots=("",), oracle_paths=("tests/", "properties/", "pins/"), pins_dir="pins"
)

BASE = dedent(
    '''\
    """Billing."""
    from decimal import Decimal

    RATE = Decimal("0.2")


    def prorate(amount, used, period):
        """Share of amount."""
        return amount * used / period


    @cached
    @traced(level=1)
    def invoice_total(order):
        total = 0
        for line in order.lines:
            total += line.net
        return total


    class Order:
        currency = "EUR"

        def total(self):
            return sum(line.net for line in self.lines)

        @property
        def size(self):
            return len(self.lines)


    def outer(x):
        def inner(y):
            return y + 1

        return inner(x)
    '''
)


def compare(base: bytes | None, patched: bytes | None, path: str) -> tuple[str, ...]:
    found = compare_module(LAYOUT.module(path), base, patched)
    assert all(isinstance(x, Symbol) and x.module == LAYOUT.module(path) for x in found)
    return tuple(sorted(found))


def diff(base: str, patched: str, path: str = "billing/__init__.py") -> tuple[str, ...]:
    return compare(base.encode(), patched.encode(), path)


def edit(old: str, new: str) -> tuple[str, ...]:
    assert old in BASE
    return diff(BASE, BASE.replace(old, new))


def test_function_body_change() -> None:
    assert edit("return amount * used / period", "return amount * used // period") == (
        "billing.prorate",
    )


def test_comment_only_change_names_the_symbol_whose_lines_hold_it() -> None:
    patched = BASE.replace("total = 0", "total = 0  # start from zero")
    assert diff(BASE, patched) == ("billing.invoice_total",)


def test_formatting_only_change_names_the_symbols_whose_lines_hold_it() -> None:
    patched = BASE.replace("return amount * used / period", "return (amount*used)/period")
    patched = patched.replace("@traced(level=1)", "@traced( level = 1 )")
    assert diff(BASE, patched) == ("billing.invoice_total", "billing.prorate")


def test_comment_between_definitions_is_module_level() -> None:
    assert edit("\n\nclass Order:", "\n\n# orders\nclass Order:") == ("module:billing",)


def test_formatting_does_not_hide_a_real_change_elsewhere() -> None:
    patched = BASE.replace("total = 0", "total = 0  # note").replace("/ period", "// period")
    assert diff(BASE, patched) == ("billing.prorate",)


def test_same_bytes_is_module_level_never_empty() -> None:
    """A mode-only change of a module still names it: never an empty answer for a changed path."""
    assert diff(BASE, BASE) == ("module:billing",)


def test_docstring_change_counts() -> None:
    assert edit('"""Share of amount."""', '"""The share."""') == ("billing.prorate",)


def test_decorator_change_belongs_to_the_decorated_function() -> None:
    assert edit("@traced(level=1)", "@traced(level=2)") == ("billing.invoice_total",)


def test_removed_first_decorator_belongs_to_the_function() -> None:
    assert edit("@cached\n", "") == ("billing.invoice_total",)


def test_method_change_is_the_method_not_the_class() -> None:
    assert edit("return len(self.lines)", "return len(self.lines) + 0") == ("billing.Order.size",)


def test_class_own_statement_change_is_the_class() -> None:
    assert edit('currency = "EUR"', 'currency = "USD"') == ("billing.Order",)


def test_added_method_is_only_the_method() -> None:
    added = "    def empty(self):\n        return not self.lines\n\n    @property"
    assert edit("    @property", added) == ("billing.Order.empty",)


def test_nested_function_is_a_locals_symbol() -> None:
    assert edit("return y + 1", "return y + 2") == ("billing.outer.<locals>.inner",)


def test_outer_change_outside_nested_def() -> None:
    assert edit("return inner(x)", "return inner(x) * 2") == ("billing.outer",)


def test_module_level_change() -> None:
    assert edit('RATE = Decimal("0.2")', 'RATE = Decimal("0.25")') == ("module:billing",)


def test_module_import_change_is_module_level() -> None:
    assert edit("from decimal import Decimal", "from decimal import Decimal, ROUND_UP") == (
        "module:billing",
    )


def test_removed_function_is_reported() -> None:
    start = BASE.index("def outer")
    assert diff(BASE, BASE[:start]) == (
        "billing.outer",
        "billing.outer.<locals>.inner",
    )


def test_def_inside_if_block_is_module_qualified() -> None:
    base = "import sys\nif sys.version_info >= (3, 12):\n    def f():\n        return 1\n"
    patched = base.replace("return 1", "return 2")
    assert diff(base, patched, "pkg/compat.py") == ("pkg.compat.f",)


def test_added_file_reports_its_symbols() -> None:
    source = b"X = 1\n\ndef f():\n    pass\n\nclass C:\n    def m(self):\n        pass\n"
    assert compare(None, source, "shipping/rates.py") == (
        "module:shipping.rates",
        "shipping.rates.C",
        "shipping.rates.C.m",
        "shipping.rates.f",
    )


def test_deleted_file_reports_removed_symbols() -> None:
    assert compare(b"def f():\n    pass\n", None, "shipping/rates.py") == ("shipping.rates.f",)


def test_deleted_empty_module_is_module_level() -> None:
    assert compare(b"", None, "pkg/__init__.py") == ("module:pkg",)


def test_init_module_is_the_package() -> None:
    result = diff("def f():\n    pass\n", "def f():\n    return 1\n", "pkg/sub/__init__.py")
    assert result == ("pkg.sub.f",)


def test_unparsable_patched_file_fails_closed_as_module_change() -> None:
    assert diff(BASE, BASE + "\ndef broken(:\n") == ("module:billing",)


@pytest.mark.parametrize("depth", [5_000, 200_000])  # RecursionError, MemoryError in ast.parse
def test_too_deeply_nested_file_fails_closed_as_module_change(depth: int) -> None:
    deep = "x = " + "-" * depth + "1\n"
    assert diff(BASE, deep) == ("module:billing",)


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("shipping/rates.py", "shipping.rates"),
        ("pkg/__init__.py", "pkg"),
        ("top.py", "top"),
    ],
)
def test_module_name_from_the_repository_root(path: str, module: str) -> None:
    assert LAYOUT.module(path) == module


def test_defined_names_lists_every_qualname_and_the_module() -> None:
    assert defined_names(BASE.encode()) == {
        "",
        "prorate",
        "invoice_total",
        "Order",
        "Order.total",
        "Order.size",
        "outer",
        "outer.<locals>.inner",
    }
    assert defined_names(b"def broken(:\n") is None
