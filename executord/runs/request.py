"""The Execute request as the domain sees it, without grpc: shared by the checks and the runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from patchgate.envelope import Envelope

__all__ = ["CodeTarget", "ExecuteInput", "PropertyRun", "TreeItem", "Variant"]


@dataclass(frozen=True)
class TreeItem:
    """One workspace file by content."""

    path: str
    digest: str
    size: int
    executable: bool = False


@dataclass(frozen=True)
class PropertyRun:
    """An admitted property: its id and argv."""

    id: str
    command: tuple[str, ...]


@dataclass(frozen=True)
class CodeTarget:
    """A code range of the workspace whose execution the reporter notes (e.g. a changed symbol)."""

    path: str
    first_line: int
    last_line: int
    name: str


@dataclass(frozen=True)
class Variant:
    """A module variant (mutation v2): the subject loads ``source`` instead of the file ``path``
    (workspace-relative, a production ``.py`` under a source root)."""

    path: str
    source: bytes = field(repr=False)
    #: The properties whose tests run in this variant (empty: the request's ``variant_scope``).
    scope: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ExecuteInput:
    """The Execute request, without grpc."""

    request_id: str
    envelope: Envelope
    workspace: tuple[TreeItem, ...]
    fixture_root: str
    properties: tuple[PropertyRun, ...]
    runs: int = 2
    targets: tuple[CodeTarget, ...] = ()
    isolation: str = "run"  # "run": a sandbox per group and run; "property": per property and run
    #: The suite's environment tree (empty: the signed manifest names none; the executor's own).
    environment: tuple[TreeItem, ...] = ()
    judge: str = "on"  # "on": supervisor, judge and subject apart; "off": one process (DESIGN §6.7)
    source_roots: tuple[str, ...] = (".",)  # where the production modules live (DESIGN §3)
    production: tuple[str, ...] = ()  # top-level production module names (judge on: proxied)
    #: Module variants (mutation v2): each group runs once per variant, in one sandbox.
    variants: tuple[Variant, ...] = ()
    variant_bound_ms: int = 0  # with variants: each test's bound is min(signed bound, this) if > 0
    #: With variants: the properties whose tests run in each variant (empty: all).
    variant_scope: tuple[str, ...] = ()
