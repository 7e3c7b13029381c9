"""The one frozen settings object of a check, built once by the command and passed down.

It lives below every module of the pipeline that reads it (``pipeline``, ``steps``, ``secondpin``),
so none of them imports another to learn its type.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from patchgate.tls import ClientTLS
from patchgate.vocabulary import Isolation, JudgeName

__all__ = ["CheckSettings"]


@dataclass(frozen=True, kw_only=True)
class CheckSettings:
    """Everything one check needs, fixed at the entry point (flags > patchgate.toml > defaults)."""

    repo: Path
    base: str
    patch: Path
    draft_id: str | None
    drafter: str | None
    signer: str
    executors: tuple[str, ...]
    remote_executor: str | None = None
    second_pin: Path | None = None
    #: The second pin's own fixture tree (a directory standing in for the fixture root), or a
    #: revision of ``repo`` whose fixture tree (and, without ``second_pin``, pin) it takes.
    second_pin_tree: Path | None = None
    second_pin_rev: str | None = None
    clock: dt.datetime | None = None
    out: Path = Path("ledgers")
    signer_tls: ClientTLS | None = None
    executor_tls: ClientTLS | None = None
    remote_tls: ClientTLS | None = None
    operator_keyring: Path | None = None
    executor_keyring: Path | None = None
    runs: int = 2
    #: Mutants per changed symbol that would earn credit (0: the stage is off; such a check is
    #: admitted only when the reviewed configuration says ``allow_unmutated = true``).
    mutants: int = 16
    executor_concurrency: int | None = None  # per address; None: 2 for dns: fleets, else 1
    isolation: Isolation = (
        "run"  # "run": a sandbox per group and run; "property": per property and run
    )
    #: "on": the judge apart (docs/executor.md, "The judge apart"); "off": the single-process run,
    #: admitted only when the reviewed configuration says ``allow_judge_off = true``.
    judge: JudgeName = "on"
    #: Provenance the operator states: the model that drafted the patch (blank unless given;
    #: never read from the patch) and the interface (lane or tool) that returned it.
    model: str = ""
    interface: str = ""
    #: A person's override, recorded in the receipt and never applied (both or neither).
    override_by: str | None = None
    override_reason: str | None = None
    #: The lane (``patchgate up``) the daemon settings came from, to name it when a daemon does
    #: not answer; empty when they came from flags, the environment or ``./patchgate.toml``.
    lane: str = ""
