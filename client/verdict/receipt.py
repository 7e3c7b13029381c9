"""The receipt (schema ``patchgate/receipt/v2``) and the human summary printed after a check.

The receipt is written for every verdict, refusals included, so it always says why: every changed
symbol has a credit, every symbol with credit 0 a line in ``uncredited``. The summary is a table
(symbol, property, class, run 1, run 2, credit) followed by the verdict, why each uncredited symbol
earned nothing, flake observations and the reasons.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from client.verdict.credit import CreditRow, required_controls
from patchgate.ledgers import (
    DUAL_PIN,
    FIXTURE_STATUSES,
    POSTURES,
    RECEIPT_V2,
    REJECTION_CODES,
    Receipt,
)
from patchgate.receipt_parts import EvidenceEntry, LaneSummary, MutationRecord, TransportEntry
from patchgate.vocabulary import JudgeName, Posture

__all__ = ["ReceiptFacts", "build_receipt", "receipt_problems", "render_summary"]


@dataclass(frozen=True, kw_only=True)
class ReceiptFacts:
    """What a check found, as the receipt records it (every field as in the receipt schema).

    ``override`` records a person's decision beside the gate's; nothing here reads it.
    """

    review_clock: str
    patch_sha256: str
    #: the admission decision ("" when the check stopped before admission; the self-test's
    #: summary says ``self_test``)
    decision: str
    posture: Posture
    admit: bool
    changed_symbols: Sequence[str] = ()
    excluded_paths: Sequence[str] = ()
    changed_inputs: Sequence[str] = ()
    credits: Mapping[str, int] | None = None
    coverage: float = 0.0
    uncredited: Mapping[str, str] | None = None
    evidence: Mapping[str, Mapping[str, EvidenceEntry]] | None = None
    fixture_status: str = ""  # a fixture status, or "" when the check stopped before it
    fixture_digest: str = ""
    freeze_citations: Sequence[str] = ()
    flake_observations: Sequence[Mapping[str, Any]] = ()
    predicate_hashes: Mapping[str, str] | None = None
    rejection_codes: Sequence[str] = ()
    transport: Sequence[TransportEntry] = ()
    lanes: Mapping[str, LaneSummary | Mapping[str, Any]] | None = None
    dual_pin: str = "not_run"
    override: Mapping[str, str] | None = None
    mutation: MutationRecord | None = None
    environment: str = ""
    judge: JudgeName | Literal[""] = ""


def build_receipt(facts: ReceiptFacts) -> Receipt:
    """A v2 Receipt of ``facts``; every changed symbol has a credit entry (0 unless earned)."""
    f = facts
    credit_map = {s: 0 for s in f.changed_symbols}
    credit_map.update(f.credits or {})
    lane_map: dict[str, Any] = {"local": {}, "remote": {}}
    lane_map.update(f.lanes or {})
    return Receipt(
        review_clock=f.review_clock,
        patch_sha256=f.patch_sha256,
        decision=f.decision,
        posture=f.posture,
        changed_symbols=list(f.changed_symbols),
        excluded_paths=list(f.excluded_paths),
        changed_inputs=list(f.changed_inputs),
        credits=credit_map,
        coverage=round(f.coverage, 6),
        uncredited=dict(sorted((f.uncredited or {}).items())),
        evidence={k: dict(v) for k, v in sorted((f.evidence or {}).items())},
        fixture_status=f.fixture_status,
        fixture_digest=f.fixture_digest,
        freeze_citations=sorted(set(f.freeze_citations)),
        flake_observations=[dict(o) for o in f.flake_observations],
        predicate_hashes=dict(sorted((f.predicate_hashes or {}).items())),
        rejection_codes=list(f.rejection_codes),
        transport=[dict(t) for t in f.transport],
        lanes=lane_map,
        dual_pin=f.dual_pin,
        override=dict(f.override or {}),
        mutation=dict(f.mutation or {}),
        environment=f.environment,
        judge=f.judge,
        admit=f.admit,
    )


_HEADER = ("symbol", "property", "class", "run 1", "run 2", "credit")


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def render_summary(
    receipt: Receipt, rows: Sequence[CreditRow], reasons: Sequence[str] = (), out_dir: str = ""
) -> str:
    """The human summary: the credit table, then verdict, codes and reasons."""
    body: list[Sequence[str]] = [_HEADER]
    body += [
        (r.symbol, r.property_id, r.assertion_class, r.run1, r.run2, str(r.credit)) for r in rows
    ]
    if not rows:
        body += [
            (s, "-", "-", "-", "-", str(receipt.credits.get(s, 0))) for s in receipt.changed_symbols
        ]
    lines = _table(body) if len(body) > 1 else ["(no changed production symbol)"]
    lines.append("")
    lines.append(f"decision   {receipt.decision or '-'}")
    lines.append(f"posture    {receipt.posture}")
    lines.append(
        f"coverage   {receipt.coverage:g} ({sum(receipt.credits.values())}/{len(receipt.credits)})"
    )
    lines.append(f"fixtures   {receipt.fixture_status or '-'} {receipt.fixture_digest[:16]}")
    lines.append(f"codes      {', '.join(receipt.rejection_codes) or '-'}")
    for symbol, why in receipt.uncredited.items():
        lines.append(f"uncredited {symbol}: {why}")
    for o in receipt.flake_observations:
        lines.append(f"flake      {o.get('flake_id', '')} on {o.get('test_id', '')} (never credit)")
    if receipt.excluded_paths:
        lines.append(f"excluded   {', '.join(receipt.excluded_paths)}")
    for t in receipt.transport:
        lines.append(f"transport  {t.get('lane', '')} {t.get('kind', '')}: {t.get('detail', '')}")
    lines.append(f"dual pin   {receipt.dual_pin}")
    lines.extend(f"why        {r}" for r in reasons)
    lines.append(f"admit      {'yes' if receipt.admit else 'no'}")
    if receipt.override:
        o = receipt.override
        lines.append(
            f"override   by {o.get('by', '')}: {o.get('reason', '')} (recorded, never applied: "
            "the verdict above is the gate's)"
        )
    if out_dir:
        lines.append(f"ledgers    {out_dir}")
    return "\n".join(lines) + "\n"


def _v2_problems(r: Receipt, zero: set[str]) -> list[str]:
    """What a v2 receipt must say about every finding."""
    out: list[str] = []
    if zero and "R1" not in r.rejection_codes:
        out.append(f"symbols with credit 0 but no R1: {', '.join(sorted(zero))}")
    if not zero and "R1" in r.rejection_codes:
        out.append("R1 listed, but every changed symbol earned credit")
    if missing := sorted(zero - set(r.uncredited)):
        out.append(f"uncredited does not say why for: {', '.join(missing)}")
    if wrong := sorted(set(r.uncredited) - zero):
        out.append(
            f"uncredited names symbols that earned credit or did not change: {', '.join(wrong)}"
        )
    if stray := sorted(set(r.evidence) - set(r.changed_symbols)):
        out.append(f"evidence for symbols that did not change: {', '.join(stray)}")
    for symbol, credit in sorted(r.credits.items()):
        runs = [e.get("runs") for e in r.evidence.get(symbol, {}).values() if isinstance(e, dict)]
        if credit and not any(
            isinstance(x, list) and len(x) >= 2 and set(x) == {"pass"} for x in runs
        ):
            out.append(f"{symbol}: credited without a property that passed every run")
    out.extend(_evidence_problems(r))
    if r.dual_pin not in DUAL_PIN:
        out.append(f"unknown dual_pin {r.dual_pin!r}")
    elif (r.dual_pin == "drift") != ("R9" in r.rejection_codes):
        out.append(f"dual_pin {r.dual_pin!r} disagrees with the codes about R9")
    if r.override and not all(
        isinstance(r.override.get(k), str) and r.override.get(k) for k in _OVERRIDE_KEYS
    ):
        out.append(f"override: needs {', '.join(_OVERRIDE_KEYS)}")
    for n, obs in enumerate(r.flake_observations):
        if not all(isinstance(obs.get(k), str) and obs.get(k) for k in _FLAKE_KEYS):
            out.append(f"flake_observations[{n}]: needs {', '.join(_FLAKE_KEYS)}")
    return out


def _evidence_problems(r: Receipt) -> list[str]:
    """Credit is evidence: a credit needs a covering property whose runs executed the symbol and
    which, when the mutation stage ran, killed a mutant; the counts agree with the survivors.
    A receipt whose ``mutation`` entry records ``min_mutation_score`` (mutation v2) is held to
    the v2 arithmetic (:func:`_v2_counts`) and threshold (:func:`_v2_credit_problems`); an older
    one to v1's, ``len(survivors) == mutants - killed``."""
    out: list[str] = []
    mutated = bool(r.mutation.get("enabled")) if r.mutation else None
    v2 = bool(r.mutation) and "min_mutation_score" in r.mutation
    for symbol, by_prop in sorted(r.evidence.items()):
        for pid, e in sorted(by_prop.items()):
            if not isinstance(e, dict) or "mutants" not in e:
                continue
            if r.mutation and not v2 and any(k in e for k in _V2_KEYS):
                out.append(
                    f"{symbol} / {pid}: mutation v2 evidence, but the mutation entry records "
                    "no min_mutation_score"
                )
            if v2 or "scored" in e:  # "scored" alone: a v2 check stopped before scoring
                out.extend(f"{symbol} / {pid}: {p}" for p in _v2_counts(e))
                continue
            mutants, killed, survivors = e.get("mutants"), e.get("killed"), e.get("survivors")
            if not (
                isinstance(mutants, int)
                and isinstance(killed, int)
                and isinstance(survivors, list)
                and 0 <= killed <= mutants
                and len(survivors) == mutants - killed
            ):
                out.append(f"{symbol} / {pid}: mutants, killed and survivors disagree")
    if not r.mutation:
        return out  # a receipt from before the stage, or a check stopped before scoring
    threshold = _threshold(r.mutation) if v2 else None
    if v2 and threshold is None:
        out.append(
            "mutation: min_mutation_score is not a number in (0, 1], or controls_required is "
            "not required_controls(min_mutation_score)"
        )
    for symbol, credit in sorted(r.credits.items()):
        if not credit:
            continue
        shown = [e for e in r.evidence.get(symbol, {}).values() if isinstance(e, dict)]
        if not any(e.get("executed") is True for e in shown):
            out.append(f"{symbol}: credited, but no covering property executed it")
        elif mutated and not any(
            e.get("executed") is True and _int(e.get("killed")) >= 1 for e in shown
        ):
            out.append(f"{symbol}: credited, but no covering property killed a mutant of it")
        elif mutated and threshold is not None:
            out.extend(_v2_credit_problems(symbol, shown, *threshold))
    untrusted = r.mutation.get("untrusted")
    if isinstance(untrusted, dict):  # symbol -> why its mutation evidence was not trusted
        out.extend(
            f"{symbol}: credit given although its mutation evidence was not trusted"
            for symbol, credit in sorted(r.credits.items())
            if credit and untrusted.get(symbol)
        )
    elif untrusted and any(r.credits.values()):  # an older receipt: one reason for every symbol
        out.append("credit given although the mutation evidence was not trusted")
    if mutated is False and r.admit and not r.mutation.get("allow_unmutated"):
        out.append("admit is true with the mutation stage off and allow_unmutated not set")
    return out


