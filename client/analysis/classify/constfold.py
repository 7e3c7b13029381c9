"""What an expression of a test is whatever the code under test does: constants, truth, emptiness.

A small, safe evaluator over the syntax tree (never ``eval``): constants, displays of constants,
``not``, ``and``/``or``, comparisons and small arithmetic of constants, ``range(...)`` and the
empty constructors (``list()``, ``set()``, ...). Names are read from a :class:`Names` table that
:mod:`client.analysis.classify.testscope` builds from single bindings of the test module and
function.
Anything else is :data:`UNKNOWN`: the caller then treats the expression as depending on the code.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from client.analysis.classify.astwalk import dotted

__all__ = ["UNKNOWN", "Names", "is_empty", "truth", "value"]

UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda _self: "UNKNOWN"})()
_CMP: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_ARITH: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
}
_EMPTY_CTORS = {"list", "tuple", "set", "frozenset", "dict", "str", "bytes"}
_WRAPPERS = {"list", "tuple", "set", "frozenset", "sorted", "reversed", "iter", "enumerate", "dict"}
_BIG = 10**9


@dataclass(frozen=True)
class Names:
    """Names whose value a test cannot change: single bindings to constants, defs and classes."""

    #: name -> the literal it is bound to (immutable, or a literal that is only ever iterated)
    constants: Mapping[str, ast.expr] = field(default_factory=dict)
    #: names bound to a function, class or lambda: always truthy
    objects: frozenset[str] = frozenset()
    #: name -> the dotted name it stands for (imports, ``E = AssertionError``)
    origins: Mapping[str, str] = field(default_factory=dict)

    def origin(self, expr: ast.AST) -> str:
        """The dotted name of ``expr`` with its first part read through imports and aliases."""
        name = dotted(expr) if not isinstance(expr, ast.Call) else ""
        head, _, rest = name.partition(".")
        seen: set[str] = set()
        while head in self.origins and head not in seen:
            seen.add(head)
            full = self.origins[head]
            head, _, more = full.partition(".")
            rest = f"{more}.{rest}".strip(".") if more else rest
        return f"{head}.{rest}" if rest else head


def value(expr: ast.expr, names: Names, depth: int = 0) -> Any:
    """The value of ``expr`` when it is the same whatever the code under test does, else UNKNOWN."""
    if depth > 50:
        return UNKNOWN
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Name):
        if expr.id in names.constants:
            return value(names.constants[expr.id], names, depth + 1)
        return False if expr.id == "TYPE_CHECKING" and _is_typing(expr, names) else UNKNOWN
    if isinstance(expr, ast.Attribute):
        return False if names.origin(expr) == "typing.TYPE_CHECKING" else UNKNOWN
    try:
        return _compound(expr, names, depth + 1)
    except (TypeError, ValueError, ArithmeticError, AttributeError, OverflowError):
        return UNKNOWN


def _is_typing(expr: ast.Name, names: Names) -> bool:
    return names.origins.get(expr.id, "typing.TYPE_CHECKING") == "typing.TYPE_CHECKING"


def _compound(expr: ast.expr, names: Names, depth: int) -> Any:
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        if any(isinstance(e, ast.Starred) for e in expr.elts):
            return UNKNOWN
        items = [value(e, names, depth) for e in expr.elts]
        if any(i is UNKNOWN for i in items):
            return UNKNOWN
        kind = {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(expr)]
        return kind(items)
    if isinstance(expr, ast.Dict):
        keys = [value(k, names, depth) if k is not None else UNKNOWN for k in expr.keys]
        vals = [value(v, names, depth) for v in expr.values]
        return UNKNOWN if UNKNOWN in (*keys, *vals) else dict(zip(keys, vals, strict=True))
    if isinstance(expr, ast.UnaryOp):
        operand = value(expr.operand, names, depth)
        if operand is UNKNOWN:
            return UNKNOWN
        if isinstance(expr.op, ast.Not):
            return not operand
        if isinstance(expr.op, ast.USub | ast.UAdd) and _number(operand):
            return -operand if isinstance(expr.op, ast.USub) else +operand
        return UNKNOWN
    if isinstance(expr, ast.BinOp) and type(expr.op) in _ARITH:
        left, right = value(expr.left, names, depth), value(expr.right, names, depth)
        if _number(left) and _number(right) and abs(left) < _BIG and abs(right) < _BIG:
            return _ARITH[type(expr.op)](left, right)
        return UNKNOWN
    if isinstance(expr, ast.Compare):
        return _compare(expr, names, depth)
    if isinstance(expr, ast.Call) and not expr.keywords:
        return _call(expr, names, depth)
    return UNKNOWN


def _number(val: Any) -> bool:
    return isinstance(val, int | float)


def _compare(expr: ast.Compare, names: Names, depth: int) -> Any:
    left = value(expr.left, names, depth)
    for op, right_expr in zip(expr.ops, expr.comparators, strict=True):
        right = value(right_expr, names, depth)
        if left is UNKNOWN or right is UNKNOWN or type(op) not in _CMP:
            return UNKNOWN
        if isinstance(op, ast.Is | ast.IsNot) and not _singleton(left, right):
            return UNKNOWN  # identity of equal literals is an implementation detail
        if not _CMP[type(op)](left, right):
            return False
        left = right
    return True


def _singleton(*vals: Any) -> bool:
    return all(v is None or isinstance(v, bool) for v in vals)


def _call(expr: ast.Call, names: Names, depth: int) -> Any:
    name = names.origin(expr.func).removeprefix("builtins.")
    args = [value(a, names, depth) for a in expr.args]
    if UNKNOWN in args or any(isinstance(a, ast.Starred) for a in expr.args):
        return UNKNOWN
    if name == "range" and 1 <= len(args) <= 3 and all(type(a) is int for a in args):
        return range(*args)
    if name in _EMPTY_CTORS and not args:
        return {"list": [], "tuple": (), "set": set(), "frozenset": frozenset(), "dict": {}}.get(
            name, "" if name == "str" else b""
        )
    if name in {"len", "bool"} and len(args) == 1:
        return len(args[0]) if name == "len" else bool(args[0])
    return UNKNOWN


def is_empty(expr: ast.expr, names: Names) -> bool:
    """Whether iterating ``expr`` yields nothing, whatever the code under test does."""
    val = value(expr, names)
    if val is not UNKNOWN:
        try:
            return len(val) == 0
        except TypeError:
            return False
    if isinstance(expr, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        return is_empty(expr.generators[0].iter, names)
    if isinstance(expr, ast.Call) and not expr.keywords:
        name = names.origin(expr.func).removeprefix("builtins.")
        args = expr.args
        if name == "zip":
            return not args or any(is_empty(a, names) for a in args)
        if (name in _WRAPPERS and len(args) == 1) or (name in {"map", "filter"} and len(args) == 2):
            return is_empty(args[-1], names)
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in {"items", "keys", "values"}:
            return not args and is_empty(expr.func.value, names)
    return False


def truth(expr: ast.expr, names: Names) -> bool | None:
    """The truth of ``expr`` when the code under test cannot change it, else None."""
    val = value(expr, names)
    if val is not UNKNOWN:
        try:
            return bool(val)
        except Exception:
            return None
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        return True if any(not isinstance(e, ast.Starred) for e in expr.elts) else None
    if isinstance(expr, ast.Dict):
        return True if any(k is not None for k in expr.keys) else None
    if isinstance(expr, ast.Lambda | ast.GeneratorExp):
        return True  # a function or generator object is always true
    if isinstance(expr, ast.ListComp | ast.SetComp | ast.DictComp):
        return False if is_empty(expr, names) else None
    if isinstance(expr, ast.JoinedStr):
        return True if any(_never_empty(part) for part in expr.values) else None
    if isinstance(expr, ast.Name) and expr.id in names.objects:
        return True
    if isinstance(expr, ast.NamedExpr):
        return truth(expr.value, names)
    return _truth_compound(expr, names)


def _never_empty(part: ast.expr) -> bool:
    if isinstance(part, ast.Constant):
        return bool(part.value)
    return isinstance(part, ast.FormattedValue) and part.conversion in (ord("r"), ord("a"))


def _truth_compound(expr: ast.expr, names: Names) -> bool | None:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        inner = truth(expr.operand, names)
        return None if inner is None else not inner
    if isinstance(expr, ast.BoolOp):
        parts = [truth(v, names) for v in expr.values]
        decisive = isinstance(expr.op, ast.Or)  # or: one true decides; and: one false decides
        if decisive in parts:
            return decisive
        return (not decisive) if all(p is not None for p in parts) else None
    if isinstance(expr, ast.IfExp):
        test = truth(expr.test, names)
        if test is not None:
            return truth(expr.body if test else expr.orelse, names)
        body, orelse = truth(expr.body, names), truth(expr.orelse, names)
        return body if body == orelse else None
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords:
        name = names.origin(expr.func).removeprefix("builtins.")
        if name in {"all", "any"} and is_empty(expr.args[0], names):
            return name == "all"
        if name == "bool":
            return truth(expr.args[0], names)
    return None
