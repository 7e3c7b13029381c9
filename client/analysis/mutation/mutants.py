"""Mutants of one changed symbol, made from the patched file's source: pure AST work, no I/O.

A mutant changes one site of the symbol with one classic operator:

==================  ================================================================
operator            change
==================  ================================================================
``compare``         ``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``, ``is``↔``is not``, ``in``↔``not in``
``arith``           ``+``↔``-``, ``*``↔``/``, ``//``→``*``, ``%``→``//``, ``**``→``*``,
                    ``<<``↔``>>``, ``&``↔``|``, ``^``→``&`` (in an expression or ``x op= y``)
``constant+1``      a number constant plus one (``bool`` is not a number here)
``constant-1``      a number constant minus one
``boolop``          ``and``↔``or``
``not-dropped``     ``not x`` → ``x``
``negate``          the condition of an ``if``, ``while``, conditional expression or ``assert``
                    → ``not (cond)``
``return-none``     ``return e`` → ``return None``
``pass``            one simple statement → ``pass``
==================  ================================================================

Every applicable (operator, site) pair is listed in source order; the list is shuffled by
``random.Random("<patch sha256>:<symbol>")`` and taken in that order until ``k`` mutants compile,
so one patch always gets the same mutants. A mutant replaces only the bytes of its site (a
parenthesized ``ast.unparse`` of the changed expression, or the changed statement), which lie
inside the symbol's lines: every other byte of the file is unchanged. A mutant that does not
compile (the whole file, as Python compiles it) is skipped and counted; so is one whose tree equals
the original's (an equivalent rewrite).

The sites of a function or class are in its whole definition (decorators, defaults and nested
definitions included, its docstring excluded); the sites of ``module:<mod>`` are in the module's
top-level statements that are not definitions.
"""

from __future__ import annotations

import ast
import copy
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from client.analysis.patch.symbols import definitions

__all__ = ["Mutant", "MutantSet", "make_mutants", "symbol_node"]

_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip
_ARITH: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
    ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd, ast.MatMult: ast.Mult,
}  # fmt: skip
_SIMPLE = (
    ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Delete,
    ast.Assert, ast.Import, ast.ImportFrom,
)  # fmt: skip
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Mutant:
    """One mutant: the operator, the line of its site in the patched file, the whole new file."""

    operator: str
    line: int
    source: bytes

    @property
    def label(self) -> str:
        """``<operator> at line N``, as the receipt lists a survivor."""
        return f"{self.operator} at line {self.line}"


@dataclass(frozen=True)
class MutantSet:
    """The mutants made for one symbol, and how many candidates were skipped."""

    mutants: tuple[Mutant, ...] = ()
    sites: int = 0  # applicable (operator, site) pairs
    skipped: int = 0  # did not compile, or equal to the original
    problem: str = ""  # why nothing could be made ("" when something could)
    extra: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Site:
    operator: str
    node: ast.AST  # the node whose bytes are replaced
    new: str  # its replacement text


