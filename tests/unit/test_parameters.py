"""No function of the client or the shared library takes more than eight parameters.

Data crosses the seams as values (``SignedSuite``, ``ExecuteRequest``, ``LaneTerms``,
``MutationPlan``, ``ReceiptFacts``), not as keyword soups. ``self`` and ``cls`` do not count;
``*args`` and ``**kwargs`` count one each. The generated code of ``patchgate/v1`` is not ours.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 8


def _count(args: ast.arguments) -> int:
    named = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if named and named[0].arg in ("self", "cls"):
        named = named[1:]
    return len(named) + (args.vararg is not None) + (args.kwarg is not None)


def too_many(source: str, where: str) -> list[str]:
    """``where:line name (count)`` of every function in ``source`` past the limit."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            n = _count(node.args)
            if n > LIMIT:
                name = getattr(node, "name", "<lambda>")
                found.append(f"{where}:{node.lineno} {name} ({n})")
    return found


def _sources() -> list[Path]:
    files = [*(ROOT / "client").rglob("*.py"), *(ROOT / "patchgate").rglob("*.py")]
    return sorted(f for f in files if not f.is_relative_to(ROOT / "patchgate" / "v1"))


def test_no_function_of_client_or_patchgate_takes_more_than_eight_parameters() -> None:
    found = []
    for path in _sources():
        found += too_many(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == []


def test_the_walk_sees_every_kind_of_parameter() -> None:
    """The check itself: nine parameters of any kind are found, eight are not, self is free."""
    nine = "def f(a, /, b, *c, d, e, f, g, h, **i): pass\n"
    eight = "class C:\n    def m(self, a, b, c, d, e, f, g, h): pass\n"
    assert too_many(nine, "x.py") == ["x.py:1 f (9)"]
    assert too_many(eight, "y.py") == []
    assert too_many("g = lambda a, b, c, d, e, f, g, h, i: 0\n", "z.py") == ["z.py:1 <lambda> (9)"]
    assert any(p.name == "executor_client.py" for p in _sources())
    assert not any("/v1/" in p.as_posix() for p in _sources())
