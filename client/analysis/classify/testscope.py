"""What a test module and one test function bind, as the assertion rules need it.

* :class:`Names` (:mod:`client.analysis.classify.constfold`) for the module and the function: names
  bound **once** to a constant (``DEBUG = False``, ``expected = 3``; a list or dict literal only
  when it is never used except to be iterated), to a def, class or lambda, and what imports stand
  for; a name rebound anywhere (``global``, ``+=``, a loop, a second assignment) is not a constant;
* the module-level helper functions (and the methods of the test's classes, for ``self.h(...)``);
* the names that stand for the **code under test**: imported from a production module (the
  ``production`` predicate on dotted module names), and the local names bound from them or passed
  to them (a value the code under test made or could have changed);
* the names bound to mocks (``Mock()``, ``patch(...)``, ``mocker.*``, parameters ``mock_*``);
* aliases: a local bound once to another name (``b = a``), or ``a = b = f()``, is that name.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from client.analysis.classify.astwalk import dotted, walk
from client.analysis.classify.constfold import UNKNOWN, Names, value

__all__ = ["Facts", "Helper", "Scope", "default_production", "function_facts", "module_scope"]

_Func = ast.FunctionDef | ast.AsyncFunctionDef
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, tuple, frozenset, range)
_ITERATORS = frozenset({"all", "any", "len", "list", "tuple", "sorted", "set", "enumerate", "zip"})
_TEST_TOOLS = frozenset(
    {"pytest", "_pytest", "unittest", "mock", "hypothesis", "pytest_mock", "freezegun", "syrupy"}
)
_MOCK_FACTORIES = frozenset(
    {"Mock", "MagicMock", "AsyncMock", "NonCallableMock", "NonCallableMagicMock"}
    | {"create_autospec", "patch", "PropertyMock"}
)
_TEST_PARTS = frozenset({"tests", "test", "testing", "conftest", "properties"})


def default_production(module: str) -> bool:
    """Without a checkout: an absolute import that is not the standard library, a test tool or a
    test module (``tests.x``, ``conftest``, ``test_x``)."""
    parts = module.split(".")
    if not parts[0] or parts[0] in sys.stdlib_module_names or parts[0] in _TEST_TOOLS:
        return False
    return not any(p in _TEST_PARTS or p.startswith("test_") or p.endswith("_test") for p in parts)


@dataclass(frozen=True)
class Helper:
    """A module-level function (or lambda) of the test module, as far as the rules read it."""

    params: tuple[str, ...]
    returns: tuple[ast.expr | None, ...]
    body: tuple[ast.AST, ...]
    falls_through: bool
    several: bool = False

    def identity(self) -> int | None:
        """The index of the parameter a ``return p`` / ``return bool(p)`` helper returns."""
        if self.several or len(self.returns) != 1 or self.falls_through or self.returns[0] is None:
            return None
        ret = self.returns[0]
        if (
            isinstance(ret, ast.Call)
            and dotted(ret.func) == "bool"
            and len(ret.args) == 1
            and not ret.keywords
        ):
            ret = ret.args[0]
        if isinstance(ret, ast.Name) and ret.id in self.params and self._plain():
            return self.params.index(ret.id)
        return None

    def _plain(self) -> bool:
        """Nothing in the body but (a docstring and) the return."""
        return not any(
            isinstance(n, ast.stmt) and not isinstance(n, ast.Return | ast.Expr) for n in self.body
        )

    def checks(self) -> bool:
        """Its body asserts, raises or calls an assertion helper itself."""
        for node in self.body:
            if isinstance(node, ast.Assert | ast.Raise):
                return True
            if isinstance(node, ast.Call) and dotted(node.func).rsplit(".", 1)[-1].startswith(
                ("assert", "fail")
            ):
                return True
        return False


@dataclass(frozen=True)
class Scope:
    """The module's view: names, helpers, the names of the code under test."""

    names: Names
    helpers: Mapping[str, Helper]
    methods: Mapping[str, Helper]
    production: frozenset[str]


@dataclass(frozen=True)
class Facts:
    """One test function's view: its names, aliases, produced and mock names."""

    names: Names
    aliases: Mapping[str, str] = field(default_factory=dict)
    produced: frozenset[str] = frozenset()
    mocks: frozenset[str] = frozenset()


# -- bindings -----------------------------------------------------------------------------------


def _target_names(target: ast.AST) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            yield node.name


