"""What a patch touched, judged: every changed path of the trees with its roles and symbols.

Input: the :class:`~client.analysis.patch.treediff.PathChange` list (base tree against the tree
``git apply`` produced) and the base's :class:`~client.analysis.patch.roles.Layout`. Output: one
:class:`Touched` in which every changed path is accounted for, as a changed symbol's file
(production source), an oracle move (harness or oracle, ``R7``), a pin mutation (pins or the
gate's configuration, ``R8``), compiled code (``reject_provenance``) or an excluded path (data,
configured exclusions). ``excluded_paths`` lists every changed path that is not production source,
so the receipt names every path a patch changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from client.analysis.patch.roles import Layout, pyproject_roles
from client.analysis.patch.symbols import compare_module, defined_names, symbol_table
from client.analysis.patch.treediff import PathChange, scan_tree
from patchgate.symbols import Symbol

__all__ = ["ReadInputs", "Touched", "base_symbols", "judge", "read_inputs", "unpinned_reads"]

#: Roles of changed paths that are neither production source nor pinned, nor already judged
#: (oracle and harness: R7; pins: R8; compiled: reject_provenance): files a run may read.
INPUT_ROLES = frozenset({"data", "excluded"})

Reader = Callable[[str], bytes | None]


@dataclass(frozen=True, kw_only=True)
class Touched:
    """Every changed path, its roles, and the changed production symbols."""

    roles: Mapping[str, tuple[str, ...]]
    symbols: tuple[Symbol, ...]
    files: Mapping[str, str]  # source path -> its module

    def paths_with(self, *roles: str) -> tuple[str, ...]:
        """Changed paths that have one of ``roles``, sorted."""
        return tuple(p for p, r in sorted(self.roles.items()) if set(r) & set(roles))

    @property
    def touched_paths(self) -> tuple[str, ...]:
        """Every path whose kind, mode or bytes differ between the trees."""
        return tuple(sorted(self.roles))

    @property
    def excluded_paths(self) -> tuple[str, ...]:
        """Changed paths that are not production source (listed in the receipt, never scored)."""
        return tuple(p for p, r in sorted(self.roles.items()) if "source" not in r)

    @property
    def oracle_moves(self) -> tuple[str, ...]:
        """Harness and oracle paths the patch touched (``R7``)."""
        return self.paths_with("oracle", "harness")

    @property
    def pin_mutations(self) -> tuple[str, ...]:
        """Pin files and the gate's configuration the patch touched (``R8``)."""
        return self.paths_with("pin")

    def unscored_inputs(self, fixture_root: str) -> tuple[str, ...]:
        """Changed paths that are neither production source, nor under the fixture root (the
        fixture digest judges those: R2), nor oracle, harness, pins or compiled code: data files,
        docs, ``exclude`` entries, inert ``pyproject.toml`` tables. A run may read any of them."""
        root = fixture_root.strip("/")
        return tuple(
            p
            for p, r in sorted(self.roles.items())
            if set(r) <= INPUT_ROLES and not (root and (p == root or p.startswith(root + "/")))
        )

    @property
    def compiled(self) -> tuple[str, ...]:
        """Compiled or binary code the patch added or changed (``reject_provenance``)."""
        return self.paths_with("compiled")


def judge(changes: Sequence[PathChange], layout: Layout, base: Reader, patched: Reader) -> Touched:
    """Roles and changed symbols of ``changes``; ``base``/``patched`` read a regular file's bytes
    (None: absent, a symlink or not a regular file)."""
    roles: dict[str, tuple[str, ...]] = {}
    symbols: dict[str, Symbol] = {}
    files: dict[str, str] = {}
    for change in changes:
        path = change.path
        role = layout.role(path)
        if role == "pyproject":
            regular = change.is_regular_pair
            kinds = pyproject_roles(base(path), patched(path)) if regular else {"harness"}
            roles[path] = tuple(sorted(kinds)) or ("data",)  # only inert tables or comments
            continue
        if role == "data" and not change.is_regular_pair:
            role = "harness"  # a symlink may make Python or pytest load what it points to
        roles[path] = (role,)
        if role != "source":
            continue
        module = layout.module(path)
        files[path] = module
        if change.is_regular_pair:
            found = compare_module(module, base(path), patched(path))
        else:  # a symlink or special file as a module: unreviewable, everything in it changed
            found = _everything(module, base(path)) | _everything(module, patched(path))
        for symbol in found:
            _add(symbols, symbol)
    return Touched(roles=roles, symbols=tuple(sorted(symbols.values())), files=files)


