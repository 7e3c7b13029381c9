"""Mutants of one changed symbol (mutation stage v2), made from the patched file's source: pure AST
work, no I/O.

A mutant changes one site of the symbol with one classic operator:

==================  ================================================================
operator            change
==================  ================================================================
``compare``         ``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``, ``is``↔``is not``, ``in``↔``not in``
``arith``           ``+``↔``-``, ``*``↔``/``, ``//``→``*``, ``%``→``//``, ``**``→``*``,
                    ``<<``↔``>>``, ``&``↔``|``, ``^``→``&`` (in an expression or ``x op= y``)
``constant+1``      a number constant plus one (``bool`` is not a number here), or the numeric
                    string given to ``Decimal(...)``/``decimal.Decimal(...)``/``Fraction(...)``/
                    ``fractions.Fraction(...)`` with its value plus one (``Decimal("0")`` →
                    ``Decimal("1")``)
``constant-1``      the same, minus one (``Decimal("0.01")`` → ``Decimal("-0.99")``)
``boolop``          ``and``↔``or``
``not-dropped``     ``not x`` → ``x``
``negate``          the condition of an ``if``, ``while``, conditional expression or ``assert``
                    → ``not (cond)``
``return-none``     ``return e`` → ``return None`` (nothing for ``return None`` or ``return``)
``pass``            one simple statement → ``pass``
==================  ================================================================

**Where** (issue 21): sites only on the lines the patch added or changed (``changed_lines``, see
:func:`changed_lines`) inside the symbol's *own* statements, as the gate's walker
(:func:`client.analysis.patch.symbols.definitions`) draws them:

* a function or method: its decorators, its defaults and its body statements — not a nested def
  or class (decorators, defaults and body: it is its own symbol, ``f.<locals>.g``, ``C.D``);
* a class: its decorators, bases, keywords and the class-body statements that are not defs — not
  its methods;
* ``module:<mod>`` (qualname None): the top-level statements that are not definitions.

A docstring is no site. A site counts when its node's line range ``[lineno, end_lineno]`` (the
node whose bytes the mutant replaces) meets the changed lines; a change with no such site (a pure
deletion, a docstring or a comment) makes no mutant: "no mutable site on the lines the patch
changed".

**Which**: every applicable (operator, site) pair is tried, in source order; a mutant that does not
compile (the whole file, as Python compiles it) or whose tree equals the original's (an equivalent
rewrite) is skipped and counted; every other one is a candidate. When there are more candidates
than ``cap``, ``cap`` of them are drawn by ``random.Random(seed)`` (the caller's seed, else 64 bits
from :mod:`secrets`: the author of a patch cannot steer the sample) and kept in source order; the
seed is recorded in the result. Without a cap that applies the result is a pure function of
(source, qualname, changed lines) and its seed is None. Nothing is derived from the patch bytes.

A mutant replaces only the bytes of its site (a parenthesized ``ast.unparse`` of the changed
expression, a new string literal, or the changed statement): every other byte of the file is
unchanged.
"""

from __future__ import annotations

import ast
import copy
import difflib
import math
import random
import re
import secrets
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation
from fractions import Fraction

from client.analysis.patch.symbols import definitions

__all__ = ["NO_SITE", "Mutant", "MutantSet", "changed_lines", "make_mutants", "symbol_node"]

NO_SITE = "no mutable site on the lines the patch changed"

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
_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
# the constructors whose numeric string argument is a constant: dotted name -> number type
_NUMBER_CALLS: dict[str, type[Decimal] | type[Fraction]] = {
    "Decimal": Decimal, "decimal.Decimal": Decimal,
    "Fraction": Fraction, "fractions.Fraction": Fraction,
}  # fmt: skip
_EXPONENT = re.compile(r"[eE]\s*([+-]?[0-9_]+)")
_MAX_EXPONENT = 1000  # a literal past 1e±1000 is not worth exact arithmetic on


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
    """The mutants made for one symbol, and how they were counted and chosen."""

    mutants: tuple[Mutant, ...] = ()  # all candidates, or the capped sample, in source order
    sites: int = 0  # applicable (operator, site) pairs on the changed lines
    candidates: int = 0  # compiling, non-equivalent mutants before the cap
    skipped: int = 0  # did not compile, or equal to the original
    seed: int | None = None  # the sample's seed when the cap applied, else None
    problem: str = ""  # why nothing could be made ("" when something could)


