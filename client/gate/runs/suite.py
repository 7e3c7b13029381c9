"""The signed suite: after the signature step, the one value every run and scoring step takes.

It holds what the operator's signature fixed (the envelope and its digest), where the suite runs
(the patched tree, its fixture root, the base tree the mutation stage reads), whom the client
trusts for results (the executor keyring) and asks (the lanes' addresses), and how every Execute
runs (the judge mode, the changed symbols' targets). :meth:`SignedSuite.request` makes one
Execute of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from client.gate.runs.judging import JudgeMode
from patchgate.envelope import Envelope
from patchgate.keys import Keyring
from patchgate.pins import PropertyPin
from patchgate.request import CodeTarget, ExecuteRequest, Variant
from patchgate.vocabulary import Isolation

__all__ = ["SignedSuite"]


@dataclass(frozen=True, kw_only=True)
class SignedSuite:
    """One check's signed suite, from the signature step to the receipt."""

    envelope: Envelope
    digest: str  # the signed canonical fixture digest
    workspace: Path  # the patched tree the executors run
    fixture_root: str
    base: Path | None = None  # the base tree (the mutation stage reads the unpatched sources)
    executor_keyring: Keyring | None = None  # None: trust on first use (GetInfo)
    executors: tuple[str, ...] = ()  # the local lane's addresses
    remote_executor: str | None = None  # the remote lane's address
    judge: JudgeMode = field(default_factory=JudgeMode)
    targets: tuple[CodeTarget, ...] = ()  # the changed symbols' code, sent with every Execute

    @property
    def request_prefix(self) -> str:
        """The start of every request id of this suite: the digest's first 12 characters."""
        return self.digest[:12]

    def lane_addresses(self, lane: str) -> tuple[str, ...]:
        """The addresses of ``lane``: ``remote`` the remote executor's, any other the local's."""
        if lane == "remote":
            return (self.remote_executor,) if self.remote_executor else ()
        return self.executors

    def request(
        self,
        properties: Sequence[PropertyPin],
        *,
        runs: int,
        request_id: str,
        isolation: Isolation = "run",
        variants: Sequence[Variant] = (),
        variant_bound_ms: int = 0,
        variant_scope: Sequence[str] = (),
    ) -> ExecuteRequest:
        """One Execute of ``properties`` on this suite (targets and judge mode are the
        connection's: see :class:`client.gate.runs.targets.TargetedClient`)."""
        return ExecuteRequest(
            envelope=self.envelope,
            workspace=self.workspace,
            fixture_root=self.fixture_root,
            properties=tuple(properties),
            runs=runs,
            request_id=request_id,
            isolation=isolation,
            variants=tuple(variants),
            variant_bound_ms=variant_bound_ms,
            variant_scope=tuple(variant_scope),
        )
