"""A variant batch (mutation): which variants a group's sandbox runs, its files and deadline,
and each member's outcome under each variant from the one sandbox's records.

The executor (``executord.runs.executor``) runs the sandbox; everything here is planning and
judging, with no container and no lock.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from executord.runs.records import BatchVerdict, RecordLog, batch_outcomes, from_verdict
from executord.runs.sandboxspec import BATCH_NAME, INFO, PLUGIN_PATH, WORKSPACE
from patchgate.batching import Group, variant_members
from patchgate.results import RunOutcome

if TYPE_CHECKING:
    from pathlib import Path

    from executord.runs.request import ExecuteInput, Variant

__all__ = [
    "BATCH_MARGIN_S",
    "VARIANT_MARGIN_S",
    "Plan",
    "batch_files",
    "planned_ids",
    "variant_outcomes",
    "variant_plan",
    "variants_deadline_s",
    "write_variants",
]

BATCH_MARGIN_S = 10.0  # a batch's deadline: the sum of its bounds plus max(one bound, this)
VARIANT_MARGIN_S = 5.0  # with variants: a pair's start and end, beyond its bounds

#: (1-based index of a variant in the request, the group's members whose tests run under it)
Plan = list[tuple[int, list[str]]]


def variant_plan(inp: ExecuteInput, group: Group) -> Plan:
    """The variants the group's sandbox runs, in the request's order: (1-based index in the
    request, the group's members whose tests run in it). A variant's scope is its own
    (``Variant.scope``), else the request's ``variant_scope``, else every member; a variant
    whose scope holds no member of the group does not run in the group's sandbox."""
    plan = []
    for n, v in enumerate(inp.variants, 1):
        scoped = variant_members(group.ids, v.scope, inp.variant_scope)
        if scoped:
            plan.append((n, scoped))
    return plan


def batch_files(
    readable: Path,
    plan: Sequence[tuple[int, Sequence[str]]],
    own: Mapping[str, Sequence[str]],
    *,
    members: int,
    bound_ms: int,
    nodes: Sequence[str],
) -> dict[tuple[str, ...], str]:
    """One batch file per distinct scope of ``plan`` in ``readable`` (the first one is
    ``BATCH_NAME``, the judge's default); each scope -> its sandbox path ("" for the default).
    Each holds the group's bound and order and, when the scope is not every member of the group,
    the node ids to ``run``: every module is collected, only the scope's tests run."""
    files: dict[tuple[str, ...], str] = {}
    for _, scoped in plan:
        if tuple(scoped) in files:
            continue
        batch: dict[str, object] = {"bound_ms": bound_ms, "order": list(nodes)}
        if len(scoped) < members:
            batch["run"] = [n for pid in scoped for n in own[pid]]
        name = BATCH_NAME if not files else f"batch-{len(files)}.json"
        (readable / name).write_text(json.dumps(batch), encoding="utf-8")
        (readable / name).chmod(0o444)
        files[tuple(scoped)] = "" if name == BATCH_NAME else f"{INFO}/{name}"
    return files


def planned_ids(plan: Sequence[tuple[int, Sequence[str]]]) -> list[str]:
    """Every property some variant of ``plan`` runs, in the group's order."""
    return list(dict.fromkeys(pid for _, scoped in plan for pid in scoped))


def variants_deadline_s(bound_s: float, scoped: Sequence[int]) -> float:
    """The sandbox deadline of one pair per entry of ``scoped`` (how many properties each
    runs): per pair the sum of its bounds plus max(one bound, ``VARIANT_MARGIN_S``), plus
    ``BATCH_MARGIN_S`` once."""
    return sum(bound_s * k + max(bound_s, VARIANT_MARGIN_S) for k in scoped) + BATCH_MARGIN_S


def variant_outcomes(
    records: RecordLog,
    members: Sequence[tuple[str, Sequence[str]]],
    count: int,
    *,
    ended: str = "",
    bound_text: str = "",
    plugin: str = PLUGIN_PATH,
    per_variant: Sequence[Sequence[tuple[str, Sequence[str]]]] = (),
) -> list[RunOutcome]:
    """Each member property's outcome under each of ``count`` variants (run 1; the members of
    variant n are ``per_variant[n - 1]`` when given), from the
    variants' logs of one sandbox: each judged like one batch run, with its pair's judge status
    (the supervisor's ``judge`` record) as the exit status. A variant without a complete pair of
    records (the sandbox ended, a reset failed, a channel problem) is ``error`` for each member;
    a member its variant did not report is ``error`` too (never re-run alone)."""
    out: list[RunOutcome] = []
    everyone = members
    for n in range(1, count + 1):
        members = per_variant[n - 1] if per_variant else everyone
        part = records.variant_logs[n - 1] if n <= len(records.variant_logs) else None
        if records.problems:
            missing = "report channel: " + "; ".join(records.problems)
        elif part is None:
            missing = records.reset_failure or f"the sandbox ended before it ({ended or 'exit'})"
            missing = f"variant {n} did not run: {missing}"
        else:
            missing = ""
        if part is None or missing:
            out += [RunOutcome.make(pid, 1, "error", missing, failure_kind="judge_error",
                                    variant=n) for pid, _ in members]  # fmt: skip
            continue
        code = part.judge_end[1] if part.judge_end is not None else None
        verdicts = batch_outcomes(
            part,
            members,
            code,
            plugin,
            ended="" if part.judge_end is not None else ended or "cut short",
            bound_text=bound_text,
        )
        for pid, verdict in verdicts.items():
            v = verdict
            if v.outcome is None:
                v = BatchVerdict(("error", v.alone, ()), "", v.duration_ms,
                                 failure_kind="judge_error")  # fmt: skip
            out.append(from_verdict(pid, 1, v, variant=n))
    return out


def write_variants(path: Path, variants: Sequence[Variant]) -> tuple[tuple[str, int, int], ...]:
    """The variants' sources, one after another, in a file only the supervisor's uid reads
    (0400 in its 0700 run directory); where each lies, with its sandbox path."""
    index = []
    offset = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
    with os.fdopen(fd, "wb") as fh:
        for v in variants:
            fh.write(v.source)
            index.append((f"{WORKSPACE}/{v.path}", offset, len(v.source)))
            offset += len(v.source)
    return tuple(index)
