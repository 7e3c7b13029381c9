"""Single-assertion rules of :mod:`client.analysis.assertions`: tautology, fixture equality,
real check.

Each visible assertion of a test function gets one verdict (``property``, ``fixture_eq``,
``tautology``); :mod:`client.analysis.assertions` turns them into the function's class.
Everything is read from the AST: names, calls and constants, never the source text.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

__all__ = ["assertion_verdicts", "dotted", "walk"]

_COPY_FUNCS = frozenset({"copy", "deepcopy", "list", "tuple", "dict", "set", "frozenset"})
_CONVERTERS = frozenset(
    {"Decimal", "int", "float", "str", "bytes", "bool", "complex", "Fraction", "list", "tuple"}
    | {"dict", "set", "frozenset", "sorted", "strip", "rstrip", "decode", "encode", "splitlines"}
    | {"read", "readlines", "get", "copy", "deepcopy", "load", "loads", "safe_load", "approx"}
)
_READERS = frozenset({"read_text", "read_bytes", "open", "read", "readlines"})
_LOADERS = frozenset({"load", "loads", "safe_load", "full_load"})
_EQ_OPS = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
_EQ_METHODS = frozenset(
    {"assertEqual", "assertEquals", "assertNotEqual", "assertListEqual", "assertDictEqual"}
    | {"assertTupleEqual", "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual"}
    | {"assertCountEqual", "assertAlmostEqual", "assertIs", "assertIsNot"}
)
_Func = ast.FunctionDef | ast.AsyncFunctionDef


def assertion_verdicts(func: _Func) -> list[str]:
    """The verdict (property, fixture_eq, tautology) of each visible assertion in ``func``."""
    return list(_assertions(func))


def walk(nodes: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every node under ``nodes``, not descending into nested defs, classes or lambdas."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def dotted(node: ast.AST) -> str:
    """``pytest.mark.skip`` for an attribute chain, ``skip`` for a name, ``""`` otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    if isinstance(node, ast.Call):
        return dotted(node.func)
    return ""


# -- single assertions------------------------------------------------------------------------


def _assertions(func: _Func) -> Iterator[str]:
    """The verdict (property, fixture_eq, tautology) of each visible assertion in ``func``."""
    tainted = _fixture_names(func)
    for node in walk(func.body):
        if isinstance(node, ast.Assert):
            yield from _judge_test(node.test, tainted)
        elif isinstance(node, ast.withitem) and _is_raises(node.context_expr):
            yield "property"
        elif isinstance(node, ast.Call):
            verdict = _judge_call(node, tainted)
            if verdict is not None:
                yield verdict


def _is_raises(expr: ast.expr) -> bool:
    name = dotted(expr).rsplit(".", 1)[-1]
    return isinstance(expr, ast.Call) and (
        name in {"raises", "warns"} or name.startswith("assertRaises")
    )


def _judge_call(call: ast.Call, tainted: set[str]) -> str | None:
    """The verdict of an assertion call (``self.assertEqual``, ``assert_match`` ...), else None."""
    name = dotted(call.func).rsplit(".", 1)[-1]
    if name == "assert_match":
        return "fixture_eq"
    if name == "raises" and isinstance(call.func, ast.Attribute):
        return "property"  # pytest.raises(Error, fn, *args) in call form
    if not name.startswith("assert") or name.startswith("assertRaises"):
        return None  # context-manager forms are counted at their ``with``
    args = call.args
    if (name in _EQ_METHODS or "equal" in name.lower()) and len(args) >= 2:
        return _judge_pair(args[0], ast.Eq(), args[1], tainted)
    if name in {"assertTrue", "assertFalse", "assert_"} and args and _is_constant(args[0]):
        return "tautology"
    return "property"


