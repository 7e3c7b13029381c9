"""client.analysis.symbols: changed symbols from base and patched ASTs on tricky diffs."""

from __future__ import annotations

from textwrap import dedent

import pytest

from client.analysis.diffparse import FilePatch, parse_unified_diff
from client.analysis.symbols import ChangedSymbols, changed_symbols, is_excluded, module_name

ORACLE = ("tests/", "properties/", "pins/")

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


def modified(path: str) -> FilePatch:
    return FilePatch(path, path, "modified", (), False)


def diff(base: str, patched: str, path: str = "billing/__init__.py") -> ChangedSymbols:
    return changed_symbols(
        {path: base.encode()},
        {path: patched.encode()},
        [modified(path)],
        oracle_paths=ORACLE,
        exclude=(),
    )


def edit(old: str, new: str) -> tuple[str, ...]:
    assert old in BASE
    return diff(BASE, BASE.replace(old, new)).symbols


def test_function_body_change() -> None:
    assert edit("return amount * used / period", "return amount * used // period") == (
        "billing.prorate",
    )


def test_comment_only_change_is_not_counted() -> None:
    patched = BASE.replace("total = 0", "total = 0  # start from zero")
    assert diff(BASE, patched).symbols == ()


def test_formatting_only_change_is_not_counted() -> None:
    patched = BASE.replace("return amount * used / period", "return (amount*used)/period")
    patched = patched.replace("@traced(level=1)", "@traced( level = 1 )")
    assert diff(BASE, patched).symbols == ()


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
    assert diff(BASE, BASE[:start]).symbols == (
        "billing.outer",
        "billing.outer.<locals>.inner",
    )


def test_def_inside_if_block_is_module_qualified() -> None:
    base = "import sys\nif sys.version_info >= (3, 12):\n    def f():\n        return 1\n"
    patched = base.replace("return 1", "return 2")
    assert diff(base, patched, "pkg/compat.py").symbols == ("pkg.compat.f",)


def test_added_file_reports_its_symbols() -> None:
    source = b"X = 1\n\ndef f():\n    pass\n\nclass C:\n    def m(self):\n        pass\n"
    result = changed_symbols(
        {"shipping/rates.py": None},
        {"shipping/rates.py": source},
        [FilePatch(None, "shipping/rates.py", "added", (), False)],
        oracle_paths=ORACLE,
        exclude=(),
    )
    assert result.symbols == (
        "module:shipping.rates",
        "shipping.rates.C",
        "shipping.rates.C.m",
        "shipping.rates.f",
    )


def test_deleted_file_reports_removed_symbols() -> None:
    result = changed_symbols(
        {"shipping/rates.py": b"def f():\n    pass\n"},
        {"shipping/rates.py": None},
        [FilePatch("shipping/rates.py", None, "deleted", (), False)],
        oracle_paths=ORACLE,
        exclude=(),
    )
    assert result.symbols == ("shipping.rates.f",)


def test_pure_rename_changes_no_symbol() -> None:
    source = b"def f():\n    return 1\n"
    result = changed_symbols(
        {"pkg/old.py": source},
        {"pkg/new.py": source},
        [FilePatch("pkg/old.py", "pkg/new.py", "renamed", (), False)],
        oracle_paths=ORACLE,
        exclude=(),
    )
    assert result.symbols == ()
    assert result.touched_paths == ("pkg/new.py", "pkg/old.py")


def test_rename_with_edit_compares_under_the_new_module() -> None:
    base = b"def f():\n    return 1\n\ndef g():\n    return 2\n\ndef h():\n    pass\n"
    patched = b"def f():\n    return 10\n\ndef g():\n    return 2\n\ndef k():\n    pass\n"
    result = changed_symbols(
        {"pkg/old.py": base},
        {"pkg/new.py": patched},
        [FilePatch("pkg/old.py", "pkg/new.py", "renamed", (), False)],
        oracle_paths=ORACLE,
        exclude=(),
    )
    assert result.symbols == ("pkg.new.f", "pkg.new.k", "pkg.old.h")


def test_rename_into_tests_removes_old_symbols() -> None:
    result = changed_symbols(
        {"pkg/util.py": b"def f():\n    pass\n"},
        {"tests/util.py": b"def f():\n    pass\n"},
        [FilePatch("pkg/util.py", "tests/util.py", "renamed", (), False)],
        oracle_paths=ORACLE,
        exclude=(),
    )
    assert result.symbols == ("pkg.util.f",)
    assert result.excluded_paths == ("tests/util.py",)


def test_init_module_is_the_package() -> None:
    result = diff("def f():\n    pass\n", "def f():\n    return 1\n", "pkg/sub/__init__.py")
    assert result.symbols == ("pkg.sub.f",)


def test_excluded_paths_are_listed_not_scored() -> None:
    paths = ["README.md", "tests/test_x.py", "properties/test_p.py", "gen/api.py", "pkg/a.py"]
    result = changed_symbols(
        dict.fromkeys(paths, b"x = 1\n"),
        dict.fromkeys(paths, b"x = 2\n"),
        [modified(p) for p in paths],
        oracle_paths=ORACLE,
        exclude=("gen/",),
    )
    assert result.symbols == ("module:pkg.a",)
    assert result.excluded_paths == (
        "README.md",
        "gen/api.py",
        "properties/test_p.py",
        "tests/test_x.py",
    )


def test_unparsable_patched_file_fails_closed_as_module_change() -> None:
    assert diff(BASE, BASE + "\ndef broken(:\n").symbols == ("module:billing",)


@pytest.mark.parametrize("depth", [5_000, 200_000])  # RecursionError, MemoryError in ast.parse
def test_too_deeply_nested_file_fails_closed_as_module_change(depth: int) -> None:
    deep = "x = " + "-" * depth + "1\n"
    assert diff(BASE, deep).symbols == ("module:billing",)


def test_end_to_end_from_a_git_diff() -> None:
    patched = BASE.replace("return amount * used / period", "return max(amount * used / period, 0)")
    patch = (
        b"diff --git a/billing/__init__.py b/billing/__init__.py\n"
        b"--- a/billing/__init__.py\n+++ b/billing/__init__.py\n"
        b"@@ -9 +9 @@\n-    return amount * used / period\n"
        b"+    return max(amount * used / period, 0)\n"
    )
    result = changed_symbols(
        {"billing/__init__.py": BASE.encode()},
        {"billing/__init__.py": patched.encode()},
        parse_unified_diff(patch),
        oracle_paths=ORACLE,
        exclude=(),
    )
    assert result.symbols == ("billing.prorate",)


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("shipping/rates.py", "shipping.rates"),
        ("pkg/__init__.py", "pkg"),
        ("src/pkg/mod.py", "src.pkg.mod"),
        ("top.py", "top"),
    ],
)
def test_module_name(path: str, module: str) -> None:
    assert module_name(path) == module


@pytest.mark.parametrize(
    ("path", "excluded"),
    [
        ("pkg/test_mod.py", True),
        ("pkg/mod_test.py", True),
        ("pkg/conftest.py", True),
        ("pins/x.py", True),
        ("pkg/mod.pyi", True),
        ("vendor/lib.py", True),
        ("testsuite/mod.py", False),
        ("pkg/mod.py", False),
    ],
)
def test_is_excluded(path: str, excluded: bool) -> None:
    assert is_excluded(path, oracle_paths=ORACLE, exclude=("vendor/*",)) is excluded