def _is_docstring(stmt: ast.stmt, body: list[ast.stmt]) -> bool:
    return (
        bool(body)
        and body[0] is stmt
        and isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _paren(node: ast.expr) -> str:
    return f"({ast.unparse(node)})"


def _with(node: ast.AST, **changes: object) -> ast.AST:
    new = copy.deepcopy(node)
    for k, v in changes.items():
        setattr(new, k, v)
    return new


def _expr_sites(node: ast.AST) -> Iterator[_Site]:
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            swap = _COMPARE.get(type(op))
            if swap is not None:
                ops = [*node.ops[:i], swap(), *node.ops[i + 1 :]]
                yield _Site("compare", node, _paren(_with(node, ops=ops)))  # type: ignore[arg-type]
    elif isinstance(node, ast.BinOp):
        swap_op = _ARITH.get(type(node.op))
        if swap_op is not None:
            yield _Site("arith", node, _paren(_with(node, op=swap_op())))  # type: ignore[arg-type]
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield _Site("boolop", node, _paren(_with(node, op=other)))  # type: ignore[arg-type]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield _Site("not-dropped", node, _paren(node.operand))
    elif (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        for sign, delta in (("+", 1), ("-", 1)):
            value = node.value + delta if sign == "+" else node.value - delta
            yield _Site(f"constant{sign}1", node, f"({value!r})")
    elif isinstance(node, ast.IfExp):
        yield _Site("negate", node.test, f"(not {_paren(node.test)})")


def _stmt_sites(stmt: ast.stmt, body: list[ast.stmt]) -> Iterator[_Site]:
    if isinstance(stmt, (ast.If, ast.While, ast.Assert)):
        yield _Site("negate", stmt.test, f"(not {_paren(stmt.test)})")
    if isinstance(stmt, ast.AugAssign):
        swap_op = _ARITH.get(type(stmt.op))
        if swap_op is not None:
            yield _Site("arith", stmt, ast.unparse(_with(stmt, op=swap_op())))
    value = stmt.value if isinstance(stmt, ast.Return) else None
    if value is not None and not (isinstance(value, ast.Constant) and value.value is None):
        yield _Site("return-none", stmt, "return None")
    if isinstance(stmt, _SIMPLE) and not _is_docstring(stmt, body):
        yield _Site("pass", stmt, "pass")


def _walk(stmts: list[ast.stmt], *, into_defs: bool) -> Iterator[_Site]:
    """Every site of ``stmts`` in source order (statements, then the expressions inside them)."""
    for stmt in stmts:
        if isinstance(stmt, _DEFS):
            if into_defs:
                yield from _def_sites(stmt)
            continue
        yield from _stmt_sites(stmt, stmts)
        if _is_docstring(stmt, stmts):
            continue
        for fieldname, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield from _walk(value, into_defs=into_defs)
            elif fieldname == "handlers":
                for h in value:
                    if h.type is not None:
                        yield from _exprs(h.type)
                    yield from _walk(h.body, into_defs=into_defs)
            elif isinstance(value, list):
                for v in value:
                    if isinstance(v, ast.AST):
                        yield from _exprs(v)
            elif isinstance(value, ast.AST):
                yield from _exprs(value)


def _exprs(node: ast.AST) -> Iterator[_Site]:
    """The expression sites under ``node`` in source order; an f-string is left alone."""
    if isinstance(node, ast.JoinedStr):
        return
    yield from _expr_sites(node)
    for child in ast.iter_child_nodes(node):
        yield from _exprs(child)


def _def_sites(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Iterator[_Site]:
    for d in node.decorator_list:
        yield from _exprs(d)
    if isinstance(node, ast.ClassDef):
        for b in [*node.bases, *(k.value for k in node.keywords)]:
            yield from _exprs(b)
    else:
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            yield from _exprs(default)
    yield from _walk(node.body, into_defs=True)


def symbol_node(
    tree: ast.Module, qualname: str
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    """The definition ``qualname`` (``Class.meth``, ``f.<locals>.g``) of ``tree``, or None: the
    first one the gate's walker names so (the definition its changed symbol was named from)."""
    return next((node for name, node in definitions(tree.body) if name == qualname), None)


def _replace(source: bytes, node: ast.AST, text: str) -> bytes:
    """``source`` with the bytes of ``node`` (UTF-8 offsets, as ast gives them) set to ``text``."""
    lines = source.splitlines(keepends=True)
    pos: tuple[int, int, int, int] = (
        getattr(node, "lineno", 1), getattr(node, "col_offset", 0),
        getattr(node, "end_lineno", 1), getattr(node, "end_col_offset", 0),
    )  # fmt: skip
    start = sum(len(x) for x in lines[: pos[0] - 1]) + pos[1]
    end = sum(len(x) for x in lines[: pos[2] - 1]) + pos[3]
    return source[:start] + text.encode("utf-8") + source[end:]


def _sites_of(tree: ast.Module, qualname: str | None) -> list[_Site] | None:
    if qualname is None:
        return list(_walk(tree.body, into_defs=False))
    node = symbol_node(tree, qualname)
    if node is None:
        return None
    return list(_def_sites(node))


def make_mutants(source: bytes, qualname: str | None, *, k: int, seed: str) -> MutantSet:
    """Up to ``k`` compiling mutants of the symbol ``qualname`` of ``source`` (None: the module's
    top-level code), chosen by ``seed`` (``"<patch sha256>:<symbol>"``)."""
    try:
        tree = ast.parse(source)
        original = ast.dump(tree)
    except (SyntaxError, ValueError) as exc:
        return MutantSet(problem=f"the patched file does not parse: {exc}")
    sites = _sites_of(tree, qualname)
    if sites is None:
        return MutantSet(problem="the symbol is not defined in the patched file")
    order = list(range(len(sites)))
    random.Random(seed).shuffle(order)  # noqa: S311 - a reproducible choice, not a secret
    made: list[Mutant] = []
    skipped = 0
    for i in order:
        if len(made) >= k:
            break
        site = sites[i]
        new = _replace(source, site.node, site.new)
        try:
            mutated = ast.parse(new)
            compile(mutated, "<mutant>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            skipped += 1
            continue
        if ast.dump(mutated) == original:
            skipped += 1
            continue
        made.append(Mutant(site.operator, site.node.lineno, new))  # type: ignore[attr-defined]
    problem = "" if made else ("no applicable site" if not sites else "no mutant compiled")
    return MutantSet(mutants=tuple(made), sites=len(sites), skipped=skipped, problem=problem)