def _judge_test(test: ast.expr, tainted: set[str]) -> Iterator[str]:
    """Verdicts of ``assert test`` (``a and b`` is two assertions)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            yield from _judge_test(value, tainted)
        return
    if isinstance(test, ast.BoolOp):  # or: one always-true operand makes the whole true
        parts = [v for value in test.values for v in _judge_test(value, tainted)]
        yield (
            "tautology"
            if "tautology" in parts
            else ("fixture_eq" if "fixture_eq" in parts else "property")
        )
        return
    if _is_constant(test):
        # `assert False` (an unreachable-branch check) can fail; a truthy constant cannot.
        yield "tautology" if _constant_truth(test) else "property"
        return
    if isinstance(test, ast.Compare):
        left = test.left
        pairs = []
        for op, right in zip(test.ops, test.comparators, strict=True):
            pairs.append(_judge_pair(left, op, right, tainted))
            left = right
        if "fixture_eq" in pairs:
            yield "fixture_eq"
        elif all(p == "tautology" for p in pairs):
            yield "tautology"
        else:
            yield "property"
        return
    yield "property"


def _judge_pair(left: ast.expr, op: ast.cmpop, right: ast.expr, tainted: set[str]) -> str:
    if _is_constant(left) and _is_constant(right):
        return "tautology"
    if _pure(left) and (_same(left, right) or _is_copy_of(right, left)):
        return "tautology"
    if _pure(right) and _is_copy_of(left, right):
        return "tautology"
    if isinstance(op, _EQ_OPS) and (_is_fixture(left, tainted) or _is_fixture(right, tainted)):
        return "fixture_eq"
    return "property"


def _is_constant(expr: ast.expr) -> bool:
    """A literal built only from constants (``1``, ``"a"``, ``(1, 2)``, ``-1``, ``not True``)."""
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.UnaryOp):
        return _is_constant(expr.operand)
    if isinstance(expr, ast.BinOp):
        return _is_constant(expr.left) and _is_constant(expr.right)
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        return all(_is_constant(e) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        return all(k is not None and _is_constant(k) for k in expr.keys) and all(
            _is_constant(v) for v in expr.values
        )
    return False


def _constant_truth(expr: ast.expr) -> bool:
    try:
        return bool(ast.literal_eval(expr))
    except (ValueError, TypeError, SyntaxError, ZeroDivisionError, MemoryError):
        return True  # a constant we cannot evaluate still does not depend on the code under test


def _pure(expr: ast.expr) -> bool:
    """No call, await or yield inside: ``f(x) == f(x)`` is a determinism check, not a tautology."""
    return not any(
        isinstance(n, ast.Call | ast.Await | ast.Yield | ast.YieldFrom) for n in ast.walk(expr)
    )


def _same(a: ast.expr, b: ast.expr) -> bool:
    return ast.dump(a) == ast.dump(b)


def _is_copy_of(copy: ast.expr, original: ast.expr) -> bool:
    """``copy(x)``, ``list(x)``, ``x.copy()`` or ``x[:]`` of ``original``."""
    if isinstance(copy, ast.Call):
        name = dotted(copy.func).rsplit(".", 1)[-1]
        if name in _COPY_FUNCS and len(copy.args) == 1 and _same(copy.args[0], original):
            return not copy.keywords
        if name == "copy" and not copy.args and isinstance(copy.func, ast.Attribute):
            return _same(copy.func.value, original)
    if isinstance(copy, ast.Subscript) and isinstance(copy.slice, ast.Slice):
        whole = copy.slice.lower is None and copy.slice.upper is None and copy.slice.step is None
        return whole and _same(copy.value, original)
    return False


# -- fixture content ----------------------------------------------------------------------------


def _mentions_fixture(expr: ast.AST) -> bool:
    """A name, attribute or string inside ``expr`` mentions fixtures (``FIXTURES / "a.json"``)."""
    for node in ast.walk(expr):
        text = ""
        if isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        if "fixture" in text.lower():
            return True
    return False


def _is_fixture(expr: ast.expr, tainted: set[str]) -> bool:
    """Whether ``expr`` is the content of a fixture file or a snapshot (maybe converted)."""
    if isinstance(expr, ast.Name):
        return expr.id in tainted or expr.id.startswith("snapshot")
    if isinstance(expr, ast.Subscript | ast.Attribute):
        return _is_fixture(expr.value, tainted)
    if not isinstance(expr, ast.Call):
        return False
    name = dotted(expr.func).rsplit(".", 1)[-1]
    lowered = name.lower()
    if "fixture" in lowered or "snapshot" in lowered:
        return True
    receiver = expr.func.value if isinstance(expr.func, ast.Attribute) else None
    inputs: list[ast.expr] = [*expr.args, *(k.value for k in expr.keywords)]
    if name in _READERS and (
        any(_mentions_fixture(a) or _is_fixture(a, tainted) for a in inputs)
        or (
            receiver is not None and (_mentions_fixture(receiver) or _is_fixture(receiver, tainted))
        )
    ):
        return True
    if name in _LOADERS and any(_mentions_fixture(a) or _is_fixture(a, tainted) for a in inputs):
        return True
    if name in _CONVERTERS:
        if receiver is not None and _is_fixture(receiver, tainted):
            return True
        return any(_is_fixture(a, tainted) for a in inputs)
    return False


def _fixture_names(func: _Func) -> set[str]:
    """Local names bound to fixture content (assignments, ``with open(...) as f``): a fixpoint."""
    tainted: set[str] = set()
    while True:
        before = len(tainted)
        for node in walk(func.body):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if _is_fixture(node.value, tainted):
                    tainted.update(t.id for t in targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
                expr = node.context_expr
                if _is_fixture(expr, tainted) or (
                    dotted(expr).rsplit(".", 1)[-1] == "open" and _mentions_fixture(expr)
                ):
                    tainted.add(node.optional_vars.id)
        if len(tainted) == before:
            return tainted
