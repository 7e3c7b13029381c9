"""Is an assertion's truth independent of what the code under test returned? (issue 22, item 5)

The rule, not a list of spellings: every value the test did not compute from constants (a call's
result, a name bound at run time, an attribute or item read) is a **leaf**; each leaf is replaced
by every value of a fixed **probe set** in turn, and the assertion expression is evaluated by a
tiny evaluator over the syntax tree (never ``eval`` of test text). The assertion is **vacuous**
when at least one substitution evaluates and every substitution that evaluates is true: whatever
the code returned, the assertion passes (``(f(x) >= 0) | True``, ``isinstance(f(x), object)``,
``s >= 0 or s < 0``, ``max(f(x), 0) >= 0``, ``f(x) == pytest.approx(0, abs=1e300)``,
``math.isfinite(1)``).

The probes: finite numbers with ``|x| <= 1e15`` (0, ±1, 2, ±0.5, ±1e15, and each numeric constant
of the expression and its neighbours), ``None``, the string constants of the expression and a few
strings, empty and one-element containers. NaN is not a probe. A leaf compared by ``in`` with a
constant container whose elements are all of one type gets values of that type only
(``f(x) in (True, False)``: ``True`` and ``False``). A substitution that raises (``None >= 0``) is
left out: it is no value the compared code could return and pass with. Two occurrences of one
name are one value; two calls are two values (``f(x) == f(x)`` is a determinism check).

Only what the evaluator knows is evaluated: constants, displays, ``not``/``-``/``+``,
arithmetic and ``|``/``&``/``^`` of numbers and booleans, ``and``/``or``, comparisons, ``x if c
else y``, and the calls ``abs``, ``max``, ``min``, ``len``, ``bool``, ``round``, ``isinstance``
with builtin types, ``math.fabs``, ``pytest.approx``, and ``math.isfinite``/``isinf``/``isnan``
of constants only (of a leaf they are a leaf: inf and NaN are no probes, so ``math.isfinite(f(x))``
stays a real check of what the probes leave out). Any other
call, attribute or subscript is a leaf; a walrus, lambda or comprehension makes the expression
unknown (never vacuous). Pure: no I/O.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from client.analysis.classify.constfold import Names

__all__ = ["BOUND", "probes_for", "vacuous"]

BOUND = 1e15
_MAX_COMBOS = 4096
_NUMBERS: tuple[Any, ...] = (0, 1, -1, 2, 0.5, -0.5, 10**15, -(10**15))
_OTHERS: tuple[Any, ...] = (None, "", "a", "A", " ", (), (0,), [], [0], {}, {0: 0}, frozenset())
_TYPES: dict[str, type] = {
    t.__name__: t for t in (object, int, float, str, bool, list, tuple, dict, set, frozenset)
}
_TYPES["complex"] = complex
_BY_TYPE: dict[type, tuple[Any, ...]] = {
    bool: (True, False),
    int: (0, 1, -1, 2, 10**15, -(10**15)),
    float: (0.0, 1.0, -1.0, 0.5, -0.5, 1e15, -1e15),
    str: ("", "a", "A", " "),
}
_FINITENESS = frozenset({"math.isfinite", "math.isinf", "math.isnan"})
_CMP: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_BIN: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
}
_CALLS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "max": max,
    "min": min,
    "len": len,
    "bool": bool,
    "round": lambda x, n=None: round(x, _digits(n)) if n is not None else round(x),
    "math.isfinite": math.isfinite,
    "math.isinf": math.isinf,
    "math.isnan": math.isnan,
    "math.fabs": math.fabs,
}


def _digits(n: Any) -> int:
    """``round``'s ndigits, bounded: ``round(1, -10**15)`` would compute ``10**10**15``."""
    if not isinstance(n, int) or isinstance(n, bool) or abs(n) > 100:
        raise TypeError("ndigits out of the evaluator's range")
    return n


class _Unknown(Exception):
    """The expression holds something the evaluator does not model: never vacuous."""


@dataclass(frozen=True)
class _Approx:
    """``pytest.approx(expected, rel=..., abs=...)`` of a number: equal within the tolerance."""

    expected: float
    rel: float
    abs: float

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Approx):
            return self is other
        if isinstance(other, bool) or not isinstance(other, int | float):
            raise TypeError("approx of a number against a non-number")
        tolerance = max(self.abs, self.rel * abs(self.expected))
        return abs(other - self.expected) <= tolerance

    def __hash__(self) -> int:
        return id(self)


