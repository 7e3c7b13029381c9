"""Mutants of one changed symbol, every line changed: each operator, the capped sample, only the
symbol's bytes (the v2 rules on changed lines are in test_mutants_v2)."""

from __future__ import annotations

import ast

import pytest

from client.analysis.mutation.mutants import NO_SITE, MutantSet, make_mutants

SRC = b'''"""mod"""

X = 1  # a module constant


@decorate(2)
def f(a, b):
    """doc"""
    if a < b and not a:
        return a + b
    while a >= 3:
        a -= 1
    return None


def g(xs):  # caf\xc3\xa9: a non-ASCII comment keeps byte offsets honest
    y = "\xc3\xa9" if xs == [] else xs * 2
    assert xs is not None
    return y


class C:
    def m(self):
        return 5 in (1, 2)
'''


EVERY_LINE = frozenset(range(1, 1000))


def _make(
    source: bytes, qualname: str | None, cap: int = 1000, seed: int | None = None
) -> MutantSet:
    return make_mutants(source, qualname, changed_lines=EVERY_LINE, cap=cap, seed=seed)


def _all(qualname: str | None) -> list[tuple[str, int, bytes]]:
    ms = _make(SRC, qualname)
    return [(m.operator, m.line, m.source) for m in ms.mutants]


def _ops(qualname: str | None) -> set[str]:
    return {op for op, _, _ in _all(qualname)}


def test_every_operator_applies_somewhere() -> None:
    ops = _ops("f") | _ops("g") | _ops("C.m")
    assert ops == {
        "compare", "arith", "constant+1", "constant-1", "boolop", "not-dropped", "negate",
        "return-none", "pass",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("qualname", "operator", "before", "after"),
    [
        ("f", "compare", b"if a < b and", b"if (a <= b) and"),
        ("f", "compare", b"while a >= 3:", b"while (a > 3):"),
        ("f", "arith", b"return a + b", b"return (a - b)"),
        ("f", "arith", b"a -= 1", b"a += 1"),
        ("f", "constant+1", b"while a >= 3:", b"while a >= (4):"),
        ("f", "constant-1", b"@decorate(2)", b"@decorate((1))"),
        ("f", "boolop", b"if a < b and not a:", b"if (a < b or not a):"),
        ("f", "not-dropped", b"and not a:", b"and (a):"),
        ("f", "negate", b"if a < b and not a:", b"if (not (a < b and (not a))):"),
        ("f", "return-none", b"return a + b", b"return None"),
        ("f", "pass", b"        a -= 1", b"        pass"),
        ("g", "compare", b"assert xs is not None", b"assert (xs is None)"),
        ("g", "negate", b"if xs == [] else", b"if (not (xs == [])) else"),
        ("g", "arith", b"xs * 2", b"(xs / 2)"),
        ("C.m", "compare", b"return 5 in (1, 2)", b"return (5 not in (1, 2))"),
    ],
)
def test_each_operator_rewrites_its_site(
    qualname: str, operator: str, before: bytes, after: bytes
) -> None:
    wanted = SRC.replace(before, after, 1)
    assert wanted != SRC
    assert (operator, wanted) in {(op, src) for op, _, src in _all(qualname)}


def test_only_the_symbols_lines_change() -> None:
    lines = SRC.splitlines(keepends=True)
    first, last = 6, 13  # f, its decorator included
    for _, line, src in _all("f"):
        assert first <= line <= last
        new = src.splitlines(keepends=True)
        assert new[: first - 1] == lines[: first - 1]
        tail = len(lines) - last
        assert new[len(new) - tail :] == lines[last:]


def test_module_symbol_mutates_top_level_code_only() -> None:
    muts = _all(None)
    assert {line for _, line, _ in muts} == {3}
    assert {op for op, _, _ in muts} == {"constant+1", "constant-1", "pass"}


def test_the_capped_sample_is_deterministic_from_the_seed() -> None:
    one = _make(SRC, "f", cap=4, seed=1)
    again = _make(SRC, "f", cap=4, seed=1)
    other = [_make(SRC, "f", cap=4, seed=i) for i in range(2, 8)]
    assert one == again
    assert (len(one.mutants), one.seed) == (4, 1)
    assert any(o.mutants != one.mutants for o in other)


def test_every_mutant_compiles_and_differs() -> None:
    original = ast.dump(ast.parse(SRC))
    for _, _, src in _all("f") + _all("g") + _all("C.m"):
        assert ast.dump(ast.parse(src)) != original


def test_a_mutant_that_does_not_compile_is_skipped_and_counted() -> None:
    # a match pattern takes a signed literal only: ``case -(2):`` is a SyntaxError
    src = b"def h(v):\n    match v:\n        case -1:\n            return 7\n"
    ms = _make(src, "h")
    assert ms.skipped == 2
    assert ms.sites == len(ms.mutants) + 2
    assert all(m.line != 3 for m in ms.mutants)
    assert all(compile(m.source, "m", "exec") for m in ms.mutants)


def test_no_site_and_unknown_symbol_say_why() -> None:
    assert _make(b"def h():\n    pass\n", "h", cap=4).problem == NO_SITE
    assert "not defined" in _make(SRC, "nope", cap=4).problem
    assert "does not parse" in _make(b"def (", "h", cap=4).problem


def test_cap_caps_the_count_and_zero_is_off() -> None:
    assert len(_make(SRC, "f", cap=2).mutants) == 2
    assert _make(SRC, "f", cap=0) == MutantSet()
    assert _make(SRC, "f", cap=-1) == MutantSet()


def test_a_symbol_defined_in_an_except_handler_or_a_match_case_is_mutated() -> None:
    """The mutant maker finds a definition where the gate's walker named it: inside ``except``
    and ``match`` blocks too (a symbol it cannot find would get no mutant, so no credit)."""
    src = (
        b"try:\n    import fast\nexcept ImportError:\n    def slow(a):\n        return a + 1\n"
        b"match 1:\n    case 1:\n        def picked(a):\n            return a - 1\n"
    )
    for name in ("slow", "picked"):
        ms = _make(src, name, cap=4)
        assert ms.mutants, (name, ms.problem)
