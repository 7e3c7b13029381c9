"""Assertion classes of pinned properties, from the AST of their test functions
(docs/gate-analysis.md).

A property's test function is located from the pytest node id in its command
(``path.py::test_fn`` or ``path.py::Class::test_method``, parametrization ids dropped) and judged
with :mod:`ast` only — never with regexes on source. The predicate hash is of the function's
source, and for a parametrized test of its parameter list too (:mod:`.parameters`). Each
assertion is one of:

* ``tautology``  ``assert True``, a comparison of constants, ``x == x``, ``x == copy(x)``;
* ``fixture_eq`` an equality (``==``/``!=``/``is``) one side of which is the content of a fixture
  file (``load_fixture(...)``, ``json.load(open("fixtures/..."))``, ``(FIXTURES / n).read_text()``,
  a name bound from one of those, optionally wrapped in a conversion like ``Decimal(...)``) or a
  snapshot (``snapshot``, ``assert_match``);
* ``property``   any other visible check (``assert``, ``pytest.raises``, ``self.assert*``).

The function's class, first rule that holds:

1. ``freeze_ref`` a skip/xfail marker (on the function, its class or the module) or an
   unconditional ``pytest.skip``/``xfail`` call cites a flake id;
2. ``opaque``     it is skipped/xfailed without a flake id (no assertion is evidence);
3. ``fixture_eq`` any assertion is fixture equality, even beside real ones (fail closed: the pass
   rests partly on stored bytes; split the test so the real predicate stands alone);
4. ``property``   any real assertion (tautologies beside it add nothing and take nothing away);
5. ``freeze_ref`` a conditional skip/xfail call cites a flake id and nothing real is asserted;
6. ``tautology``  only tautological assertions;
7. ``opaque``     no visible assertion (assertions in nested functions are not counted).
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from client.analysis.classify.assertion_rules import Finding, assertion_findings
from client.analysis.classify.astwalk import dotted, walk
from client.analysis.classify.fixture_flow import FixtureFlow, module_flow
from client.analysis.classify.parameters import node_text, parameter_nodes
from client.analysis.classify.production import production_in
from client.analysis.classify.testscope import Scope, default_production, module_scope
from patchgate.digest import validate_path
from patchgate.errors import UnsafePathError
from patchgate.pins import node_id_of

__all__ = [
    "ASSERTION_CLASSES",
    "AssertionReport",
    "classify_properties",
    "classify_property",
    "classify_source",
    "file_citations",
    "flake_ids_in",
]

ASSERTION_CLASSES = ("property", "fixture_eq", "freeze_ref", "tautology", "opaque")

# Applied to string *values* found by the AST (marker reasons), never to source text.
_FLAKE_ID = re.compile(r"\b[A-Z][A-Z0-9]*-[0-9]+\b")
_SKIP_NAMES = frozenset({"skip", "skipif", "xfail"})
_Func = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class AssertionReport:
    """The assertion class of one property's test function, and why."""

    property_id: str
    node_id: str
    test_file: str
    function: str
    assertion_class: str
    predicate_hash: str
    freeze_ids: tuple[str, ...]
    detail: str
    #: The skip/xfail texts (marker or call reasons) that cite a flake id, in source order.
    citations: tuple[str, ...] = ()


def flake_ids_in(values: Sequence[str]) -> tuple[str, ...]:
    """Flake ids (``FLK-1044``-shaped tokens) cited in string values, in order, without repeats."""
    found: dict[str, None] = {}
    for value in values:
        for match in _FLAKE_ID.findall(value):
            found.setdefault(match, None)
    return tuple(found)


def classify_property(repo_dir: Path, property_id: str, command: Sequence[str]) -> AssertionReport:
    """Classify the test function named by ``command`` in the checkout ``repo_dir``.

    A missing node id, file or function, or a file that does not parse, is ``opaque`` with a
    detail saying so — never an exception.
    """
    return classify_properties(repo_dir, [(property_id, command)])[property_id]


def classify_properties(
    repo_dir: Path, properties: Iterable[tuple[str, Sequence[str]]]
) -> dict[str, AssertionReport]:
    """:func:`classify_property` for each ``(property id, command)``, reading each test file once.

    A suite keeps most properties in a few files: each file is parsed, and its module-level names
    and fixture flow are worked out, once for all of its properties, not once per property.
    """
    modules = _Modules(production_in(repo_dir))
    return {pid: _classify_in(repo_dir, pid, command, modules) for pid, command in properties}