def _number(val: Any) -> bool:
    return isinstance(val, int | float) and not isinstance(val, bool)


def _near(val: Any) -> Iterator[Any]:
    if _number(val) and math.isfinite(val):
        for cand in (val, val - 1, val + 1, val - 0.5, val + 0.5):
            if abs(cand) <= BOUND:
                yield cand
    elif isinstance(val, str):
        yield val


class _Eval:
    """Leaves found in one expression, and its value for one substitution."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.leaves: dict[str, ast.expr] = {}
        self.typed: dict[str, set[type]] = {}
        self.constants: list[Any] = []
        self.env: dict[str, Any] = {}
        self.scanning = True

    # -- finding the leaves

    def key(self, expr: ast.expr) -> str:
        """A name is one value wherever it occurs; each call or read is its own."""
        if isinstance(expr, ast.Name):
            return f"name:{expr.id}"
        return f"node:{id(expr)}"

    def leaf(self, expr: ast.expr) -> Any:
        key = self.key(expr)
        if self.scanning:
            self.leaves.setdefault(key, expr)
            return 0  # any value: the scan only names the leaves
        if key not in self.env:
            raise _Unknown  # a leaf the scan's branches did not reach
        return self.env[key]

    # -- evaluating

    def ev(self, expr: ast.expr) -> Any:
        if isinstance(expr, ast.Constant):
            if expr.value is Ellipsis or isinstance(expr.value, bytes | complex):
                raise _Unknown
            self.constants.append(expr.value)
            return expr.value
        if isinstance(expr, ast.Name):
            if expr.id in self.names.constants:
                return self.ev(self.names.constants[expr.id])
            return self.leaf(expr)
        if isinstance(expr, ast.Tuple | ast.List | ast.Set):
            if any(isinstance(e, ast.Starred) for e in expr.elts):
                raise _Unknown
            items = [self.ev(e) for e in expr.elts]
            return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(expr)](items)
        if isinstance(expr, ast.UnaryOp):
            val = self.ev(expr.operand)
            if isinstance(expr.op, ast.Not):
                return not val
            if isinstance(expr.op, ast.USub | ast.UAdd) and isinstance(val, int | float):
                return -val if isinstance(expr.op, ast.USub) else +val
            raise TypeError("unary operator on a non-number")
        if isinstance(expr, ast.BinOp):
            if type(expr.op) not in _BIN:
                raise _Unknown
            left, right = self.ev(expr.left), self.ev(expr.right)
            if not all(isinstance(v, int | float) for v in (left, right)):
                raise TypeError("arithmetic on a non-number")
            return _BIN[type(expr.op)](left, right)
        if isinstance(expr, ast.BoolOp):
            return self.boolop(expr)
        if isinstance(expr, ast.Compare):
            return self.compare(expr)
        if isinstance(expr, ast.IfExp):
            return self.ev(expr.body) if self.ev(expr.test) else self.ev(expr.orelse)
        if isinstance(expr, ast.Call):
            return self.call(expr)
        if isinstance(expr, ast.Attribute | ast.Subscript):
            return self.leaf(expr)
        raise _Unknown  # walrus, lambda, comprehension, f-string, await, ...

    def boolop(self, expr: ast.BoolOp) -> Any:
        result: Any = None
        for part in expr.values:
            result = self.ev(part)
            if bool(result) is isinstance(expr.op, ast.Or):
                return result
        return result

    def compare(self, expr: ast.Compare) -> Any:
        left = self.ev(expr.left)
        for op, right_expr in zip(expr.ops, expr.comparators, strict=True):
            right = self.ev(right_expr)
            if isinstance(op, ast.Is | ast.IsNot):
                if not (right is None or isinstance(right, bool)):
                    raise _Unknown  # identity of other values is an implementation detail
                same = left is right
                ok = same if isinstance(op, ast.Is) else not same
            else:
                ok = _CMP[type(op)](left, right)
            if not ok:
                return False
            left = right
        return True

    def call(self, expr: ast.Call) -> Any:
        if any(isinstance(a, ast.Starred) for a in expr.args):
            raise _Unknown
        name = self.names.origin(expr.func).removeprefix("builtins.")
        if name == "isinstance" and len(expr.args) == 2 and not expr.keywords:
            return self.isinstance_call(expr)
        if name == "pytest.approx":
            return self.approx(expr)
        func = _CALLS.get(name)
        if func is None or expr.keywords:
            return self.leaf(expr)  # the code under test, or a call the evaluator does not know
        if name in _FINITENESS and self.has_leaf(expr.args):
            return self.leaf(expr)  # inf and NaN are no probes: such a check is not decided here
        return func(*[self.ev(a) for a in expr.args])

    def has_leaf(self, args: Sequence[ast.expr]) -> bool:
        inner = _Eval(self.names)
        for arg in args:
            try:
                inner.ev(arg)
            except Exception:  # noqa: S112 - only the leaves matter here
                continue
        return bool(inner.leaves)

    def isinstance_call(self, expr: ast.Call) -> Any:
        spec = expr.args[1]
        parts = spec.elts if isinstance(spec, ast.Tuple) else [spec]
        types = []
        for part in parts:
            kind = _TYPES.get(self.names.origin(part).removeprefix("builtins."))
            if kind is None:
                return self.leaf(expr)  # a class of the code under test: its own value
            types.append(kind)
        return isinstance(self.ev(expr.args[0]), tuple(types))

    def approx(self, expr: ast.Call) -> Any:
        if len(expr.args) != 1:
            raise _Unknown
        expected = self.ev(expr.args[0])
        opts = {k.arg: self.ev(k.value) for k in expr.keywords}
        if set(opts) - {"rel", "abs"} or not _number(expected):
            raise _Unknown
        rel = opts.get("rel", 1e-6)
        tol = opts.get("abs", 1e-12)
        if not (_number(rel) and _number(tol)):
            raise _Unknown
        return _Approx(float(expected), float(rel), float(tol))


def _context_types(expr: ast.expr, ev: _Eval) -> None:
    """A leaf left of ``in`` a constant container of one element type gets values of that type."""
    for node in ast.walk(expr):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        if not isinstance(node.ops[0], ast.In | ast.NotIn):
            continue
        box = node.comparators[0]
        if not isinstance(box, ast.Tuple | ast.List | ast.Set) or not box.elts:
            continue
        if not all(isinstance(e, ast.Constant) for e in box.elts):
            continue
        kinds = {type(e.value) for e in box.elts if isinstance(e, ast.Constant)}
        if len(kinds) == 1 and next(iter(kinds)) in _BY_TYPE:
            ev.typed.setdefault(ev.key(node.left), set()).update(kinds)


def probes_for(constants: Sequence[Any], kinds: set[type] | None = None) -> tuple[Any, ...]:
    """The probe values of one leaf (see the module docstring)."""
    if kinds:
        return tuple(dict.fromkeys(v for k in sorted(kinds, key=str) for v in _BY_TYPE[k]))
    values: list[Any] = [*_NUMBERS]
    for c in constants:
        values.extend(_near(c))
    values.extend(_OTHERS)
    out: list[Any] = []
    for v in values:  # dict.fromkeys would merge 1 with True and 0 with 0.0: keep types apart
        if not any(type(v) is type(o) and v == o for o in out):
            out.append(v)
    return tuple(out)


def vacuous(expr: ast.expr, names: Names) -> bool:
    """Whether ``assert expr`` passes for every probe value of every leaf (module docstring)."""
    ev = _Eval(names)
    try:
        scanned = ev.ev(expr)
    except _Unknown:
        return False
    except Exception:
        scanned = None
    ev.scanning = False
    if not ev.leaves:  # a constant expression: its own truth
        try:
            return _true(scanned) and _true(ev.ev(expr))
        except Exception:
            return False
    _context_types(expr, ev)
    keys = sorted(ev.leaves)
    sets = [probes_for(ev.constants, ev.typed.get(k)) for k in keys]
    if math.prod(len(s) for s in sets) > _MAX_COMBOS:
        return False
    defined = 0
    for combo in itertools.product(*sets):
        ev.env = dict(zip(keys, combo, strict=True))
        try:
            result = ev.ev(expr)
            truth = _true(result)
        except _Unknown:
            return False
        except Exception:  # noqa: S112 - a probe the expression is not defined for
            continue
        if not truth:
            return False
        defined += 1
    return defined > 0


def _true(result: Any) -> bool:
    if isinstance(result, _Approx):
        return True
    return bool(result)
