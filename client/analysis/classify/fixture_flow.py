"""Where fixture content flows in a test module: the expected side of a fixture equality.

Fixture *content* is a call whose name contains ``fixture`` or ``snapshot`` (``load_fixture``),
a read (``read_text``, ``open``, ...) of something that mentions fixtures, a loader
(``json.loads``) of such a read, a conversion of any of these (``Decimal(...)``, ``sorted``,
``["key"]``, ``.items()``, ``zip``, ...), a display or comprehension built from them, a call of a
module-level function that returns one, and a name bound from one: by assignment (unpacking
included), ``with open(...) as f``, ``for raw, expected in <fixture content>``, a comprehension
over it, or ``@pytest.mark.parametrize`` whose argument values are fixture content (every argument
name is then content). Module-level names are followed too (``CASES = load_fixture(...)``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from client.analysis.classify.astwalk import dotted, walk

__all__ = ["FixtureFlow", "is_fixture", "mentions_fixture", "module_flow", "tainted_names"]

_CONVERTERS = frozenset(
    {"Decimal", "int", "float", "str", "bytes", "bool", "complex", "Fraction", "list", "tuple"}
    | {"dict", "set", "frozenset", "sorted", "strip", "rstrip", "decode", "encode", "splitlines"}
    | {"read", "readlines", "get", "copy", "deepcopy", "load", "loads", "safe_load", "approx"}
    | {"items", "values", "keys", "zip", "enumerate", "reversed", "iter", "next", "reader"}
)
_READERS = frozenset({"read_text", "read_bytes", "open", "read", "readlines"})
_LOADERS = frozenset({"load", "loads", "safe_load", "full_load"})
#: ``FixtureScanError(...)``: an exception named after fixtures is not their content.
_NOT_CONTENT = ("Error", "Exception", "Warning")
_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_Func = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class FixtureFlow:
    """Module-level names bound to fixture content, and module functions that return it."""

    names: frozenset[str] = frozenset()
    functions: frozenset[str] = frozenset()


def mentions_fixture(expr: ast.AST) -> bool:
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


def is_fixture(expr: ast.expr, tainted: Iterable[str], flow: FixtureFlow = FixtureFlow()) -> bool:
    """Whether ``expr`` is the content of a fixture file or a snapshot (maybe converted)."""
    names = frozenset(tainted) | flow.names
    return _is(expr, names, flow.functions)


def _is(expr: ast.expr, tainted: frozenset[str], funcs: frozenset[str]) -> bool:
    if isinstance(expr, ast.Name):
        return expr.id in tainted or expr.id.startswith("snapshot")
    if isinstance(expr, ast.Subscript | ast.Attribute | ast.Starred):
        return _is(expr.value, tainted, funcs)
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        return any(_is(e, tainted, funcs) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        return any(_is(v, tainted, funcs) for v in expr.values)
    if isinstance(expr, _COMPS):
        inner = set(tainted)
        for gen in expr.generators:
            if _is(gen.iter, frozenset(inner), funcs):
                inner.update(_targets(gen.target))
        parts = [expr.key, expr.value] if isinstance(expr, ast.DictComp) else [expr.elt]
        return any(_is(p, frozenset(inner), funcs) for p in parts)
    if isinstance(expr, ast.Call):
        return _is_call(expr, tainted, funcs)
    return False


def _is_call(expr: ast.Call, tainted: frozenset[str], funcs: frozenset[str]) -> bool:
    name = dotted(expr.func).rsplit(".", 1)[-1]
    lowered = name.lower() if not name.endswith(_NOT_CONTENT) else ""
    if (
        "fixture" in lowered
        or "snapshot" in lowered
        or (isinstance(expr.func, ast.Name) and name in funcs)
    ):
        return True
    receiver = expr.func.value if isinstance(expr.func, ast.Attribute) else None
    inputs: list[ast.expr] = [*expr.args, *(k.value for k in expr.keywords)]

    def source(node: ast.expr) -> bool:
        return mentions_fixture(node) or _is(node, tainted, funcs)

    if name in _READERS and (
        any(source(a) for a in inputs) or (receiver is not None and source(receiver))
    ):
        return True
    if name in _LOADERS and any(source(a) for a in inputs):
        return True
    if name in _CONVERTERS:
        if receiver is not None and _is(receiver, tainted, funcs):
            return True
        return any(_is(a, tainted, funcs) for a in inputs)
    return False


def _targets(target: ast.AST) -> Iterable[str]:
    return (n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def tainted_names(
    body: Sequence[ast.stmt], flow: FixtureFlow, seed: Iterable[str] = ()
) -> frozenset[str]:
    """Names bound to fixture content in ``body`` (nested defs not read): a fixpoint."""
    tainted = set(seed)
    while True:
        before = len(tainted)
        for node in walk(body):
            for value, targets in _bindings(node):
                if is_fixture(value, tainted, flow) or (
                    isinstance(node, ast.withitem)
                    and dotted(value).rsplit(".", 1)[-1] == "open"
                    and mentions_fixture(value)
                ):
                    tainted.update(n for t in targets for n in _targets(t))
        if len(tainted) == before:
            return frozenset(tainted)


def _bindings(node: ast.AST) -> Iterable[tuple[ast.expr, list[ast.expr]]]:
    if isinstance(node, ast.Assign):
        yield node.value, list(node.targets)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
        if node.value is not None:
            yield node.value, [node.target]
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        yield node.iter, [node.target]
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield node.context_expr, [node.optional_vars]


def module_flow(tree: ast.Module) -> FixtureFlow:
    """Module-level fixture names and the module functions that return fixture content."""
    funcs = {s.name: s for s in tree.body if isinstance(s, _Func)}
    flow = FixtureFlow()
    while True:
        names = tainted_names(tree.body, flow)
        returning = frozenset(
            name
            for name, func in funcs.items()
            if any(
                isinstance(n, ast.Return)
                and n.value is not None
                and is_fixture(
                    n.value,
                    tainted_names(func.body, FixtureFlow(names, flow.functions)),
                    FixtureFlow(names, flow.functions),
                )
                for n in walk(func.body)
            )
        )
        grown = FixtureFlow(names, returning)
        if grown == flow:
            return flow
        flow = grown


def parametrized_names(decorators: Sequence[ast.expr], flow: FixtureFlow) -> frozenset[str]:
    """Argument names of ``@pytest.mark.parametrize`` whose values are fixture content."""
    found: set[str] = set()
    for deco in decorators:
        if not isinstance(deco, ast.Call) or not dotted(deco.func).endswith("parametrize"):
            continue
        argnames = deco.args[0] if deco.args else _keyword(deco, "argnames")
        values = deco.args[1] if len(deco.args) > 1 else _keyword(deco, "argvalues")
        if argnames is None or values is None or not is_fixture(values, (), flow):
            continue
        found.update(_argnames(argnames))
    return frozenset(found)


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _argnames(expr: ast.expr) -> Iterable[str]:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [n.strip() for n in expr.value.split(",") if n.strip()]
    if isinstance(expr, ast.List | ast.Tuple):
        return [
            e.value for e in expr.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    return []
