"""Single-assertion rules of :mod:`client.analysis.classify.assertions`: tautology, fixture
equality, opaque, real check.

Each visible assertion of a test function gets one :class:`Finding` (``property``, ``fixture_eq``,
``tautology``, ``opaque``) with a reason; :mod:`client.analysis.classify.assertions` turns them into
the function's class. Everything is read from the AST (names, calls, constants), never from the
source text. An assertion that can never fail the test (unreachable, or its failure is swallowed:
:mod:`client.analysis.classify.reach`) is a ``tautology`` whatever it compares.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from client.analysis.classify.astwalk import dotted, walk
from client.analysis.classify.constfold import UNKNOWN as _UNKNOWN
from client.analysis.classify.constfold import Names, truth, value
from client.analysis.classify.fixture_flow import (
    FixtureFlow,
    is_fixture,
    parametrized_names,
    tainted_names,
)
from client.analysis.classify.probes import vacuous
from client.analysis.classify.reach import expects_assertion, walk_live
from client.analysis.classify.testscope import (
    Facts,
    Helper,
    Scope,
    default_production,
    function_facts,
)
from client.analysis.classify.testscope import module_scope as _module_scope

__all__ = ["Finding", "assertion_findings", "assertion_verdicts", "dotted", "walk"]

_COPY_FUNCS = frozenset({"copy", "deepcopy", "list", "tuple", "dict", "set", "frozenset"})
_EQ_OPS = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
_EQ_METHODS = frozenset(
    {"assertEqual", "assertEquals", "assertNotEqual", "assertListEqual", "assertDictEqual"}
    | {"assertTupleEqual", "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual"}
    | {"assertCountEqual", "assertAlmostEqual", "assertIs", "assertIsNot"}
)
#: The assertion methods of :class:`unittest.mock.Mock`: they check calls made on a fake.
MOCK_ASSERTS = frozenset(
    {"assert_called", "assert_called_once", "assert_called_with", "assert_called_once_with"}
    | {"assert_any_call", "assert_has_calls", "assert_not_called", "assert_awaited"}
    | {"assert_awaited_once", "assert_awaited_with", "assert_awaited_once_with"}
    | {"assert_any_await", "assert_has_awaits", "assert_not_awaited"}
)
_MOCK_VALUES = frozenset({"call", "ANY", "sentinel", "DEFAULT"})
_Func = ast.FunctionDef | ast.AsyncFunctionDef
_Verdicts = Iterator[tuple[str, str]]


@dataclass(frozen=True)
class Finding:
    """The verdict of one visible assertion, why, and its line."""

    verdict: str
    why: str
    line: int


def assertion_verdicts(func: _Func, scope: Scope | None = None) -> list[str]:
    """The verdict (property, fixture_eq, tautology, opaque) of each visible assertion."""
    return [f.verdict for f in assertion_findings(func, scope)]


def assertion_findings(
    func: _Func,
    scope: Scope | None = None,
    flow: FixtureFlow | None = None,
    decorators: Sequence[ast.expr] = (),
) -> list[Finding]:
    """Every visible assertion of ``func`` judged in its module ``scope`` (its fixture ``flow``,
    and the parametrize ``decorators`` of its classes)."""
    if scope is None:
        scope = _module_scope(ast.Module(body=[], type_ignores=[]), (), default_production)
    flow = flow or FixtureFlow()
    facts = function_facts(func, scope)
    seed = parametrized_names([*func.decorator_list, *decorators], flow)
    judge = _Judge(scope, facts, flow, tainted_names(func.body, flow, seed))
    findings: list[Finding] = []
    managers: set[int] = set()
    for node, dead in walk_live(func.body, facts.names):
        found: list[tuple[str, str]] = []
        if isinstance(node, ast.Assert):
            found = list(judge.test(node.test))
        elif isinstance(node, ast.With | ast.AsyncWith):
            found = list(judge.with_items(node, managers))
        elif isinstance(node, ast.Call) and id(node) not in managers:
            found = list(judge.call(node))
        line = getattr(node, "lineno", 0)
        for verdict, why in found:
            findings.append(
                Finding("tautology", dead, line) if dead else Finding(verdict, why, line)
            )
    return findings


def _is_raises(expr: ast.expr) -> bool:
    name = dotted(expr).rsplit(".", 1)[-1]
    return isinstance(expr, ast.Call) and (
        name in {"raises", "warns"} or name.startswith("assertRaises")
    )


def _has_assertion(body: Sequence[ast.stmt]) -> bool:
    return any(
        isinstance(n, ast.Assert)
        or (isinstance(n, ast.Call) and dotted(n.func).rsplit(".", 1)[-1].startswith("assert"))
        for n in walk(body)
    )


class _Canon(ast.NodeTransformer):
    """Aliases to their root name, constants to their literal, ``h(x)`` of an identity helper
    to ``x``."""

    def __init__(self, judge: _Judge) -> None:
        self.judge = judge
        self.depth = 0

    def visit_Name(self, node: ast.Name) -> ast.expr:
        facts = self.judge.facts
        name, seen = node.id, set()
        while name in facts.aliases and name not in seen:
            seen.add(name)
            name = facts.aliases[name]
        if name in facts.names.constants and self.depth < 20:
            self.depth += 1
            return self.visit(copy.deepcopy(facts.names.constants[name]))  # type: ignore[no-any-return]
        return ast.Name(id=name, ctx=node.ctx)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        helper = self.judge.helper_of(node)
        index = helper.identity() if helper is not None else None
        plain = not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)
        if index is not None and plain and index < len(node.args) and self.depth < 20:
            self.depth += 1
            found: ast.expr = self.visit(node.args[index])
            return found
        visited: ast.expr = self.generic_visit(node)  # type: ignore[assignment]
        return visited


class _Judge:
    """The rules, bound to one function's scope, facts and fixture-tainted names."""

    def __init__(self, scope: Scope, facts: Facts, flow: FixtureFlow, tainted: frozenset[str]):
        self.scope, self.facts, self.flow, self.tainted = scope, facts, flow, tainted

    @property
    def names(self) -> Names:
        return self.facts.names

    def canon(self, expr: ast.expr) -> ast.expr:
        return _Canon(self).visit(copy.deepcopy(expr))  # type: ignore[no-any-return]

    def helper_of(self, call: ast.Call) -> Helper | None:
        func = call.func
        if isinstance(func, ast.Name) and func.id not in self.facts.aliases:
            return self.scope.helpers.get(func.id)
        if isinstance(func, ast.Attribute) and dotted(func.value) in {"self", "cls"}:
            return self.scope.methods.get(func.attr)
        return None

    # -- assert statements

    def test(self, test: ast.expr) -> _Verdicts:
        """Verdicts of ``assert test`` (``a and b`` is two assertions)."""
        test = self.canon(test)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for part in test.values:
                yield from self.test(part)
            return
        known = truth(test, self.names)
        if known is True:
            yield "tautology", f"`{_short(test)}` is always true"
            return
        if known is False:  # `assert False`: an unreachable-branch check that can fail
            yield "property", "always false: it fails whenever it runs"
            return
        if vacuous(test, self.names):
            yield "tautology", f"`{_short(test)}` holds whatever the code under test returned"
            return
        yield from self._test_form(test)

    def _test_form(self, test: ast.expr) -> _Verdicts:
        if isinstance(test, ast.BoolOp):  # or: one always-true operand makes the whole true
            parts = [v for part in test.values for v in self.test(part)]
            kinds = [k for k, _ in parts]
            for kind in ("tautology", "fixture_eq", "property"):
                if kind in kinds:
                    yield kind, next(w for k, w in parts if k == kind)
                    return
            yield "opaque", parts[0][1]
            return
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            for kind, why in self._test_form(test.operand):
                yield ("property" if kind == "tautology" else kind), why
            return
        if isinstance(test, ast.Compare):
            yield self.compare(test)
            return
        if isinstance(test, ast.Call):
            yield from self.call_test(test)
            return
        if self.mock_rooted(test):
            yield "opaque", "it reads a mock, not the code under test"
            return
        yield "property", "a real check"

    def compare(self, test: ast.Compare) -> tuple[str, str]:
        if all(
            self.mock_rooted(e) or value(e, self.names) is not _UNKNOWN
            for e in (test.left, *test.comparators)
        ) and any(self.mock_rooted(e) for e in (test.left, *test.comparators)):
            return "opaque", "it compares what a mock recorded, not the code under test"
        left, pairs = test.left, []
        for op, right in zip(test.ops, test.comparators, strict=True):
            pairs.append(self.pair(left, op, right))
            left = right
        for kind in ("fixture_eq",):
            if any(k == kind for k, _ in pairs):
                return next(p for p in pairs if p[0] == kind)
        if all(k == "tautology" for k, _ in pairs):
            return pairs[0]
        return "property", "a real check"

    def pair(self, left: ast.expr, op: ast.cmpop, right: ast.expr) -> tuple[str, str]:
        names = self.names
        if value(left, names) is not _UNKNOWN and value(right, names) is not _UNKNOWN:
            return "tautology", "it compares two constants"
        if _pure(left) and (_same(left, right) or _is_copy_of(right, left)):
            return "tautology", "it compares a value with itself (or its copy)"
        if _pure(right) and _is_copy_of(left, right):
            return "tautology", "it compares a value with its copy"
        if isinstance(op, _EQ_OPS) and (self.fixture(left) or self.fixture(right)):
            return "fixture_eq", "an equality with fixture content"
        return "property", "a real check"

    def fixture(self, expr: ast.expr, extra: Iterable[str] = ()) -> bool:
        return is_fixture(expr, self.tainted | frozenset(extra), self.flow)

    def call_test(self, test: ast.Call) -> _Verdicts:
        name = self.names.origin(test.func).removeprefix("builtins.")
        if name in {"all", "any"} and len(test.args) == 1 and not test.keywords:
            yield from self.quantified(test.args[0])
            return
        helper = self.helper_of(test)
        if isinstance(test.func, ast.Name) and test.func.id in self.scope.production:
            helper = None  # the code under test itself (also when a fallback def shadows it)
        if helper is not None:
            yield self.helper_call(test, helper)
            return
        if self.mock_rooted(test):
            yield "opaque", "it reads a mock, not the code under test"
            return
        yield "property", "a real check"

    def quantified(self, arg: ast.expr) -> _Verdicts:
        """``all(<elt> for ... in ...)`` / ``all([a, b])``: the elements are the assertions."""
        if isinstance(arg, ast.List | ast.Tuple | ast.Set):
            parts = [v for e in arg.elts for v in self.test(e)] if arg.elts else []
        elif isinstance(arg, ast.GeneratorExp | ast.ListComp | ast.SetComp):
            extra: set[str] = set()
            for gen in arg.generators:
                if self.fixture(gen.iter, extra):
                    extra.update(n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name))
            inner = _Judge(self.scope, self.facts, self.flow, self.tainted | frozenset(extra))
            parts = list(inner.test(arg.elt))
        else:
            yield "property", "a real check"
            return
        kinds = [k for k, _ in parts]
        for kind in ("fixture_eq", "property", "opaque", "tautology"):
            if kind in kinds and (kind != "tautology" or all(k == kind for k in kinds)):
                yield kind, next(w for k, w in parts if k == kind)
                return
        yield "property", "a real check"

    def helper_call(self, call: ast.Call, helper: Helper) -> tuple[str, str]:
        name = dotted(call.func)
        if self._constant(helper):
            return "tautology", f"the helper {name}() returns a constant"
        if self._reaches(helper, set()) or self._depends(call):
            return "property", "a helper over the code under test"
        why = f"the helper {name}() calls nothing of the code under test and gets nothing from it"
        return "opaque", why

    def _constant(self, helper: Helper) -> bool:
        if helper.falls_through or not helper.returns or helper.checks():
            return False
        if not all(r is not None and truth(r, self.names) is True for r in helper.returns):
            return False
        calls = [n for n in helper.body if isinstance(n, ast.Call)]
        return not any(self.helper_of(c) for c in calls) and not self._refs_code(helper.body)

    def _refs_code(self, nodes: Iterable[ast.AST]) -> bool:
        return any(isinstance(n, ast.Name) and n.id in self.scope.production for n in nodes)

    def _reaches(self, helper: Helper, seen: set[int]) -> bool:
        """The helper (or a helper it calls) names something of the code under test."""
        if id(helper) in seen:
            return False
        seen.add(id(helper))
        if self._refs_code(helper.body):
            return True
        return any(
            (inner := self.helper_of(n)) is not None and self._reaches(inner, seen)
            for n in helper.body
            if isinstance(n, ast.Call)
        )

    def _depends(self, call: ast.Call) -> bool:
        live = self.scope.production | self.facts.produced
        args = [*call.args, *(k.value for k in call.keywords)]
        return any(isinstance(n, ast.Name) and n.id in live for a in args for n in ast.walk(a))

    def mock_rooted(self, expr: ast.expr) -> bool:
        """An attribute, item or call chain on a mock (``m.called``, ``m.call_args[0]``)."""
        node: ast.expr = expr
        chained = False
        while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
            node = node.func if isinstance(node, ast.Call) else node.value
            chained = True
        if isinstance(node, ast.Name) and node.id in self.facts.mocks:
            return chained or expr is not node
        origin = self.names.origin(expr if not isinstance(expr, ast.Call) else expr.func)
        return origin.rsplit(".", 1)[-1] in _MOCK_VALUES and "mock" in origin

    # -- assertion calls and with-blocks

    def with_items(self, node: ast.With | ast.AsyncWith, managers: set[int]) -> _Verdicts:
        for item in node.items:
            expr = item.context_expr
            if not _is_raises(expr):
                continue
            managers.add(id(expr))
            if expects_assertion(expr, self.names) and _has_assertion(node.body):
                yield "tautology", "it expects the test's own assertion to fail"
            else:
                yield "property", "an expected exception"

    def call(self, call: ast.Call) -> _Verdicts:
        """The verdict of an assertion call (``self.assertEqual``, ``m.assert_called()`` ...)."""
        name = dotted(call.func).rsplit(".", 1)[-1]
        if name == "assert_match":
            yield "fixture_eq", "a snapshot comparison"
            return
        if name == "raises" and isinstance(call.func, ast.Attribute):
            yield "property", "an expected exception"  # pytest.raises(Error, fn, *args)
            return
        if not name.startswith("assert") or name.startswith("assertRaises"):
            return  # context-manager forms are counted at their ``with``
        if isinstance(call.func, ast.Attribute) and (
            name in MOCK_ASSERTS
            or self.mock_rooted(call.func.value)
            or (isinstance(call.func.value, ast.Name) and call.func.value.id in self.facts.mocks)
        ):
            yield "opaque", f"a mock assertion ({name}) checks a fake, not the code under test"
            return
        args = [self.canon(a) for a in call.args]
        if (name in _EQ_METHODS or "equal" in name.lower()) and len(args) >= 2:
            yield self.pair(args[0], ast.Eq(), args[1])
            return
        if name in {"assertTrue", "assertFalse", "assert_"} and args:
            known = truth(args[0], self.names)
            if known is (name != "assertFalse"):
                yield "tautology", f"`{_short(args[0])}` never changes"
                return
            if name != "assertFalse" and vacuous(args[0], self.names):
                yield "tautology", f"`{_short(args[0])}` holds whatever the code returned"
                return
        yield "property", "a real check"