def _classify_in(
    repo_dir: Path, property_id: str, command: Sequence[str], modules: _Modules
) -> AssertionReport:
    node_id = node_id_of(command)
    if node_id is None:
        return _opaque(property_id, "", "", "", "its command names no pytest node id (file::test)")
    test_file, *names = node_id.split("::")
    function = "::".join(names)
    names[-1] = names[-1].split("[", 1)[0]
    try:
        validate_path(test_file)
    except UnsafePathError:
        return _opaque(property_id, node_id, test_file, function, "the node id's path is unsafe")
    path = repo_dir / test_file
    if not path.resolve().is_relative_to(repo_dir.resolve()):
        return _opaque(property_id, node_id, test_file, function, "the test file leaves the repo")
    try:
        raw = path.read_bytes()
    except OSError:
        return _opaque(property_id, node_id, test_file, function, f"{test_file} does not exist")
    return classify_source(
        raw, property_id=property_id, node_id=node_id, names=names, modules=modules
    )


def classify_source(
    raw: bytes,
    *,
    property_id: str,
    node_id: str,
    names: Sequence[str],
    production: Callable[[str], bool] = default_production,
    modules: _Modules | None = None,
) -> AssertionReport:
    """Classify the function ``names`` (classes then the function) in the test source ``raw``.

    ``production`` says whether a dotted module name is production code (the code under test);
    without a checkout, any absolute import that is not the standard library or a test module.
    ``modules`` (from :func:`classify_properties`) shares the parse between properties and then
    decides ``production`` itself.
    """
    test_file = node_id.split("::", 1)[0]
    function = "::".join(names)
    modules = modules if modules is not None else _Modules(production)
    parsed = modules.parse(raw)
    if parsed is None:
        return _opaque(property_id, node_id, test_file, function, f"{test_file} does not parse")
    lines, tree = parsed
    found = _locate(tree, names)
    if found is None:
        why = f"{test_file} has no test function {function}"
        return _opaque(property_id, node_id, test_file, function, why)
    func, scopes = found
    try:
        assertion_class, freeze_ids, detail = _judge(tree, func, scopes, modules)
        texts = _citation_texts(func, scopes)
    except RecursionError:  # fail closed: no credit, and the predicate hash still pins the test
        assertion_class, freeze_ids, detail = "opaque", (), "it is nested too deeply to judge."
        texts = ()
    return AssertionReport(
        property_id=property_id,
        node_id=node_id,
        test_file=test_file,
        function=function,
        assertion_class=assertion_class,
        predicate_hash=_predicate_hash(lines, tree, func, scopes),
        freeze_ids=freeze_ids,
        citations=texts,
        detail=detail,
    )


class _Modules:
    """Parsed test sources and their module-level analysis, shared by the properties of a suite.

    Keyed by the exact bytes of a file, so two trees (base and patched) never share an entry
    unless the file is byte-identical; the analysis only reads the trees it keeps alive here.
    """

    def __init__(self, production: Callable[[str], bool]) -> None:
        self.production = production
        self._parsed: dict[bytes, tuple[_SourceLines, ast.Module] | None] = {}
        self._flows: dict[int, FixtureFlow] = {}
        self._scopes: dict[tuple[int, ...], Scope] = {}

    def parse(self, raw: bytes) -> tuple[_SourceLines, ast.Module] | None:
        """The source's lines and its tree, or None when it does not decode or parse."""
        if raw not in self._parsed:
            try:
                source = raw.decode("utf-8")
                self._parsed[raw] = (_SourceLines.of(source), ast.parse(source))
            except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
                self._parsed[raw] = None
        return self._parsed[raw]

    def flow(self, tree: ast.Module) -> FixtureFlow:
        """The module's fixture flow (:func:`module_flow`), once per tree."""
        if id(tree) not in self._flows:
            self._flows[id(tree)] = module_flow(tree)
        return self._flows[id(tree)]

    def scope(self, tree: ast.Module, classes: Sequence[ast.ClassDef]) -> Scope:
        """The names seen from inside ``classes`` of ``tree`` (:func:`module_scope`), once each."""
        key = (id(tree), *(id(c) for c in classes))
        if key not in self._scopes:
            self._scopes[key] = module_scope(tree, classes, self.production)
        return self._scopes[key]


