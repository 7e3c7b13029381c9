"""What each rejection code and posture means, in words a person reads after a check.

One table in code, the same words as the reference page of codes (``docs/reference/codes.md``:
a unit test holds every column of the page's three tables to :data:`CODES`, :data:`NEXT_STEPS`,
:data:`DECISIONS` and :data:`POSTURES`), so an installed copy without the docs still has them:
the summary prints one line per code and one ``next`` line per code from here, the first line of
a rejected check names its posture with :data:`POSTURE_WORDS`, and ``patchgate explain NAME``
prints :func:`explain` of a code, a decision or a posture.
"""

from __future__ import annotations

import re
from types import MappingProxyType

__all__ = [
    "CODES",
    "DECISIONS",
    "NEXT_STEPS",
    "POSTURES",
    "POSTURE_WORDS",
    "code_line",
    "decision_next",
    "explain",
    "known_names",
    "next_line",
    "posture_next",
    "posture_words",
    "unreachable_words",
]

_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")

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

#: code -> what to do next, exactly as the reference page's last column says it.
NEXT_STEPS = MappingProxyType(
    {
        "R1": (
            "author: keep the patch to symbols the properties cover, or make it pass the "
            "property that covers it. Operator: add a property to `pins/properties.json` (an "
            "eligible class, a real predicate) that covers the symbol, in the base"
        ),
        "R2": (
            "author: do not touch fixtures. Operator: if the fixtures really must change, change "
            "them and re-pin them in the base (`patchgate digest` shows the new hashes)"
        ),
        "R3": (
            "operator: a real predicate that runs; a flake excuses a known failure, it never "
            "proves anything"
        ),
        "R4": (
            "author: remove the citation and fix the failure. Operator: renew or list the flake "
            "in the base if it is genuinely known"
        ),
        "R5": (
            "operator: replace it with a computed invariant (the example repository's "
            "`base_repair_invoice_property.patch` does exactly that)"
        ),
        "R6": "run the check with a local executor (`--executor`)",
        "R7": (
            "author: send the code change alone. Operator: review test changes as their own base "
            "change"
        ),
        "R8": "author: never edit pins. Operator: pins change only in a reviewed base commit",
        "R9": (
            "operator: review the two pins and the property; the drift is recorded in "
            "`drift.json` (exit 3)"
        ),
    }
)

#: admission decision -> (matrix row, when, what to do next), as the reference page says.
DECISIONS = MappingProxyType(
    {
        "reject_provenance": (
            "provenance",
            (
                "the patch is empty, not a unified diff, does not apply to `--base` (`git "
                "apply`, no fuzz), or `--draft-id` / `--drafter` is missing or invalid"
            ),
            (
                "author: send a patch made against `--base`; operator: pass `--draft-id` and "
                "`--drafter {human,model_lane}`"
            ),
        ),
        "reject_fixture_role": (
            "fixture_role",
            (
                "no valid signature over the fixture digest by an **operator** key: the signer "
                "refused, the signature does not verify, or the key is not an operator key of "
                "the keyring (an executor key included)"
            ),
            "operator: check the signer's key and `--operator-keyring`",
        ),
        "reject_class": (
            "class",
            (
                "a property that covers a changed symbol has an ineligible class "
                "(`bounded_time`, `external_probe`) or only assertions that cannot fail "
                "(assertion class `tautology`): `assert True`, `x == x`, constant comparisons, "
                'an always-true tuple, lambda or f-string (`assert (cond, "msg")`), `all([])`, '
                "any assertion whose truth does not depend on the value the code returned "
                "(`(f(x) >= 0) | True`, `isinstance(f(x), object)`, `s >= 0 or s < 0`, "
                "`max(f(x), 0) >= 0`, `pytest.approx(0, abs=1e300)`: the probe rule), a "
                "helper that returns its argument or a constant, and any assertion that never "
                "runs or whose failure is swallowed (under `if False:`, after `return`, in a "
                "loop over `[]`, inside `try: ... except AssertionError: pass`, "
                "`contextlib.suppress(AssertionError)` or `pytest.raises(AssertionError)`) — the "
                "full list is in [the classifier "
                "rules](../gate-analysis.md#one-verdict-per-assertion-clientanalysisclassifyassertion_rulespy)"
            ),
            (
                "operator: give the symbol a property of an eligible class with a real predicate "
                "that runs"
            ),
        ),
        "admit": (
            "admit",
            "otherwise: the suite (every pinned property except `external_probe`) may start",
            "—",
        ),
    }
)