def _bound(nodes: Iterable[ast.AST]) -> dict[str, int]:
    """How often each name is bound among ``nodes`` (a def, import or loop counts)."""
    counts: dict[str, int] = {}

    def add(name: str, times: int = 1) -> None:
        counts[name] = counts.get(name, 0) + times

    for node in nodes:
        if isinstance(node, ast.Assign | ast.For | ast.AsyncFor | ast.withitem):
            once = isinstance(node, ast.Assign | ast.withitem)  # a loop target is rebound
            for t in _binding_targets(node):
                for name in _target_names(t):
                    add(name, 1 if once else 2)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr | ast.Delete):
            targets = node.targets if isinstance(node, ast.Delete) else [node.target]
            for t in targets:
                for name in _target_names(t):
                    add(name, 1 if isinstance(node, ast.AnnAssign) and node.value else 2)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, _Func | ast.ClassDef):
            add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                add(name, 2)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            add(node.name, 2)
    return counts


def _origins(nodes: Iterable[ast.AST]) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    found.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                found[alias.asname or alias.name] = f"{base}.{alias.name}"
    return found


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _only_iterated(name: str, tree: ast.AST, parents: Mapping[int, ast.AST]) -> bool:
    """Every read of ``name`` iterates it: ``for x in NAME``, ``all(NAME)``, ``len(NAME)`` ..."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.For | ast.AsyncFor | ast.comprehension) and parent.iter is node:
            continue
        if (
            isinstance(parent, ast.Call)
            and node in parent.args
            and dotted(parent.func) in _ITERATORS
        ):
            continue
        return False
    return True


def _constants(
    stmts: Iterable[ast.AST], counts: Mapping[str, int], base: Names, whole: ast.AST
) -> dict[str, ast.expr]:
    """Names bound once, by plain assignment, to a literal whose value cannot change."""
    table: dict[str, ast.expr] = dict(base.constants)
    parents: dict[int, ast.AST] = {}  # built on the first mutable literal: most modules have none
    for _ in range(3):  # constants defined from constants: a few rounds settle it
        for node in stmts:
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            val = value(node.value, Names(table, base.objects, base.origins))
            if val is UNKNOWN:
                continue
            for t in targets:
                if not isinstance(t, ast.Name) or counts.get(t.id, 0) != 1:
                    continue
                if not isinstance(val, _IMMUTABLE) and not parents:
                    parents.update(_parents(whole))
                if isinstance(val, _IMMUTABLE) or _only_iterated(t.id, whole, parents):
                    table[t.id] = node.value
    return table


# -- the module ---------------------------------------------------------------------------------


def _helper(node: ast.AST) -> Helper | None:
    if isinstance(node, _Func):
        args = node.args
        params = tuple(a.arg for a in [*args.posonlyargs, *args.args])
        body = tuple(walk(node.body))
        returns = tuple(n.value for n in body if isinstance(n, ast.Return))
        last = node.body[-1] if node.body else None
        return Helper(params, returns, body, not isinstance(last, ast.Return | ast.Raise))
    if isinstance(node, ast.Lambda):
        params = tuple(a.arg for a in [*node.args.posonlyargs, *node.args.args])
        return Helper(params, (node.body,), tuple(ast.walk(node.body)), False)
    return None


def _merged(found: Sequence[Helper]) -> Helper:
    """A name defined more than once (or under a condition): read as all its bodies at once,
    never as returning its argument or a constant (which one runs is not read)."""
    body = tuple(n for h in found for n in h.body)
    returns = tuple(r for h in found for r in h.returns)
    return Helper(found[-1].params, returns, body, falls_through=True, several=True)


def _unbound(helper: Helper, func: _Func) -> Helper:
    """A method as called through ``self.``: without its ``self``/``cls`` parameter."""
    static = any(dotted(d) == "staticmethod" for d in func.decorator_list)
    if static or not helper.params:
        return helper
    return Helper(helper.params[1:], helper.returns, helper.body, helper.falls_through)  # one def


def module_scope(
    tree: ast.Module, classes: Sequence[ast.ClassDef], production: Callable[[str], bool]
) -> Scope:
    """The module's names, helpers and code-under-test names."""
    top = list(walk(tree.body))
    counts = _bound([*top, *(n for n in ast.walk(tree) if isinstance(n, ast.Global))])
    imports = _origins(top)
    origins = dict(imports)
    for node in top:  # E = AssertionError, fail = pytest.fail
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name | ast.Attribute):
            for t in node.targets:
                if isinstance(t, ast.Name) and counts.get(t.id) == 1 and dotted(node.value):
                    origins[t.id] = dotted(node.value)
    defined: dict[str, list[Helper]] = {}
    objects: set[str] = set()
    for stmt in top:  # module level, inside if/try/with too
        target = stmt.name if isinstance(stmt, _Func | ast.ClassDef) else None
        found = _helper(stmt) if isinstance(stmt, _Func) else None
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Lambda)
            and [type(t) for t in stmt.targets] == [ast.Name]
        ):
            target, found = dotted(stmt.targets[0]), _helper(stmt.value)
        if target is not None and counts.get(target) == 1:
            objects.add(target)
        if target is not None and found is not None:
            defined.setdefault(target, []).append(found)
    helpers = {  # bound more than once (a second def, `holds = None`): every def at once
        name: found[0] if len(found) == 1 and counts.get(name) == 1 else _merged(found)
        for name, found in defined.items()
    }
    base = Names({}, frozenset(objects), origins)
    names = Names(_constants(top, counts, base, tree), frozenset(objects), origins)
    methods = {
        s.name: _unbound(h, s)
        for cls in classes[-1:]
        for s in cls.body
        if isinstance(s, _Func) and (h := _helper(s)) is not None
    }
    prod = frozenset(
        name
        for name, origin in imports.items()
        if not origin.startswith(".")
        and (production(origin) or production(origin.rpartition(".")[0] or origin))
    )
    return Scope(names=names, helpers=helpers, methods=methods, production=prod)


