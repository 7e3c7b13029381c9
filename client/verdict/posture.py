"""The merge table: what the steps found -> one posture, ``admit`` and the exit code.

First matching row wins; the rows follow the order of a check (docs/architecture.md: provenance,
oracle and pins, fixture digest, signature, admission, run, stability, credit), so a later step
never heals an earlier failure::

    row                 condition                                       posture               exit
    provenance          decision reject_provenance                      reject_admission      1
    pin_mutation        R8                                              reject_pin_mutation   1
    oracle_moved        R7                                              reject_oracle_moved   1
    fixture             fixture digest refused (R2)                     reject_unscored       2
    signer_transport    signer unreachable: nothing scored              unavailable           4
    admission           decision reject_fixture_role / reject_class     reject_admission      1
    executor_refused    an executor refused the request: nothing ran    reject_unscored       2
    local_transport     a local run missing (transport)                 unavailable           4
    drift               R9 (two pins disagree)                          reject_fixture_drift  3
    property_miss       a suite property failed both runs               reject_property_miss  1
    no_fixtures         fixture_status not_applicable: no fixture, so
                        no evidence of which bytes the suite saw        reject_credit         1
    credit              coverage < 1, no changed symbol, any code, an
                        unstable / unpassed suite property, or the
                        mutation stage off without allow_unmutated,
                        or --judge off without allow_judge_off          reject_credit         1
    flake               passed except a matching flake observation      review                0
    pins_agree          passed, and a second pin agrees                 review                0
    passed              passed on one pin                               human_review          0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from patchgate.vocabulary import Posture

__all__ = ["EXIT_CODES", "Facts", "Verdict", "merge"]

EXIT_CODES: dict[Posture, int] = {
    "reject_unscored": 2,
    "reject_admission": 1,
    "reject_oracle_moved": 1,
    "reject_pin_mutation": 1,
    "reject_fixture_drift": 3,
    "reject_property_miss": 1,
    "reject_credit": 1,
    "unavailable": 4,
    "human_review": 0,
    "review": 0,
}


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What the pipeline established, step by step (defaults: the step was not reached)."""

    decision: str = ""
    codes: Sequence[str] = ()
    fixture_refused: bool = False
    signer_transport: bool = False
    executor_refused: bool = False
    local_transport: bool = False
    property_misses: Sequence[str] = ()
    coverage: float = 0.0
    changed_symbols: int = 0
    suite_passed: bool = False
    flake_observed: bool = False
    second_pin_agrees: bool | None = None
    #: the mutation stage was off and the reviewed configuration does not allow that
    unmutated: bool = False
    #: fixture_status ``not_applicable`` (no fixture root and an empty pin): never admitted
    no_fixtures: bool = False
    #: the runs were single-process (``--judge off``) and the reviewed configuration does not
    #: allow that
    unjudged: bool = False


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The merged verdict: posture, the row that fired, ``admit`` and the exit code."""

    posture: Posture
    row: str
    admit: bool
    exit_code: int


def _row(f: Facts) -> tuple[str, Posture]:
    codes = set(f.codes)
    table: list[tuple[bool, str, Posture]] = [
        (f.decision == "reject_provenance", "provenance", "reject_admission"),
        ("R8" in codes, "pin_mutation", "reject_pin_mutation"),
        ("R7" in codes, "oracle_moved", "reject_oracle_moved"),
        (f.fixture_refused or "R2" in codes, "fixture", "reject_unscored"),
        (f.signer_transport, "signer_transport", "unavailable"),
        (f.decision != "admit", "admission", "reject_admission"),
        (f.executor_refused, "executor_refused", "reject_unscored"),
        (f.local_transport, "local_transport", "unavailable"),
        ("R9" in codes, "drift", "reject_fixture_drift"),
        (bool(f.property_misses), "property_miss", "reject_property_miss"),
        (f.no_fixtures, "no_fixtures", "reject_credit"),
    ]
    for hit, row, posture in table:
        if hit:
            return row, posture
    if (
        codes
        or f.changed_symbols == 0
        or f.coverage < 1.0
        or not f.suite_passed
        or f.unmutated
        or f.unjudged
    ):
        return "credit", "reject_credit"
    if f.flake_observed:
        return "flake", "review"
    if f.second_pin_agrees:
        return "pins_agree", "review"
    return "passed", "human_review"


def merge(facts: Facts) -> Verdict:
    """Apply the merge table. ``admit`` is true only for the rows whose exit code is 0."""
    row, posture = _row(facts)
    code = EXIT_CODES[posture]
    return Verdict(posture=posture, row=row, admit=code == 0, exit_code=code)