#: posture -> (exit code, what it means, typical cause, what to do next), as the page says.
POSTURES = MappingProxyType(
    {
        "reject_admission": (
            1,
            (
                "provenance was refused, or the admission matrix said `reject_fixture_role` / "
                "`reject_class`"
            ),
            "the decision in `admission.json` says which",
            (
                "see that decision: `patchgate explain reject_provenance` (or "
                "`reject_fixture_role`, `reject_class`)"
            ),
        ),
        "reject_pin_mutation": (
            1,
            "`R8`",
            "the patch edits pins or the gate's configuration",
            "send the patch without the pin change",
        ),
        "reject_oracle_moved": (
            1,
            "`R7`",
            "the patch edits tests, properties or the harness",
            "send the code change alone",
        ),
        "reject_unscored": (
            2,
            (
                "nothing was scored: the fixture bytes do not match the base pin (`R2`), or an "
                "executor refused the request (for example the fixture digest it recomputed from "
                "the bytes it mounted differs from the signed one)"
            ),
            "the patch touches fixtures; an executor with other fixture bytes",
            "see `R2`; for an executor refusal, the reason is in the summary",
        ),
        "unavailable": (
            4,
            (
                "infrastructure failed and nothing was decided: the signer is unreachable, or a "
                "local run has only a transport record"
            ),
            "a daemon down, a deadline, a sandbox that did not start",
            "fix the infrastructure and run the check again; the patch was not judged",
        ),
        "reject_fixture_drift": (
            3,
            "`R9`",
            "a property that depends on which pin's data it reads",
            "operator: review the pins and the property",
        ),
        "reject_property_miss": (
            1,
            "a suite property failed in both runs (a defect, whatever the credit)",
            "the patch broke an invariant",
            "author: fix the patch; the failure signature is in `property_ledger.json`",
        ),
        "reject_credit": (
            1,
            (
                "the suite passed but credit is short: coverage below 1, no changed production "
                "symbol at all, a rejection code, or a property unstable or not passed in both "
                "runs"
            ),
            (
                "a changed symbol without a covering real predicate (`R1`, `R5`, ...); a patch "
                "that changes only non-production files"
            ),
            "see the codes; a patch with no changed production symbol is never a pass",
        ),
        "review": (
            0,
            (
                "passed, and either a second pin agrees, or the only failure was a valid "
                "pre-listed flake whose failure matched its signature (recorded, never credit)"
            ),
            "—",
            "a person reviews before merging",
        ),
        "human_review": (
            0,
            (
                "passed on one pin: admitted, full coverage, fixtures match, no code, every "
                "suite property passed both runs"
            ),
            "—",
            "a person reviews before merging",
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
    """Markdown to plain text: no backticks, a link as its words."""
    return _LINK.sub(r"\1", text).replace("`", "")


def code_line(code: str) -> str:
    """``R1 missing property: a changed symbol earned no credit (...)`` (backticks dropped)."""
    name, meaning = CODES.get(code, ("unknown code", "not a code this version knows"))
    return f"{code} {name}: {_plain(meaning)}"


def posture_words(posture: str) -> str:
    """The posture in words; an unknown posture is named as it is."""
    return POSTURE_WORDS.get(posture, posture)


def next_line(code: str) -> str:
    """``R1: author: keep the patch ...`` (backticks dropped); an unknown code says so."""
    return f"{code}: {_plain(NEXT_STEPS.get(code, 'not a code this version knows'))}"


def decision_next(decision: str) -> str:
    """What to do next after an admission decision that is not ``admit`` (empty otherwise)."""
    found = DECISIONS.get(decision)
    return _plain(found[2]) if found is not None and decision != "admit" else ""


def posture_next(posture: str) -> str:
    """What to do next after a posture (plain text; empty for an unknown one)."""
    found = POSTURES.get(posture)
    return _plain(found[3]) if found is not None else ""


_WHY = (
    ("No such file or directory", "no socket at that path"),
    ("Connection refused", "connection refused: nothing listens there"),
    ("Permission denied", "permission denied on the socket"),
)


def unreachable_words(*, who: str, address: str, kind: str, detail: str, lane: str = "") -> str:
    """One line for a daemon that did not answer, in words: which daemon, its address, the lane
    its settings came from (``lane``; empty: flags), why (never the raw gRPC text) and what to
    do. ``kind`` is the transport kind (``unavailable``, ``deadline``, ...)."""
    why = next((words for raw, words in _WHY if raw in detail), "")
    if not why:
        why = {"deadline": "no answer before the deadline"}.get(kind, kind.replace("_", " "))
    where = f" of the lane {lane}" if lane else ""
    line = f"{who} at {address}{where} is unreachable ({why})"
    if kind == "unavailable":
        up = f"patchgate up --lane {lane}" if lane and lane != "local" else "patchgate up"
        line += f"; is the lane up? start it with `{up}`, or pass the daemon's address"
    return line


def known_names() -> list[str]:
    """Every name :func:`explain` knows: the codes, the admission decisions, the postures."""
    return [*CODES, *DECISIONS, *POSTURES]


def explain(name: str) -> dict[str, object] | None:
    """What ``name`` (``R1``..``R9``, an admission decision or a posture; a code in any case) is
    and what to do next, as plain text fields; None for a name this version does not know."""
    code = name.strip().upper()
    if code in CODES:
        title, meaning = CODES[code]
        return {
            "name": code, "kind": "rejection code", "title": title,
            "meaning": _plain(meaning), "next": _plain(NEXT_STEPS[code]),
        }  # fmt: skip
    key = name.strip().lower()
    if key in DECISIONS:
        row, when, todo = DECISIONS[key]
        return {
            "name": key, "kind": "admission decision", "title": f"matrix row {row}",
            "meaning": _plain(when), "next": _plain(todo),
        }  # fmt: skip
    if key in POSTURES:
        exit_code, meaning, cause, todo = POSTURES[key]
        return {
            "name": key, "kind": "posture", "title": POSTURE_WORDS.get(key, key),
            "meaning": _plain(meaning), "cause": _plain(cause), "next": _plain(todo),
            "exit_code": exit_code,
        }  # fmt: skip
    return None