#: Keys mutation v2 adds to a property's evidence (``seed`` only when the sample was capped).
_V2_KEYS = ("sites", "scored", "score", "crashed", "hung", "controls", "controls_failed")


def _int(value: object) -> int:
    """An evidence count, or -1 when it is not an integer (a bool is no count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _threshold(mutation: Mapping[str, Any]) -> tuple[float, int] | None:
    """(min_mutation_score, controls_required) when they are recorded and agree, else None."""
    s, n = mutation.get("min_mutation_score"), mutation.get("controls_required")
    if isinstance(s, bool) or not isinstance(s, int | float) or not 0 < s <= 1:
        return None
    return (float(s), _int(n)) if _int(n) == required_controls(float(s)) else None


def _v2_counts(e: Mapping[str, Any]) -> list[str]:
    """The arithmetic of one property's v2 mutation evidence."""
    missing = [k for k in _V2_KEYS if k not in e]
    if missing:
        return [f"mutation evidence lacks {', '.join(missing)}"]
    mutants, killed, scored, controls = (
        _int(e.get(k)) for k in ("mutants", "killed", "scored", "controls")
    )
    lists = ("survivors", "crashed", "hung", "controls_failed")
    if min(mutants, killed, scored, controls, _int(e.get("sites"))) < 0 or not all(
        _strings(e.get(k)) for k in lists
    ):
        return ["mutation evidence has a count that is not a non-negative integer or a list "
                "that is not a list of strings"]  # fmt: skip
    out: list[str] = []
    if killed > mutants:
        out.append(f"killed {killed} > mutants {mutants}")
    if scored != killed + len(e["survivors"]):
        out.append(f"scored {scored} is not killed + survivors = {killed + len(e['survivors'])}")
    if mutants != scored + len(e["crashed"]) + len(e["hung"]):
        out.append(f"mutants {mutants} is not scored + crashed + hung")
    score = e.get("score")
    if scored == 0 and score is not None:
        out.append(f"score {score!r} with no mutant scored (expected null)")
    elif scored and (
        isinstance(score, bool)
        or not isinstance(score, int | float)
        or not math.isclose(score, killed / scored, rel_tol=1e-9)
    ):
        out.append(f"score {score!r} is not killed/scored = {killed / scored:g}")
    return out