@dataclass(frozen=True)
class _Site:
    operator: str
    node: ast.AST  # the node whose bytes are replaced
    new: str  # its replacement text


def changed_lines(base: bytes | None, patched: bytes) -> frozenset[int]:
    """1-based line numbers of ``patched`` added or changed relative to ``base`` (None: a new
    file, every line), by :class:`difflib.SequenceMatcher` over lines; a deletion adds none."""
    new = patched.splitlines()
    if base is None:
        return frozenset(range(1, len(new) + 1))
    matcher = difflib.SequenceMatcher(None, base.splitlines(), new, autojunk=False)
    return frozenset(
        line
        for tag, _i1, _i2, j1, j2 in matcher.get_opcodes()
        if tag in ("replace", "insert")
        for line in range(j1 + 1, j2 + 1)
    )


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


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _shifted(text: str, kind: type[Decimal] | type[Fraction], delta: int) -> str | None:
    """The numeric string ``text`` (as ``kind`` reads it) with ``delta`` added, as ``kind`` would
    read it back; None if it is not a finite number of that kind."""
    exponent = _EXPONENT.search(text)
    if exponent is not None and abs(int(exponent.group(1).replace("_", ""))) > _MAX_EXPONENT:
        return None
    try:
        if kind is Fraction:
            return str(Fraction(text) + delta)
        value = Decimal(text)
    except (ValueError, ZeroDivisionError, InvalidOperation):
        return None
    if not value.is_finite():
        return None
    digits = len(value.as_tuple().digits) + abs(int(value.as_tuple().exponent)) + 2
    return str(Context(prec=digits).add(value, Decimal(delta)))  # exact: enough digits


def _number_sites(node: ast.Call) -> Iterator[_Site]:
    kind = _NUMBER_CALLS.get(_dotted(node.func) or "")
    arg = node.args[0] if node.args else None
    if kind is None or not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
        return
    for sign, delta in (("+", 1), ("-", -1)):
        text = _shifted(arg.value, kind, delta)
        if text is not None:
            yield _Site(f"constant{sign}1", arg, f'"{text}"')


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
        and math.isfinite(node.value)
    ):
        yield _Site("constant+1", node, f"({node.value + 1!r})")
        yield _Site("constant-1", node, f"({node.value - 1!r})")
    elif isinstance(node, ast.IfExp):
        yield _Site("negate", node.test, f"(not {_paren(node.test)})")
    elif isinstance(node, ast.Call):
        yield from _number_sites(node)


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


def _walk(stmts: list[ast.stmt]) -> Iterator[_Site]:
    """Every site of ``stmts`` (statements, then the expressions inside them), nested defs and
    classes left out: they are symbols of their own."""
    for stmt in stmts:
        if isinstance(stmt, _DEFS) or _is_docstring(stmt, stmts):
            continue
        yield from _stmt_sites(stmt, stmts)
        for fieldname, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield from _walk(value)
            elif fieldname == "handlers":
                for h in value:
                    if h.type is not None:
                        yield from _exprs(h.type)
                    yield from _walk(h.body)
            elif fieldname == "cases":
                for case in value:
                    yield from _exprs(case.pattern)
                    if case.guard is not None:
                        yield from _exprs(case.guard)
                    yield from _walk(case.body)
            elif isinstance(value, list):
                for v in value:
                    if isinstance(v, ast.AST):
                        yield from _exprs(v)
            elif isinstance(value, ast.AST):
                yield from _exprs(value)


def _exprs(node: ast.AST) -> Iterator[_Site]:
    """The expression sites under ``node`` in walk order; an f-string is left alone."""
    if isinstance(node, ast.JoinedStr):
        return
    yield from _expr_sites(node)
    for child in ast.iter_child_nodes(node):
        yield from _exprs(child)


