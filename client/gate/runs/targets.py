"""Where each changed symbol's code is in the patched tree (the ``targets`` every Execute sends),
and which symbols a property's runs executed.

A target is the symbol's whole definition in the patched tree, decorators included, sent
innermost first; a symbol counts as executed when a target inside its own range was.
``module:<mod>`` symbols are not sent: a property that passed is taken to have executed them.
Also: the client whose every Execute carries the targets and the judge mode (a lane's
``connect``). Why: docs/mutation.md, "Executed".
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from client.analysis.patch.roles import layout_of
from client.analysis.patch.symbols import definitions
from client.gate.runs.judging import JudgeMode
from client.gate.runs.kept import keep_signed
from client.gate.workspace import Workspace
from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.keys import Keyring
from patchgate.pins import PinSet
from patchgate.request import CodeTarget, ExecuteRequest
from patchgate.results import RunOutcome
from patchgate.symbols import MODULE_PREFIX, Symbol
from patchgate.tls import ClientTLS

__all__ = [
    "SymbolSite", "TargetedClient", "executed_by", "locate", "targeted_connect", "targets_of",
]  # fmt: skip

Target = CodeTarget
_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class SymbolSite:
    """A changed symbol's definition in the patched tree (``qualname`` None: module code)."""

    symbol: str
    path: str
    first: int
    last: int
    qualname: str | None

    @property
    def is_module(self) -> bool:
        return self.qualname is None

    def contains(self, other: SymbolSite) -> bool:
        return self.path == other.path and self.first <= other.first <= other.last <= self.last


def locate(ws: Workspace, pins: PinSet, symbols: Sequence[str]) -> dict[str, SymbolSite]:
    """Changed symbol -> its definition in the patched tree (a deleted symbol is left out)."""
    layout = layout_of(ws.base_dir, pins)
    wanted = set(symbols)
    out: dict[str, SymbolSite] = {}
    for change in ws.changes():
        if change.after is None or not change.path.endswith(".py"):
            continue
        raw = ws.read_patched(change.path)
        if raw is None:
            continue
        module = layout.module(change.path)
        mod_symbol = f"{MODULE_PREFIX}{module}"
        if mod_symbol in wanted:
            out[mod_symbol] = SymbolSite(
                mod_symbol, change.path, 1, max(1, len(raw.splitlines())), None
            )
        try:
            tree = ast.parse(raw)
        except (SyntaxError, ValueError):
            continue
        for qualname, node in definitions(tree.body):
            name = Symbol.make(module, qualname)
            if name in wanted and name not in out:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                last = node.end_lineno or node.lineno
                out[name] = SymbolSite(name, change.path, first, last, qualname)
    return out


def targets_of(sites: Mapping[str, SymbolSite]) -> tuple[Target, ...]:
    """The executor's targets: every non-module symbol, innermost (shortest range) first."""
    found = [s for s in sites.values() if not s.is_module]
    found.sort(key=lambda s: (s.last - s.first, s.path, s.first, s.symbol))
    return tuple(CodeTarget(s.path, s.first, s.last, s.symbol) for s in found)


def executed_by(
    sites: Mapping[str, SymbolSite], symbol: str, runs: Sequence[RunOutcome | None]
) -> bool:
    """Whether every run of ``runs`` executed ``symbol`` (a target inside its range counts).

    A ``module:`` symbol counts as executed by any recorded run (see the module docstring); no
    recorded run executed nothing.
    """
    recorded = [r for r in runs if r is not None]
    if not recorded:
        return False
    site = sites.get(symbol)
    if site is None:
        return False  # a deleted symbol or one the client could not locate: nothing ran it
    if site.is_module:
        return True
    inside = {s.symbol for s in sites.values() if not s.is_module and site.contains(s)}
    return all(inside.intersection(r.executed) for r in recorded)


class TargetedClient:
    """An executor client whose every ``Execute`` carries ``targets`` and the judge ``mode``;
    with ``keep``, every verified result envelope is also written there
    (:mod:`client.gate.runs.kept`)."""

    def __init__(
        self,
        inner: ExecutorClient,
        targets: Sequence[Target],
        mode: JudgeMode | None = None,
        keep: Path | None = None,
    ) -> None:
        self.inner = inner
        self.address = inner.address
        self.targets = tuple(targets)
        self.mode = mode or JudgeMode()
        self.keep = keep

    def execute(
        self, request: ExecuteRequest, on_progress: Callable[[str], None] | None = None
    ) -> ExecutionResult:
        """``ExecutorClient.execute`` with this client's judge mode, and its targets when
        ``request`` names none; the verified result envelope kept when ``keep`` is set."""
        targeted = dataclasses.replace(request, targets=request.targets or self.targets)
        result = self.inner.execute(self.mode.apply(targeted), on_progress)
        if self.keep is not None and result.envelope is not None:
            keep_signed(self.keep, result.envelope)
        return result

    def close(self) -> None:
        """Release the channel."""
        self.inner.close()


def targeted_connect(
    lane: str,
    tls: ClientTLS | None,
    executor_keyring: Keyring | None,
    targets: Sequence[Target],
    mode: JudgeMode | None = None,
    *,
    keep: Path | None = None,
) -> Callable[[str], TargetedClient]:
    """A lane's ``connect``: an ``ExecutorClient`` per address that sends ``targets`` and
    ``mode`` (and keeps each signed result in ``keep``, when given)."""

    def connect(address: str) -> TargetedClient:
        inner = ExecutorClient(address, tls=tls, lane=lane, executor_keyring=executor_keyring)
        return TargetedClient(inner, targets, mode, keep)

    return connect