def _add(symbols: dict[str, Symbol], symbol: Symbol) -> None:
    """Keep ``symbol``; one name from two modules (``pkg.sub.f``: function ``f`` of
    ``pkg/sub.py`` and method ``f`` of class ``sub`` in ``pkg/__init__.py``) becomes one symbol
    of no module, which no ``covers`` entry covers: a change cannot hide behind its namesake."""
    known = symbols.get(str(symbol))
    if known is not None and known.module != symbol.module:
        symbol = Symbol(str(symbol), "")
    symbols[str(symbol)] = symbol


def _everything(module: str, source: bytes | None) -> set[Symbol]:
    table = symbol_table(source) if source is not None else None
    return {Symbol.make(module, name) for name in (table or {"": ()})}


def base_symbols(layout: Layout, base: Path) -> frozenset[str]:
    """Every name a ``covers`` entry may use in the base tree: each production module and each
    ``module.qualname`` defined in it (an unparsable module contributes its module name only)."""
    names: set[str] = set()
    for path, entry in scan_tree(base).items():
        if entry.kind != "file" or layout.role(path) != "source":
            continue
        module = layout.module(path)
        names.add(module)
        try:
            source = (base / path).read_bytes()
        except OSError:
            continue
        names.update(f"{module}.{q}" for q in defined_names(source) or () if q)
    return frozenset(names)


@dataclass(frozen=True, kw_only=True)
class ReadInputs:
    """Changed unscored inputs, judged: ``oracle`` (``R7``) and ``data`` (``data:<path>``)."""

    oracle: tuple[str, ...] = ()
    data: tuple[str, ...] = ()
    #: why the oracle inputs are oracle inputs (one line for the receipt's reasons)
    why: str = ""


def _seen(path: str, opened: frozenset[str]) -> bool:
    """``path`` was opened, or a directory holding it was listed (``""``: the root)."""
    return any(o in (path, "") or path.startswith(o.rstrip("/") + "/") for o in opened)


def read_inputs(paths: Sequence[str], opened_paths: frozenset[str] | None) -> ReadInputs:
    """Every file a run reads is pinned or scored (docs/gate-analysis.md).

    ``paths``: the changed unscored inputs (:meth:`Touched.unscored_inputs`). ``opened_paths``:
    the repository paths the judge's audit hook saw any property's run open or list (a listed
    directory covers what is under it), or None when there is no trustworthy record — every run
    today, and ``--judge off``. With None every such path is an oracle input (``R7``); with a
    record, a path a run opened or listed is ``R7`` and any other is a changed data input the
    receipt names (``data:<path>``), which never earns credit (docs/gate-analysis.md)."""
    if not paths:
        return ReadInputs()
    if opened_paths is None:
        return ReadInputs(
            oracle=tuple(paths),
            why="no trustworthy record of which files the runs read, so every changed file "
            "that is neither production source nor a pinned fixture may be an oracle input",
        )
    oracle = tuple(p for p in paths if _seen(p, opened_paths))
    data = tuple(p for p in paths if p not in oracle)
    return ReadInputs(oracle=oracle, data=data, why="a property's run opened or listed it")


def unpinned_reads(
    opened: Mapping[str, frozenset[str]] | None,
    fixture_files: frozenset[str],
    layout: Layout,
) -> tuple[str, ...] | None:
    """``check --self-test``: one warning per pinned property whose run read a repository file
    that is neither production source, nor oracle or harness, nor a file of the fixture pin.
    ``opened``: property id -> the repository paths its run opened (the judge's audit hook); None:
    no trustworthy record, the self-test cannot tell (returns None)."""
    if opened is None:
        return None
    out: list[str] = []
    for pid, paths in sorted(opened.items()):
        outside = sorted(
            p
            for p in paths
            if p not in fixture_files and layout.role(p) not in {"source", "oracle", "harness"}
        )
        if outside:
            out.append(f"{pid} reads files outside the fixture pin: {', '.join(outside)}")
    return tuple(out)