def _short(expr: ast.expr) -> str:
    text = ast.unparse(expr)
    return text if len(text) <= 40 else text[:37] + "..."


def _pure(expr: ast.expr) -> bool:
    """No call, await or yield inside: ``f(x) == f(x)`` is a determinism check, not a tautology."""
    return not any(
        isinstance(n, ast.Call | ast.Await | ast.Yield | ast.YieldFrom) for n in ast.walk(expr)
    )


def _same(a: ast.expr, b: ast.expr) -> bool:
    return ast.dump(a) == ast.dump(b)


def _is_copy_of(copied: ast.expr, original: ast.expr) -> bool:
    """``copy(x)``, ``list(x)``, ``x.copy()`` or ``x[:]`` of ``original``."""
    if isinstance(copied, ast.Call):
        name = dotted(copied.func).rsplit(".", 1)[-1]
        if name in _COPY_FUNCS and len(copied.args) == 1 and _same(copied.args[0], original):
            return not copied.keywords
        if name == "copy" and not copied.args and isinstance(copied.func, ast.Attribute):
            return _same(copied.func.value, original)
    if isinstance(copied, ast.Subscript) and isinstance(copied.slice, ast.Slice):
        s = copied.slice
        whole = s.lower is None and s.upper is None and s.step is None
        return whole and _same(copied.value, original)
    return False
