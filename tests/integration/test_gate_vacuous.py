"""Vacuous properties through ``patchgate check`` with a real signer and executor (issue 15).

A person's base commit pins properties that cannot fail (``tautology``: refused at admission
when they cover a changed symbol), that show no predicate over the code (``opaque``: they run,
and earn no credit, "no visible predicate"), or whose expected values come from a fixture file
through ``@pytest.mark.parametrize`` (``fixture_eq``: ``R5``). The patch is the example's
harmless ``prorate_refactor.patch``, which changes ``billing.prorate``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fixtures_gate import BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
TEST_FILE = "properties/test_billing.py"

VACUOUS = {
    "tuple": 'def test_vacuous():\n    assert (prorate(Decimal(1), 1, 2) < 0, "never checked")\n',
    "if_debug": "DEBUG = False\n\n\ndef test_vacuous():\n    if DEBUG:\n"
    "        assert prorate(Decimal(1), 1, 2) >= 0\n",
    "swallowed": "def test_vacuous():\n    try:\n        assert prorate(Decimal(1), 1, 2) < 0\n"
    "    except AssertionError:\n        pass\n",
    "empty_loop": "def test_vacuous():\n    for used in []:\n"
    "        assert prorate(Decimal(1), used, 2) < 0\n",
    "constant_helper": "def holds(value):\n    return value\n\n\n"
    "def test_vacuous():\n    assert holds(True)\n",
    "raises_own_assert": "import pytest\n\n\ndef test_vacuous():\n"
    "    with pytest.raises(AssertionError):\n        assert prorate(Decimal(1), 1, 2) < 0\n",
}

OPAQUE_AND_FIXTURE = """
from unittest import mock


def positive(value):
    return value > 0


def test_prorate_mocked():
    sink = mock.MagicMock()
    sink(prorate(Decimal(10), 1, 30))
    sink.assert_called_once()


def test_prorate_helper():
    assert positive(30)


@pytest.mark.parametrize("line", load_fixture("orders_min.json")["orders"][1]["lines"])
def test_prorate_table(line):
    assert prorate(Decimal(line["unit_price"]), 30, 30) == Decimal(line["unit_price"])
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=person", "-c", "user.email=p@example.org", *args],
        check=True, capture_output=True,
    )  # fmt: skip


def _pin(pid: str, function: str) -> dict[str, Any]:
    return {
        "id": pid,
        "claim": f"{function} (a vacuous property, issue 15)",
        "class": "pure_fn",
        "covers": ["billing.prorate"],
        "command": [*PYTEST, f"{TEST_FILE}::{function}"],
    }


def _base_commit(
    repo: BillingRepo, source: str, pins: list[dict[str, Any]], *, only: bool = False
) -> None:
    """A person's base change: ``source`` appended to the property module, ``pins`` pinned;
    ``only``: the example's own prorate properties no longer cover it."""
    tests = repo.path / TEST_FILE
    header = "import pytest\n\n" if "pytest." in source and "import pytest" not in source else ""
    tests.write_text(tests.read_text() + "\n\n" + header + source)
    pin_file = repo.path / "pins" / "properties.json"
    doc = json.loads(pin_file.read_text())
    if only:
        for prop in doc["properties"]:
            if prop["covers"] == ["billing.prorate"]:
                prop["covers"] = []
    doc["properties"].extend(pins)
    pin_file.write_text(json.dumps(doc, indent=2) + "\n")
    _git(repo.path, "add", "-A")
    _git(repo.path, "commit", "-qm", "a property that cannot fail")


@pytest.mark.parametrize("form", sorted(VACUOUS))
def test_a_vacuous_property_covering_a_changed_symbol_is_reject_class(
    gate: Gate, billing_repo: BillingRepo, form: str
) -> None:
    _base_commit(billing_repo, VACUOUS[form], [_pin("billing.prorate.vacuous", "test_vacuous")])
    run = gate.check(billing_repo, "prorate_refactor.patch")
    admission = run.file("admission.json")
    assert run.code == 1, run.stdout + run.stderr
    assert (admission["decision"], admission["row"]) == ("reject_class", "class")
    assert any(
        "billing.prorate.vacuous" in r and "tautological" in r for r in admission["reasons"]
    ), admission["reasons"]
    assert (run.receipt["decision"], run.receipt["admit"]) == ("reject_class", False)
    assert "property_ledger.json" not in run.files()  # nothing ran


def test_opaque_properties_run_and_earn_no_credit_and_fixture_tables_are_r5(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    pins = [
        _pin("billing.prorate.mocked", "test_prorate_mocked"),
        _pin("billing.prorate.helper", "test_prorate_helper"),
        _pin("billing.prorate.table", "test_prorate_table"),
    ]
    _base_commit(billing_repo, OPAQUE_AND_FIXTURE, pins, only=True)
    run = gate.check(billing_repo, "prorate_refactor.patch")
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert r["decision"] == "admit"  # opaque is not refused at admission: it runs
    statuses = run.file("property_ledger.json")["status_by_id"]
    assert {pid: statuses[pid] for pid in ("billing.prorate.mocked", "billing.prorate.helper")} == {
        "billing.prorate.mocked": "pass",
        "billing.prorate.helper": "pass",
    }
    assert (r["credits"]["billing.prorate"], r["coverage"]) == (0, 0.0)
    why = r["uncredited"]["billing.prorate"]
    assert "billing.prorate.mocked: no visible predicate" in why
    assert "billing.prorate.helper: no visible predicate" in why
    assert "billing.prorate.table: fixture equality only (R5)" in why
    assert {"R1", "R5"} <= set(r["rejection_codes"])
    assert (r["posture"], r["admit"]) == ("reject_credit", False)
