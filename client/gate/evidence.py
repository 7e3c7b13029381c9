"""Evidence a person reads, gathered while the workspace exists: the log of each run's sandbox,
written to ``runs/<property>/<run>.log`` beside the ledgers, and where the changed symbols and the
properties' tests are defined in the patched tree.

Read for people only (annotations on a pull request, the report): never for a verdict. Each check
replaces the ``runs/`` directory of its ledger directory as a whole, so no log of an earlier check
is left beside this one's ledgers; a sandbox that ran several properties (batched runs) has its log
written once under each of them. A changed symbol's place is the site
:func:`client.gate.runs.targets.locate` found (a decorated definition starts at its first decorator;
``module:pkg.mod`` is line 1 of its file). A property is found from the first node id
(``path::name`` or ``path::Class::name``) of its command. Anything unparsable or not found is
simply left out.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from client.analysis.patch.symbols import definitions
from client.gate.runs.targets import SymbolSite
from patchgate.batching import positionals
from patchgate.evidence import Location, SandboxLog
from patchgate.pins import PropertyPin

__all__ = ["RUNS_DIR", "locate_properties", "log_path", "symbol_locations", "write_run_logs"]

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


def _line(node: _Def) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def symbol_locations(sites: Mapping[str, SymbolSite]) -> dict[str, Location]:
    """Changed symbol -> where its definition starts, from the sites the gate already located."""
    return {name: Location(site.path, site.first) for name, site in sites.items()}


def _node_ids(prop: PropertyPin) -> Iterator[tuple[str, list[str]]]:
    for word in positionals(prop.command):
        if "::" in word:
            path, *names = word.split("::")
            yield path.removeprefix("./"), [n.split("[", 1)[0] for n in names]


def locate_properties(root: Path, properties: Sequence[PropertyPin]) -> dict[str, Location]:
    """Property id -> the definition of the first test its command names, in the tree ``root``
    (each test file is parsed once, however many properties it holds)."""
    files: dict[str, dict[str, _Def] | None] = {}
    out: dict[str, Location] = {}
    for prop in properties:
        for path, names in _node_ids(prop):
            if path not in files:
                tree = _parse(root / path, root)
                files[path] = None if tree is None else _tests_of(tree)
            found = files[path]
            if found is None:
                continue
            node = found.get(".".join(names))
            out[prop.id] = Location(path, _line(node) if node is not None else 1)
            break
    return out


def _tests_of(tree: ast.Module) -> dict[str, _Def]:
    """Qualname -> definition, for the definitions a node id can name (none inside a function);
    of a name defined twice, the last one, as Python binds it and the classifier judges it."""
    return {q: node for q, node in definitions(tree.body) if "<locals>" not in q}


def log_path(out: Path, property_id: str, run_index: int) -> Path:
    """``out/runs/<property>/<run>.log``; a property id is made a safe single file name, one to
    one: every byte outside ``A-Z a-z 0-9 . _ -`` is ``%XX`` (``%`` itself included), and a name
    of only dots is escaped whole, so two ids never share a directory (``a:b`` is ``a%3Ab``,
    ``a_b`` stays ``a_b``)."""
    name = _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), property_id)
    if name in ("", ".", ".."):
        name = "".join(f"%{ord(c):02X}" for c in name) or "%"
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
