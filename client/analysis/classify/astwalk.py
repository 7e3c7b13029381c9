"""Two small readers of Python syntax trees shared by the assertion classifier's modules."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

__all__ = ["SCOPES", "dotted", "walk"]

#: Nodes that open a scope of their own: their bodies are not part of the enclosing function.
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def walk(nodes: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every node under ``nodes``, not descending into nested defs, classes or lambdas."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, SCOPES):
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
