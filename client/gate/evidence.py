"""Evidence a person reads, gathered while the workspace exists: the log of each run's sandbox,
written to ``runs/<property>/<run>.log`` beside the ledgers, and where the changed symbols and the
properties' tests are defined in the patched tree.

Read for people only (annotations on a pull request, the report): never for a verdict. Each check
replaces the ``runs/`` directory of its ledger directory as a whole, so no log of an earlier check
is left beside this one's ledgers; a sandbox that ran several properties (batched runs) has its log
written once under each of them. A symbol
``pkg.mod.Class.meth`` is found by parsing the changed file of module ``pkg.mod`` and walking its
definitions (a decorated definition starts at its first decorator); ``module:pkg.mod`` is line 1
of its file. A property is found from the first node id (``path::name`` or ``path::Class::name``)
of its command. Anything unparsable or not found is simply left out.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from client.analysis.roles import layout_of
from client.gate.workspace import Workspace
from patchgate.evidence import Location, SandboxLog
from patchgate.pins import PinSet, PropertyPin
from patchgate.symbols import MODULE_PREFIX, Symbol

__all__ = ["RUNS_DIR", "locate_properties", "locate_symbols", "log_path", "write_run_logs"]

RUNS_DIR = "runs"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _parse(path: Path, root: Path) -> ast.Module | None:
    try:
        if path.is_symlink() or not path.is_file():
            return None
        if not path.resolve().is_relative_to(root.resolve()):
            return None  # a node id naming a file outside the tree
        return ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def _definitions(body: Iterable[ast.stmt], prefix: str = "") -> Iterator[tuple[str, _Def]]:
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + stmt.name
            yield name, stmt
            inner = name + ("." if isinstance(stmt, ast.ClassDef) else ".<locals>.")
            yield from _definitions(stmt.body, inner)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(stmt, field, None)
                if isinstance(block, list):
                    yield from _definitions((s for s in block if isinstance(s, ast.stmt)), prefix)


def _line(node: _Def) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def locate_symbols(ws: Workspace, pins: PinSet, symbols: Sequence[str]) -> dict[str, Location]:
    """Changed symbol -> its definition in the patched tree (a deleted one is left out)."""
    layout = layout_of(ws.base_dir, pins)
    wanted = set(symbols)
    out: dict[str, Location] = {}
    for change in ws.changes():
        if change.after is None or not change.path.endswith(".py"):
            continue
        module = layout.module(change.path)
        if f"{MODULE_PREFIX}{module}" in wanted:
            out[f"{MODULE_PREFIX}{module}"] = Location(change.path, 1)
        tree = _parse(ws.patched_dir / change.path, ws.patched_dir)
        if tree is None:
            continue
        for qualname, node in _definitions(tree.body):
            name = Symbol.make(module, qualname)
            if name in wanted and name not in out:
                out[name] = Location(change.path, _line(node))
    return out


def _node_ids(prop: PropertyPin) -> Iterator[tuple[str, list[str]]]:
    for word in prop.command:
        if "::" in word and not word.startswith("-"):
            path, *names = word.split("::")
            yield path.removeprefix("./"), [n.split("[", 1)[0] for n in names]


def locate_properties(root: Path, properties: Sequence[PropertyPin]) -> dict[str, Location]:
    """Property id -> the definition of the first test its command names, in the tree ``root``."""
    out: dict[str, Location] = {}
    for prop in properties:
        for path, names in _node_ids(prop):
            tree = _parse(root / path, root)
            if tree is None:
                continue
            found = {q: n for q, n in _definitions(tree.body) if "<locals>" not in q}
            node = found.get(".".join(names))
            out[prop.id] = Location(path, _line(node) if node is not None else 1)
            break
    return out


def log_path(out: Path, property_id: str, run_index: int) -> Path:
    """``out/runs/<property>/<run>.log``; a property id is made a safe single file name."""
    name = _UNSAFE.sub("_", property_id)
    if name in ("", ".", ".."):
        name = name.replace(".", "_") or "_"
    return out / RUNS_DIR / name / f"{run_index}.log"


def write_run_logs(out: Path, logs: Sequence[SandboxLog]) -> list[Path]:
    """Replace ``out/runs/`` with one file per property and run of ``logs``; the paths written."""
    runs = out / RUNS_DIR
    if runs.is_symlink() or runs.is_file():
        runs.unlink()
    elif runs.is_dir():
        shutil.rmtree(runs)
    written: list[Path] = []
    for log in logs:
        for pid in log.properties:
            path = log_path(out, pid, log.run_index)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(log.text(), encoding="utf-8")
            written.append(path)
    return written
