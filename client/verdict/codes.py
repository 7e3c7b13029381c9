"""What each rejection code and posture means, in words a person reads after a check.

One table in code, the same words as the reference page of codes (``docs/reference/codes.md``:
a unit test holds the page's "name" and "what it means" columns to :data:`CODES`). The summary
prints one line per code from here; the first line of a rejected check names its posture with
:data:`POSTURE_WORDS`.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["CODES", "POSTURE_WORDS", "code_line", "posture_words"]

#: code -> (name, what it means), exactly as the reference page's table says it.
CODES = MappingProxyType(
    {
        "R1": (
            "missing property",
            "a changed symbol earned no credit (`credits` 0; `uncredited` says why)",
        ),
        "R2": (
            "fixture hash mismatch",
            "the fixture bytes the suite would see in the patched tree differ from "
            "`pins/fixtures.json` of the base, or a fixture file is missing, unpinned (extra) or "
            "unsafe (a symlink leaving the tree, a FIFO). Nothing is scored (exit 2)",
        ),
        "R3": (
            "freeze as oracle",
            "a freeze citation is the only signal offered for a changed symbol: every property "
            "that covers it is skipped or xfailed citing a flake id. Beside a real predicate "
            '(passing or not) a citation is listed in `freeze_citations` and judged "a freeze '
            'citation, never evidence", without `R3`',
        ),
        "R4": (
            "unknown, expired or mismatched freeze id",
            "a pinned property or a touched test cites a flake id (a skip/xfail reason) that is "
            "not in the base `pins/flakes.json`, from a test the flake does not list, without "
            "the flake's signature in the reason, outside `[opened_on, expires_on)` or on or "
            "after its `review_by`; or the failure observed does not match the signature",
        ),
        "R5": (
            "fixture equality as check",
            "a property offered for a changed symbol compares a result with stored fixture bytes "
            '(`assert total == load_fixture("invoice.json")`), which proves only that the code '
            "reproduces a file",
        ),
        "R6": (
            "remote-only evidence",
            "the only passing results for a symbol came from a remote lane, which confirms and "
            "never credits",
        ),
        "R7": (
            "oracle moved",
            "the patch touches the oracle: a path under `oracle_paths` (default `tests/`, "
            "`properties/`, `pins/`), a harness file (`conftest.py`, `pytest.ini`, a plugin, a "
            "`.pth`, ...), the test function of a pinned property, or — while no trustworthy "
            "record says which files the runs read (every run today, `--judge off`) — **any "
            "changed file that is neither production source nor a pinned fixture** (a data "
            "table, a `README.md`, an `exclude` entry, an inert `pyproject.toml` table: a "
            "property may read it). Property results could not count, so nothing runs",
        ),
        "R8": (
            "pin mutation",
            "the patch edits a pin file, adds a freeze id, or edits the gate's own configuration "
            "(`[tool.patchgate]`, `patchgate.toml`). Nothing runs",
        ),
        "R9": (
            "fixture drift between two pins",
            "with `--second-pin`, the suite gave different statuses on the two pins, or the "
            "second pin's bytes (the patched tree's fixtures, `--second-pin-tree` or "
            "`--second-pin-rev`) do not satisfy it. A second pin that copies the first (same "
            "digest or pin id) is refused instead (`dual_pin: refused`, no `R9`)",
        ),
    }
)

#: posture -> the words after ``REJECTED:`` (or after ``ADMITTED`` for the two that admit).
POSTURE_WORDS = MappingProxyType(
    {
        "reject_admission": "not admitted (provenance, the fixture signature or a property class)",
        "reject_pin_mutation": "the patch edits pins or the gate's configuration (R8)",
        "reject_oracle_moved": "the patch edits tests, properties or the harness (R7)",
        "reject_unscored": "nothing was scored (fixture bytes or an executor refusal)",
        "unavailable": "infrastructure unavailable; the patch was not judged",
        "reject_fixture_drift": "the suite drifts between two fixture pins (R9)",
        "reject_property_miss": "a suite property failed both runs",
        "reject_credit": "the suite passed but credit is short",
        "review": "passed; ready for a person's review",
        "human_review": "passed on one pin; ready for a person's review",
    }
)


def _plain(text: str) -> str:
    return text.replace("`", "")


def code_line(code: str) -> str:
    """``R1 missing property: a changed symbol earned no credit (...)`` (backticks dropped)."""
    name, meaning = CODES.get(code, ("unknown code", "not a code this version knows"))
    return f"{code} {name}: {_plain(meaning)}"


def posture_words(posture: str) -> str:
    """The posture in words; an unknown posture is named as it is."""
    return POSTURE_WORDS.get(posture, posture)