def _v2_credit_problems(
    symbol: str, shown: Sequence[Mapping[str, Any]], min_score: float, controls: int
) -> list[str]:
    """A v2 credit needs one covering property that executed the symbol, killed ≥ 1 mutant,
    reached the recorded min_mutation_score, ran the controls required and failed none."""
    why: list[str] = []
    for e in shown:
        killed, scored = _int(e.get("killed")), _int(e.get("scored"))
        if e.get("executed") is not True or killed < 1:
            continue
        if scored < 1 or killed / scored < min_score:
            why.append(f"score {killed}/{max(scored, 0)} below min_mutation_score {min_score:g}")
        elif _int(e.get("controls")) < controls:
            why.append(f"{_int(e.get('controls'))} controls, {controls} required")
        elif e.get("controls_failed") != []:
            why.append("a mutation control failed")
        else:
            return []
    return [f"{symbol}: credited, but no covering property qualifies ({'; '.join(why)})"]


_FLAKE_KEYS = ("flake_id", "test_id", "signature")
_OVERRIDE_KEYS = ("by", "reason", "recorded_at")


def receipt_problems(r: Receipt) -> list[str]:
    """Where a receipt contradicts itself (empty: consistent). Pure; v1 and v2."""
    out: list[str] = []
    if set(r.credits) != set(r.changed_symbols):
        out.append("credits and changed_symbols name different symbols")
    if any(c not in (0, 1) for c in r.credits.values()):
        out.append("a credit other than 0 or 1")
    if r.judge not in ("", "on", "off"):
        out.append(f"judge {r.judge!r} is neither on nor off")
    credited = sum(1 for c in r.credits.values() if c == 1)
    expected = round(credited / len(r.credits), 6) if r.credits else 0.0
    if r.coverage != expected:
        out.append(f"coverage {r.coverage:g} is not credited/changed = {expected:g}")
    if r.rejection_codes != [c for c in REJECTION_CODES if c in r.rejection_codes]:
        out.append(f"rejection codes unknown, repeated or out of order: {r.rejection_codes}")
    if r.posture not in POSTURES:
        out.append(f"unknown posture {r.posture!r}")
    if r.fixture_status not in ("", *FIXTURE_STATUSES):
        out.append(f"unknown fixture_status {r.fixture_status!r}")
    if r.admit and not (
        r.decision == "admit"
        and r.coverage == 1.0
        and r.fixture_status == "match"
        and not r.rejection_codes
        and r.posture in ("review", "human_review")
    ):
        out.append("admit is true, but the decision, coverage, fixtures, codes or posture say no")
    if r.schema == RECEIPT_V2:
        out.extend(_v2_problems(r, {s for s, c in r.credits.items() if c == 0}))
    return out