def _own_sites(node: _Def) -> Iterator[_Site]:
    """The sites of a definition's own statements (see the module docstring)."""
    for d in node.decorator_list:
        yield from _exprs(d)
    if isinstance(node, ast.ClassDef):
        for b in [*node.bases, *(k.value for k in node.keywords)]:
            yield from _exprs(b)
    else:
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
            yield from _exprs(default)
    yield from _walk(node.body)


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


def _span(node: ast.AST) -> tuple[int, int]:
    first: int = getattr(node, "lineno", 0)
    last: int | None = getattr(node, "end_lineno", None)
    return first, first if last is None else last


def _lines(node: ast.AST) -> tuple[int, int]:
    """``range`` arguments of the node's lines."""
    first, last = _span(node)
    return first, last + 1


def _on_lines(sites: Iterator[_Site], changed: frozenset[int]) -> list[_Site]:
    """The sites whose node meets ``changed``, in source order (walk order breaks ties)."""
    kept = [s for s in sites if any(line in changed for line in range(*_lines(s.node)))]
    kept.sort(key=lambda s: (_span(s.node)[0], getattr(s.node, "col_offset", 0)))
    return kept


@dataclass(frozen=True)
class _Original:
    """What a mutant is compared with: the patched file's tree, the symbol (None: the module's
    top-level code) and the dump of the symbol's definition (or of the whole tree)."""

    tree: ast.Module
    qualname: str | None
    dump: str

    def equals(self, mutated: ast.Module) -> bool:
        """Whether ``mutated`` is the patched file's tree. A mutant replaces the bytes of one
        node inside the symbol's definition with a complete expression or statement: every
        token before and after it is the file's own, so when the module has as many top-level
        statements as before, only the definition can differ and it alone is compared (a
        whole-module dump was ~0.6 ms a mutant, most of making one); otherwise, or when the
        definition is not found again, the whole trees are."""
        if self.qualname is not None and len(mutated.body) == len(self.tree.body):
            node = symbol_node(mutated, self.qualname)
            if node is not None:
                return ast.dump(node) == self.dump
        whole = self.dump if self.qualname is None else ast.dump(self.tree)
        return ast.dump(mutated) == whole


def _mutant(source: bytes, original: _Original, site: _Site) -> Mutant | None:
    """The mutant of ``site``, or None if it does not compile or equals the original."""
    new = _replace(source, site.node, site.new)
    try:
        mutated = ast.parse(new)
        compile(mutated, "<mutant>", "exec", dont_inherit=True)
        if original.equals(mutated):
            return None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return Mutant(site.operator, _span(site.node)[0], new)


def make_mutants(
    source: bytes,
    qualname: str | None,
    *,
    changed_lines: Collection[int],
    cap: int,
    seed: int | None = None,
) -> MutantSet:
    """The mutants of the symbol ``qualname`` of ``source`` (None: the module's top-level code) on
    ``changed_lines``: every candidate, or a sample of ``cap`` drawn by ``seed`` (None: from
    :mod:`secrets`) when there are more; ``cap <= 0`` is the stage off (no mutants, no problem)."""
    if cap <= 0:
        return MutantSet()
    try:
        tree = ast.parse(source)
        node = None if qualname is None else symbol_node(tree, qualname)
        original = _Original(tree, qualname, ast.dump(tree if node is None else node))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return MutantSet(problem=f"the patched file does not parse: {exc}")
    if qualname is not None and node is None:
        return MutantSet(problem="the symbol is not defined in the patched file")
    everything = _walk(tree.body) if node is None else _own_sites(node)
    sites = _on_lines(everything, frozenset(changed_lines))
    if not sites:
        return MutantSet(problem=NO_SITE)
    made = [m for m in (_mutant(source, original, s) for s in sites) if m is not None]
    skipped = len(sites) - len(made)
    if not made:
        return MutantSet(sites=len(sites), skipped=skipped, problem="no mutant compiled")
    used: int | None = None
    if len(made) > cap:
        used = secrets.randbits(64) if seed is None else seed
        picks = sorted(random.Random(used).sample(range(len(made)), cap))  # noqa: S311 - a recorded draw
        made = [made[i] for i in picks]
    return MutantSet(
        mutants=tuple(made),
        sites=len(sites),
        candidates=len(sites) - skipped,
        skipped=skipped,
        seed=used,
    )
