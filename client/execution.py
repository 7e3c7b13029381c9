"""Running the admitted suite through executors (DESIGN §6 step 7, §10 lanes).

The local lane spreads the suite over every ``--executor`` address: one ``Execute`` per property
(``runs`` runs each), one worker thread per address, so N addresses run N properties at a time.
A remote lane runs the same suite for confirmation only. Transport records stay transport records;
a refusal (nothing ran) is kept apart from both; progress goes to the ``progress`` callback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchgate.envelope import Envelope
from patchgate.errors import RefusedError, TransportError
from patchgate.executor_client import ExecutionResult, ExecutorClient
from patchgate.keys import Keyring
from patchgate.pins import PropertyPin
from patchgate.results import RunOutcome, TransportRecord
from patchgate.tls import ClientTLS

__all__ = ["LaneResult", "run_lane"]

Progress = Callable[[str], None]


@dataclass(kw_only=True)
class LaneResult:
    """Everything one lane returned for one suite on one fixture envelope."""

    lane: str
    outcomes: list[RunOutcome] = field(default_factory=list)
    transport: list[TransportRecord] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    executors: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self, status_by_id: dict[str, str]) -> dict[str, Any]:
        """The ``lanes.<lane>`` entry of the receipt."""
        return {
            "executors": self.executors,
            "status_by_id": status_by_id,
            "refusals": list(self.refusals),
            "transport": len(self.transport),
        }


def _record(result: ExecutionResult, lane: LaneResult, expected_digest: str, pid: str) -> None:
    info = lane.executors.setdefault(
        result.address,
        {"executor_keyid": result.executor_keyid, "properties": [], "uploaded_bytes": 0},
    )
    info["properties"].append(pid)
    info["uploaded_bytes"] += result.uploaded_bytes
    if result.executor_keyid and not info["executor_keyid"]:
        info["executor_keyid"] = result.executor_keyid
    observed = result.observed_fixture_digest
    if result.outcomes and observed != expected_digest:
        lane.refusals.append(
            f"{pid}: executor {result.address} observed fixture digest {observed or '(none)'}, "
            f"not the signed {expected_digest}; its outcomes are discarded"
        )
        return
    lane.outcomes.extend(result.outcomes)
    lane.transport.extend(result.transport)


def _one(
    client: ExecutorClient,
    prop: PropertyPin,
    *,
    envelope: Envelope,
    workspace: Path,
    fixture_root: str,
    runs: int,
    request_id: str,
    progress: Progress,
) -> ExecutionResult | str | TransportRecord:
    try:
        return client.execute(
            fixture_envelope=envelope,
            workspace=workspace,
            fixture_root=fixture_root,
            properties=[prop],
            runs=runs,
            on_progress=lambda msg: progress(f"{prop.id}: {msg}"),
            request_id=request_id,
        )
    except RefusedError as exc:
        return f"{prop.id}: executor {client.address} refused ({exc.code}): {exc.reason}"
    except TransportError as exc:  # the client returns these; a raise is handled the same way
        return TransportRecord(kind=exc.kind, detail=exc.detail, property_id=prop.id)


def run_lane(
    *,
    lane: str,
    addresses: Sequence[str],
    suite: Sequence[PropertyPin],
    envelope: Envelope,
    expected_digest: str,
    workspace: Path,
    fixture_root: str,
    runs: int,
    request_prefix: str,
    tls: ClientTLS | None = None,
    executor_keyring: Keyring | None = None,
    progress: Progress = lambda _msg: None,
) -> LaneResult:
    """Run every property of ``suite`` ``runs`` times on the executors of one lane."""
    result = LaneResult(lane=lane)
    lock = threading.Lock()
    queues: list[list[PropertyPin]] = [
        list(suite[i :: len(addresses)]) for i in range(len(addresses))
    ]
    total, done = len(suite), [0]

    def worker(address: str, props: list[PropertyPin]) -> None:
        client = ExecutorClient(address, tls=tls, lane=lane, executor_keyring=executor_keyring)
        try:
            for prop in props:
                got = _one(
                    client,
                    prop,
                    envelope=envelope,
                    workspace=workspace,
                    fixture_root=fixture_root,
                    runs=runs,
                    request_id=f"{request_prefix}-{lane}-{prop.id}",
                    progress=progress,
                )
                with lock:
                    done[0] += 1
                    if isinstance(got, ExecutionResult):
                        _record(got, result, expected_digest, prop.id)
                        tag = (
                            ", ".join(
                                f"run {o.run_index} {o.outcome}"
                                for o in got.outcomes
                                if o.property_id == prop.id
                            )
                            or "no outcome"
                        )
                    elif isinstance(got, TransportRecord):
                        result.transport.append(
                            TransportRecord(
                                kind=got.kind,
                                detail=got.detail,
                                property_id=prop.id,
                                lane=lane,
                                address=address,
                            )
                        )
                        tag = f"transport {got.kind}"
                    else:
                        result.refusals.append(got)
                        tag = "refused"
                    progress(f"[{lane} {done[0]}/{total}] {prop.id} on {address}: {tag}")
        finally:
            client.close()

    with ThreadPoolExecutor(max_workers=max(1, len(addresses))) as pool:
        futures = [pool.submit(worker, a, q) for a, q in zip(addresses, queues, strict=True) if q]
        for f in futures:
            f.result()
    return result