def _opaque(
    property_id: str, node_id: str, test_file: str, function: str, why: str
) -> AssertionReport:
    return AssertionReport(property_id, node_id, test_file, function, "opaque", "", (), why + ".")


def _locate(tree: ast.Module, names: Sequence[str]) -> tuple[_Func, list[ast.AST]] | None:
    """The function at ``names`` and its scopes (module first); the last definition wins."""
    scopes: list[ast.AST] = [tree]
    body: list[ast.stmt] = tree.body
    for index, name in enumerate(names):
        last = index == len(names) - 1
        kinds: tuple[type[ast.stmt], ...] = (
            (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
        )
        match = [s for s in body if isinstance(s, kinds) and getattr(s, "name", None) == name]
        if not match:
            return None
        node = match[-1]
        if last:
            return (node, scopes) if isinstance(node, _Func) else None
        scopes.append(node)
        body = node.body  # type: ignore[attr-defined]
    return None


def _predicate_hash(
    lines: _SourceLines, tree: ast.Module, func: _Func, scopes: Sequence[ast.AST]
) -> str:
    """sha256 of the test function's source, decorators included; for a test parametrized from
    outside its own text, of that source and then, after a separator line, the source of each
    node that makes its parameter list (:mod:`client.analysis.classify.parameters`)."""
    text = _segment(lines, func)
    extra = [node_text(lines.with_ends, n) for n in parameter_nodes(tree, func, scopes)]
    if extra:
        text = "\n".join([text, "# patchgate: the parameter list", *extra])
    return hashlib.sha256(text.encode()).hexdigest()


def _segment(lines: _SourceLines, func: _Func) -> str:
    """The exact source text of ``func`` from its first decorator to its end: what
    ``ast.get_source_segment`` gives for that span, from lines split once per file (splitting the
    whole file again for each of its tests made a suite's classification grow as N squared)."""
    start = func.decorator_list[0] if func.decorator_list else func
    line = lines.plain[start.lineno - 1]
    col = len(line) - len(line.lstrip()) if func.decorator_list else func.col_offset
    if func.end_lineno is None or func.end_col_offset is None:
        return ""
    first, last = start.lineno - 1, func.end_lineno - 1
    ends = lines.with_ends
    if first == last:
        return ends[first].encode()[col : func.end_col_offset].decode()
    head = ends[first].encode()[col:].decode()
    tail = ends[last].encode()[: func.end_col_offset].decode()
    return "".join([head, *ends[first + 1 : last], tail])


@dataclass(frozen=True)
class _SourceLines:
    """A source split once: ``plain`` as ``str.splitlines`` splits it, ``with_ends`` as ``ast``
    numbers lines (only ``\r\n``, ``\r`` and ``\n`` end a line; ends kept)."""

    plain: list[str]
    with_ends: list[str]

    @classmethod
    def of(cls, source: str) -> _SourceLines:
        with_ends = _LINE_END.findall(source)
        rest = source[sum(map(len, with_ends)) :]
        return cls(source.splitlines(), [*with_ends, rest] if rest else with_ends)


_LINE_END = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)")


# -- judging ------------------------------------------------------------------------------------