# -- one function -------------------------------------------------------------------------------


def _in_loops(func: _Func) -> set[int]:
    inside: set[int] = set()
    for node in walk(func.body):
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            inside.update(id(n) for n in walk([*node.body, *node.orelse]))
    return inside


def _is_mock_factory(call: ast.expr, names: Names) -> bool:
    """``Mock()``, ``mock.patch(...)``, ``patch.object(...)``, ``mocker.<anything>(...)``."""
    if not isinstance(call, ast.Call):
        return False
    parts = names.origin(call.func).split(".")
    if parts[0] == "mocker":
        return len(parts) > 1
    if len(parts) == 1:
        return parts[0] in _MOCK_FACTORIES
    from_mock = "mock" in parts[:-1] or parts[-2] == "patch"
    return from_mock and (parts[-1] in _MOCK_FACTORIES or parts[-2] == "patch")


def function_facts(func: _Func, scope: Scope) -> Facts:
    """The names of one test function (module names shadowed by its own bindings)."""
    args = func.args
    params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    nodes = list(walk(func.body))
    counts = _bound(nodes)
    for p in params:
        counts[p] = counts.get(p, 0) + 1
    loops = _in_loops(func)
    outside = [n for n in nodes if id(n) not in loops]
    module = scope.names
    kept = {k: v for k, v in module.constants.items() if k not in counts}
    objects = frozenset(o for o in module.objects if o not in counts) | frozenset(
        n.name for n in nodes if isinstance(n, _Func | ast.ClassDef) and counts.get(n.name) == 1
    )
    base = Names(kept, objects, module.origins)
    local = _constants(outside, counts, base, func)
    names = Names(local, objects, module.origins)
    aliases: dict[str, str] = {}
    for node in outside:
        if not isinstance(node, ast.Assign):
            continue
        single = [t.id for t in node.targets if isinstance(t, ast.Name) and counts.get(t.id) == 1]
        if len(single) != len(node.targets):
            continue
        for other in single[1:]:
            aliases[other] = single[0]
        if isinstance(node.value, ast.Name) and counts.get(node.value.id, 0) <= 1:
            aliases[single[0]] = node.value.id
    mocks = {
        p for p in params if p in {"mock", "mocker"} or p.startswith("mock_") or p.endswith("_mock")
    }
    for node in nodes:
        if isinstance(node, ast.Assign) and _is_mock_factory(node.value, names):
            mocks.update(n for t in node.targets for n in _target_names(t))
        elif isinstance(node, ast.withitem) and _is_mock_factory(node.context_expr, names):
            mocks.update(_target_names(node.optional_vars) if node.optional_vars else ())
    return Facts(
        names=names,
        aliases=aliases,
        produced=_produced(nodes, scope.production - frozenset(counts)),
        mocks=frozenset(mocks),
    )


def _refs(expr: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _produced(nodes: Sequence[ast.AST], production: frozenset[str]) -> frozenset[str]:
    """Local names the code under test made, or was handed (and may have changed): a fixpoint."""
    produced: set[str] = set()
    while True:
        before = len(produced)
        live = production | produced
        for node in nodes:
            if isinstance(node, ast.Call) and _refs(node.func) & live:
                produced.update(
                    r for a in [*node.args, *(k.value for k in node.keywords)] for r in _refs(a)
                )
                if isinstance(node.func, ast.Attribute):
                    produced.update(_refs(node.func.value))
            value_of = (
                getattr(node, "value", None)
                if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr)
                else getattr(node, "iter", None)
                if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension)
                else getattr(node, "context_expr", None)
                if isinstance(node, ast.withitem)
                else None
            )
            if value_of is not None and _refs(value_of) & live:
                for t in _binding_targets(node):
                    produced.update(_target_names(t))
        if len(produced) == before:
            return frozenset(produced - production)


def _binding_targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.withitem):
        return [node.optional_vars] if node.optional_vars is not None else []
    target = getattr(node, "target", None)
    return [target] if isinstance(target, ast.expr) else []
