"""Which statements of a test function can run and let an assertion failure out.

:func:`walk_live` walks a function body like :func:`client.analysis.classify.astwalk.walk` and
says, for every node, why an assertion there can never fail the test (``None`` when it can):

* **unreachable**: under ``if``/``while`` whose condition is always false (``if False:``,
  ``if 0:``, ``if DEBUG:`` with a module constant ``DEBUG = False``, ``if TYPE_CHECKING:``), in
  the ``else`` of one always true, after ``return``/``raise``/``continue``/``break`` (or
  ``pytest.skip``/``fail``, ``sys.exit``, ``os._exit``, or a compound statement every branch of
  which ends so) in the same block, in the body of a loop over an empty literal (``[]``, ``()``,
  ``{}``, ``""``, ``range(0)``, a never-changed empty module list);
* **swallowed**: inside ``try`` whose handler catches ``AssertionError`` (also ``Exception``,
  ``BaseException``, a bare ``except``) without re-raising or failing, inside ``try`` whose
  ``finally`` returns, breaks or continues, inside ``contextlib.suppress`` of one of those, and
  inside ``pytest.raises``/``assertRaises`` of one of those (the test then *expects* its own
  assertion to fail).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from client.analysis.classify.astwalk import SCOPES, walk
from client.analysis.classify.constfold import Names, is_empty, truth

__all__ = ["catches_assertion", "expects_assertion", "walk_live"]

_CATCH_ALL = frozenset({"AssertionError", "Exception", "BaseException"})
_STOPPERS = frozenset(
    {"pytest.skip", "pytest.xfail", "pytest.fail", "pytest.exit", "sys.exit", "os._exit"}
    | {"exit", "quit", "skip", "xfail", "fail"}
)
_Live = Iterator[tuple[ast.AST, str | None]]


def walk_live(body: Sequence[ast.stmt], names: Names) -> _Live:
    """(node, why an assertion there cannot fail the test, or None) for every node of ``body``."""
    return _block(body, None, names)


def catches_assertion(kind: ast.expr | None, names: Names) -> bool:
    """Whether ``except kind`` (or ``raises``/``suppress`` of it) takes an AssertionError."""
    if kind is None:
        return True
    if isinstance(kind, ast.Tuple):
        return any(catches_assertion(e, names) for e in kind.elts)
    return names.origin(kind).removeprefix("builtins.") in _CATCH_ALL


def expects_assertion(item: ast.expr, names: Names) -> bool:
    """``pytest.raises(AssertionError)``, ``self.assertRaises(Exception)`` and the like."""
    if not isinstance(item, ast.Call) or not item.args:
        return False
    name = names.origin(item.func).rsplit(".", 1)[-1]
    if name not in {"raises", "assertRaises", "assertRaisesRegex", "suppress"}:
        return False
    kinds = item.args if name == "suppress" else item.args[:1]
    return any(catches_assertion(k, names) for k in kinds)


def _block(stmts: Sequence[ast.stmt], why: str | None, names: Names) -> _Live:
    for stmt in stmts:
        yield from _stmt(stmt, why, names)
        if why is None and _ends(stmt, names):
            why = (
                f"unreachable: after the statement on line {stmt.lineno}, which never falls through"
            )


def _exprs(nodes: Sequence[ast.AST | None], why: str | None) -> _Live:
    for node in walk([n for n in nodes if n is not None]):
        yield node, why


def _stmt(stmt: ast.stmt, why: str | None, names: Names) -> _Live:
    yield stmt, why
    if isinstance(stmt, ast.If | ast.While):
        yield from _exprs([stmt.test], why)
        test = truth(stmt.test, names)
        never = f"unreachable: the condition on line {stmt.lineno} is always "
        yield from _block(stmt.body, why or (never + "false" if test is False else None), names)
        yield from _block(stmt.orelse, why or (never + "true" if test is True else None), names)
    elif isinstance(stmt, ast.For | ast.AsyncFor):
        yield from _exprs([stmt.target, stmt.iter], why)
        empty = f"unreachable: the loop on line {stmt.lineno} runs over an empty literal"
        yield from _block(stmt.body, why or (empty if is_empty(stmt.iter, names) else None), names)
        yield from _block(stmt.orelse, why, names)
    elif isinstance(stmt, ast.Try | ast.TryStar):
        yield from _try(stmt, why, names)
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        items = [i.context_expr for i in stmt.items]
        yield from _exprs([*items, *(i.optional_vars for i in stmt.items)], why)
        swallow = any(expects_assertion(i, names) for i in items)
        inside = f"swallowed: the with on line {stmt.lineno} takes AssertionError"
        yield from _block(stmt.body, why or (inside if swallow else None), names)
    elif isinstance(stmt, ast.Match):
        yield from _exprs([stmt.subject], why)
        for case in stmt.cases:
            yield from _exprs([case.pattern, case.guard], why)
            yield from _block(case.body, why, names)
    elif not isinstance(stmt, SCOPES):
        yield from _exprs(list(ast.iter_child_nodes(stmt)), why)


def _try(stmt: ast.Try | ast.TryStar, why: str | None, names: Names) -> _Live:
    swallowed = None
    if _jumps(stmt.finalbody):
        swallowed = f"swallowed: the finally of the try on line {stmt.lineno} jumps out"
    elif any(
        catches_assertion(h.type, names) and not _reports(h.body, names) for h in stmt.handlers
    ):
        swallowed = f"swallowed: an except of the try on line {stmt.lineno} takes AssertionError"
    yield from _block(stmt.body, why or swallowed, names)
    for handler in stmt.handlers:
        yield handler, why
        yield from _exprs([handler.type], why)
        yield from _block(handler.body, why, names)
    yield from _block(stmt.orelse, why or (swallowed if _jumps(stmt.finalbody) else None), names)
    yield from _block(stmt.finalbody, why, names)


def _reports(body: Sequence[ast.stmt], names: Names) -> bool:
    """A handler that re-raises, fails the test or asserts something that can fail."""
    for node in walk(body):
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, ast.Assert) and truth(node.test, names) is not True:
            return True
        if isinstance(node, ast.Call):
            name = names.origin(node.func).rsplit(".", 1)[-1]
            if name == "fail" or name.startswith("assert"):
                return True
    return False


def _jumps(stmts: Sequence[ast.stmt]) -> bool:
    """A ``return`` anywhere, or a ``break``/``continue`` not inside a loop of its own."""
    for stmt in stmts:
        if isinstance(stmt, ast.Return | ast.Break | ast.Continue):
            return True
        if isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
            if any(isinstance(n, ast.Return) for n in walk(stmt.body)):
                return True
            continue
        if isinstance(stmt, SCOPES):
            continue
        children = [c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.stmt)]
        children += [s for h in getattr(stmt, "handlers", []) for s in h.body]
        if _jumps(children):
            return True
    return False


def _ends(stmt: ast.stmt, names: Names) -> bool:
    """Control never reaches the statement after ``stmt`` in the same block."""
    if isinstance(stmt, ast.Return | ast.Raise | ast.Continue | ast.Break):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return names.origin(stmt.value.func).removeprefix("builtins.") in _STOPPERS
    if isinstance(stmt, ast.If):
        test = truth(stmt.test, names)
        body, orelse = _ends_all(stmt.body, names), _ends_all(stmt.orelse, names)
        return body if test is True else orelse if test is False else body and orelse
    if isinstance(stmt, ast.While):
        forever = truth(stmt.test, names) is True
        # a break anywhere in the body (even one of a nested loop) counts: fail closed
        return forever and not any(isinstance(n, ast.Break) for n in walk(stmt.body))
    if isinstance(stmt, ast.Try | ast.TryStar):
        if _ends_all(stmt.finalbody, names):
            return True
        ok = _ends_all(stmt.body, names) or _ends_all(stmt.orelse, names)
        return ok and all(_ends_all(h.body, names) for h in stmt.handlers)
    return False


def _ends_all(stmts: Sequence[ast.stmt], names: Names) -> bool:
    return any(_ends(s, names) for s in stmts)