def _judge(
    tree: ast.Module, func: _Func, scopes: list[ast.AST], modules: _Modules
) -> tuple[str, tuple[str, ...], str]:
    """(class, freeze ids, one-sentence detail) of one test function."""
    markers = _markers(func, scopes)
    calls = list(_skip_calls(func))
    freeze_ids = flake_ids_in([s for _, strings in (*markers, *calls) for s in strings])
    cited = ", ".join(freeze_ids)
    if any(flake_ids_in(strings) for _, strings in markers):
        return "freeze_ref", freeze_ids, f"a skip/xfail marker cites {cited}; nothing else counts."
    if any(top and flake_ids_in(strings) for top, strings in calls):
        return "freeze_ref", freeze_ids, f"an unconditional skip/xfail call cites {cited}."
    if any(kind != "skipif" for kind, _ in markers) or any(top for top, _ in calls):
        why = "it is skipped or xfailed without a flake id, so no assertion is evidence."
        return "opaque", freeze_ids, why
    classes = [s for s in scopes if isinstance(s, ast.ClassDef)]
    scope = modules.scope(tree, classes)
    decorators = [d for c in classes for d in c.decorator_list]
    findings = assertion_findings(func, scope, modules.flow(tree), decorators)
    by = {kind: [f for f in findings if f.verdict == kind] for kind in ASSERTION_CLASSES}
    real, fixture, tautology, opaque = (
        by[k] for k in ("property", "fixture_eq", "tautology", "opaque")
    )
    if fixture:
        beside = f" (beside {len(real)} real assertion(s))" if real else ""
        return (
            "fixture_eq",
            freeze_ids,
            f"an equality compares with fixture content{beside}{_at(fixture)}.",
        )
    if real:
        vacuous = len(tautology) + len(opaque)
        extra = f"; {vacuous} vacuous or opaque one(s) add nothing" if vacuous else ""
        return "property", freeze_ids, f"{len(real)} real assertion(s){extra}."
    if freeze_ids:
        why = f"a conditional skip/xfail cites {cited} and nothing real is asserted."
        return "freeze_ref", freeze_ids, why
    if tautology:
        return "tautology", freeze_ids, f"no assertion can fail: {_reason(tautology)}."
    if opaque:
        return "opaque", freeze_ids, f"no visible predicate: {_reason(opaque)}."
    why = "it has no visible assertion (assert, pytest.raises or self.assert*)."
    return "opaque", freeze_ids, why


def _at(findings: Sequence[Finding]) -> str:
    return f" (line {findings[0].line})" if findings[0].line else ""


def _reason(findings: Sequence[Finding]) -> str:
    """The first finding's reason and line, and how many more there are."""
    more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
    return f"{findings[0].why}{_at(findings)}{more}"


def _strings(node: ast.AST) -> list[str]:
    return [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _citation_texts(func: _Func, scopes: list[ast.AST]) -> tuple[str, ...]:
    """Every skip/xfail text (of a marker or a call) of ``func`` that cites a flake id."""
    texts = [s for _, strings in (*_markers(func, scopes), *_skip_calls(func)) for s in strings]
    return tuple(dict.fromkeys(t for t in texts if flake_ids_in([t])))


def file_citations(raw: bytes, test_file: str) -> dict[str, tuple[str, ...]]:
    """Node id -> the citing texts of each test function of a test file (module-level
    ``test_*`` functions and ``test_*`` methods of ``Test*`` classes) that cites a flake id. A
    file that does not parse cites nothing (the oracle and harness rules judge it)."""
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, tuple[str, ...]] = {}

    def visit(body: list[ast.stmt], scopes: list[ast.AST], prefix: str) -> None:
        for node in body:
            if isinstance(node, _Func) and node.name.startswith("test"):
                if texts := _citation_texts(node, scopes):
                    found[f"{prefix}::{node.name}"] = texts
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                visit(node.body, [*scopes, node], f"{prefix}::{node.name}")

    visit(tree.body, [tree], test_file)
    return found


def _markers(func: _Func, scopes: list[ast.AST]) -> list[tuple[str, list[str]]]:
    """skip/skipif/xfail markers of the function, its classes and module (``pytestmark``)."""
    exprs: list[ast.expr] = list(func.decorator_list)
    for scope in scopes:
        if isinstance(scope, ast.ClassDef):
            exprs.extend(scope.decorator_list)
        for stmt in getattr(scope, "body", []):
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets
            ):
                value = stmt.value
                exprs.extend(value.elts if isinstance(value, ast.List | ast.Tuple) else [value])
    found: list[tuple[str, list[str]]] = []
    for expr in exprs:
        kind = dotted(expr).rsplit(".", 1)[-1]
        if kind in _SKIP_NAMES:
            found.append((kind, _strings(expr)))
    return found


def _skip_calls(func: _Func) -> Iterator[tuple[bool, list[str]]]:
    """(unconditional, strings) of each skip/xfail call (unconditional: a top-level statement)."""
    top = {id(s.value) for s in func.body if isinstance(s, ast.Expr)}
    for node in walk(func.body):
        if isinstance(node, ast.Call):
            name = dotted(node.func)
            if name in {"pytest.skip", "pytest.xfail", "skip", "xfail"} or name.endswith(
                ".skipTest"
            ):
                yield id(node) in top, _strings(node)
