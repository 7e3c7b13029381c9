"""patchgate.symbols: a symbol is a plain string everywhere that also carries its module."""

from __future__ import annotations

import copy
import json

import pytest

from patchgate.symbols import Symbol, covers, module_of


def test_a_symbol_is_its_name_in_json_sorting_and_equality() -> None:
    s = Symbol.make("pkg.mod", "C.m")
    assert (s, s.module, json.dumps([s])) == ("pkg.mod.C.m", "pkg.mod", '["pkg.mod.C.m"]')
    assert Symbol.make("pkg", "") == "module:pkg"
    assert sorted([Symbol.make("b", "f"), "a"]) == ["a", "b.f"]


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy])
def test_a_copy_keeps_the_module(clone: object) -> None:
    s = Symbol.make("pkg.mod", "f")
    c = clone(s)  # type: ignore[operator]
    assert (type(c), c, c.module) == (Symbol, s, "pkg.mod")


def test_module_of() -> None:
    assert module_of(Symbol.make("a.b", "f")) == "a.b"
    assert module_of("module:a.b") == "a.b"
    assert module_of("a.b.f") is None


def test_a_symbol_of_no_module_is_covered_by_nothing() -> None:
    s = Symbol("pkg.sub.f", "")
    assert not any(covers(c, s) for c in ("", "pkg", "pkg.sub", "pkg.sub.f", "."))
