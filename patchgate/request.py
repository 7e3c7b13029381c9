"""One Execute request, without grpc: the parts both ends name, the client's form and the wire's.

:class:`ExecuteRequest` is what a client asks one executor to run (the workspace by path; the
client hashes and uploads it). :class:`ExecuteInput` is the same request by content, as the
executor decodes it. Both are built of the same parts: :class:`PropertyRun`, :class:`TreeItem`,
:class:`CodeTarget` and :class:`Variant`. What each field means: docs/reference/executor.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from patchgate.envelope import Envelope
from patchgate.pins import PropertyPin
from patchgate.vocabulary import Isolation, JudgeName

__all__ = [
    "CodeTarget",
    "ExecuteInput",
    "ExecuteRequest",
    "PropertyRun",
    "TreeItem",
    "Variant",
]


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
    """The Execute request by content, as the executor decodes it."""

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
    judge: str = "on"  # "on": supervisor, judge and subject apart; "off": one process
    source_roots: tuple[str, ...] = (".",)  # where the production modules live
    production: tuple[str, ...] = ()  # top-level production module names (judge on: proxied)
    #: Module variants (mutation v2): each group runs once per variant, in one sandbox.
    variants: tuple[Variant, ...] = ()
    variant_bound_ms: int = 0  # with variants: each test's bound is min(signed bound, this) if > 0
    #: With variants: the properties whose tests run in each variant (empty: all).
    variant_scope: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ExecuteRequest:
    """One Execute as a client asks for it: the signed suite's files by path and what to run.

    ``targets`` name the changed symbols (the client sends each as its wire name). ``request_id``
    empty: the client draws one. With ``variants``, ``runs`` must be 1 and ``judge`` on.
    """

    envelope: Envelope
    workspace: Path
    fixture_root: str
    properties: tuple[PropertyPin, ...]
    runs: int = 2
    request_id: str = ""
    targets: tuple[CodeTarget, ...] = ()
    isolation: Isolation = "run"
    judge: JudgeName = "on"
    source_roots: tuple[str, ...] = ()
    production: tuple[str, ...] = ()
    variants: tuple[Variant, ...] = ()
    variant_bound_ms: int = 0
    variant_scope: tuple[str, ...] = ()
