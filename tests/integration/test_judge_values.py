"""Values that cannot lie (issue 39), attacked through ``patchgate check`` with a real signer, a
real executor and real containers. The base adds ``billing/ledger.py`` (a NamedTuple, an Enum, a
dataclass and a production exception) and five properties of it; each attack is a regression of
one of them plus a trick that made the old judge see a field, a type or an exception production
code would not produce (each trick admitted its regression with credit before this issue: the
judge passed what one process fails). Under the judge each is a property miss (``fail`` or
``error``), never a pass; the honest refactor of the same functions passes every property.

Cheap on purpose, as ``test_judge_attacks.py``: one daemon pair for the module, ``--mutants 0``.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.attacks.repos import PYTEST, build, git
from tests.integration.fixtures_gate import BillingRepo, Gate, GateRun, own_gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]

LEDGER = '''\
"""Ledger entries: a split, a state, an entry and the charge's refusal."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import typing
from collections.abc import AsyncIterator, Iterable
from decimal import Decimal

__all__ = ["Entry", "LedgerError", "Split", "State", "charge", "settle", "settle_all", "split"]


class Split(typing.NamedTuple):
    net: Decimal
    fee: Decimal


class State(enum.Enum):
    OPEN = "open"
    PAID = "paid"


@dataclasses.dataclass(frozen=True)
class Entry:
    cents: int
    state: State


class LedgerError(ValueError):
    """A charge the ledger refuses."""


def split(amount: Decimal) -> Split:
    """The amount less a 3 % fee, and the fee."""

    def fee_of(value: Decimal) -> Decimal:
        return (value * Decimal("0.03")).quantize(Decimal("0.01"))

    fee = fee_of(amount)
    return Split(amount - fee, fee)


def settle(cents: int) -> Entry:
    """An entry of ``cents``: paid unless negative."""
    return Entry(cents, State.PAID if cents >= 0 else State.OPEN)


async def settle_all(amounts: Iterable[int]) -> AsyncIterator[Entry]:
    """An entry of every amount, settled one at a time."""
    for cents in amounts:
        await asyncio.sleep(0)
        yield settle(cents)


def charge(cents: int) -> int:
    """``cents`` when it may be charged; a negative charge is refused."""
    if cents < 0:
        raise LedgerError("a negative charge")
    return cents
'''

PROPERTIES = '''\
"""Properties of the ledger, reviewed by a person."""

from decimal import Decimal

import pytest

from billing.ledger import Entry, State, charge, settle, split


def test_split_adds_up():
    for cents in range(0, 5000, 37):
        amount = Decimal(cents) / 100
        s = split(amount)
        assert s.net + s.fee == amount
        assert s.fee >= 0


def test_settle_state():
    for cents in range(-40, 40):
        assert settle(cents).state == (State.PAID if cents >= 0 else State.OPEN)


def test_settle_keeps_the_entry():
    for cents in range(-40, 40):
        assert settle(cents) == Entry(cents, State.PAID if cents >= 0 else State.OPEN)


def test_charge_refuses_negative():
    for cents in (-1, -10, -500):
        with pytest.raises(ValueError):
            charge(cents)
    assert charge(3) == 3
'''

INSIDE_TESTS = '''\
"""A property kept inside the production package (billing/tests/), async as the code is."""

import asyncio

from billing.ledger import State, settle_all


def test_settle_all_in_order():
    async def collect():
        return [entry async for entry in settle_all(range(-3, 3))]

    got = asyncio.run(collect())
    assert [e.cents for e in got] == list(range(-3, 3))
    assert [e.state for e in got] == [State.OPEN] * 3 + [State.PAID] * 3
'''

PROPS = {  # property id -> (test name, covered symbol)
    "ledger.split": ("test_split_adds_up", "billing.ledger.split"),
    "ledger.settle_state": ("test_settle_state", "billing.ledger.settle"),
    "ledger.settle_entry": ("test_settle_keeps_the_entry", "billing.ledger.settle"),
    "ledger.charge": ("test_charge_refuses_negative", "billing.ledger.charge"),
    "ledger.settle_all": (
        "billing/tests/test_ledger_inside.py::test_settle_all_in_order",
        "billing.ledger.settle_all",
    ),
}

# Each attack: (old text, new text) replacements of LEDGER, and the property that must miss.
ATTACKS: dict[str, tuple[list[tuple[str, str]], str]] = {
    # the fee's sign lost; __iter__ yields the honest pair, which the old record was built from
    "namedtuple_iter": (
        [
            (
                """    fee: Decimal
""",
                """    fee: Decimal

    def __iter__(self):
        return iter((self.net + 2 * self.fee, -self.fee))
""",
            ),
            ("""    return Split(amount - fee, fee)""", """    return Split(amount + fee, -fee)"""),
        ],
        "ledger.split",
    ),
    # a negative entry's state is a namesake member: same module, qualname, name and value
    "enum_namesake": (
        [
            (
                """@dataclasses.dataclass(frozen=True)
class Entry:""",
                """_Shadow = enum.Enum("State", {"OPEN": "open", "PAID": "paid"}, module=__name__)


@dataclasses.dataclass(frozen=True)
class Entry:""",
            ),
            (
                """    return Entry(cents, State.PAID if cents >= 0 else State.OPEN)""",
                """    return Entry(cents, State.PAID if cents >= 0 else _Shadow.OPEN)""",
            ),
        ],
        "ledger.settle_state",
    ),
    # the amount's sign lost; the field taken out of comparison after the class was made
    "dataclass_hidden_field": (
        [
            (
                """class LedgerError(ValueError):""",
                """Entry.__dataclass_fields__["cents"].compare = False


class LedgerError(ValueError):""",
            ),
            (
                """    return Entry(cents, State.PAID""",
                """    return Entry(abs(cents), State.PAID""",
            ),
        ],
        "ledger.settle_entry",
    ),
    # the refusal raised as a class that names itself builtins.ValueError
    "exception_namesake": (
        [
            (
                '''class LedgerError(ValueError):
    """A charge the ledger refuses."""''',
                '''class LedgerError(Exception):
    """A charge the ledger refuses."""


LedgerError.__module__ = "builtins"
LedgerError.__qualname__ = LedgerError.__name__ = "ValueError"''',
            ),
        ],
        "ledger.charge",
    ),
    # no refusal at all: a value the wire cannot carry, whose refusal was a ValueError
    "wire_refusal_caught": (
        [
            (
                """    if cents < 0:
        raise LedgerError("a negative charge")""",
                """    if cents < 0:
        loop: list[object] = []
        loop.append(loop)
        return loop  # type: ignore[return-value]""",
            ),
        ],
        "ledger.charge",
    ),
}

HONEST = [  # the same functions refactored faithfully, the same shapes
    (
        """        return (value * Decimal("0.03")).quantize(Decimal("0.01"))""",
        """        return (value * 3 / 100).quantize(Decimal("0.01"))""",
    ),  # the nested helper only
    (
        """    return Entry(cents, State.PAID if cents >= 0 else State.OPEN)""",
        """    state = State.OPEN if cents < 0 else State.PAID
    return Entry(cents=cents, state=state)""",
    ),
    (
        """    if cents < 0:
        raise LedgerError("a negative charge")
    return cents""",
        """    if cents >= 0:
        return cents
    raise LedgerError(f"a negative charge: {cents}")""",
    ),
    (
        """    for cents in amounts:
        await asyncio.sleep(0)
        yield settle(cents)""",
        """    for cents in list(amounts):
        await asyncio.sleep(0)
        entry = settle(cents)
        yield entry""",
    ),  # an async generator, under a property inside the package
]


@pytest.fixture(scope="module")
def values_gate(docker_engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gate]:
    with own_gate(tmp_path_factory.mktemp("judge-values")) as gate:
        yield gate


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The billing example with the ledger, its properties and a short clock bound."""
    repo = build("billing", tmp_path_factory.mktemp("values-base") / "billing")
    (repo / "billing" / "ledger.py").write_text(LEDGER, encoding="utf-8")
    (repo / "properties" / "test_ledger.py").write_text(PROPERTIES, encoding="utf-8")
    (repo / "billing" / "tests").mkdir()
    (repo / "billing" / "tests" / "__init__.py").write_text("", encoding="utf-8")
    inside = repo / "billing" / "tests" / "test_ledger_inside.py"
    inside.write_text(INSIDE_TESTS, encoding="utf-8")
    pins = repo / "pins" / "properties.json"
    doc = json.loads(pins.read_text(encoding="utf-8"))
    for pid, (test, symbol) in PROPS.items():
        doc["properties"].append({
            "id": pid, "claim": f"the ledger's {test}", "class": "pure_fn", "covers": [symbol],
            "command": [*PYTEST, test if "::" in test else f"properties/test_ledger.py::{test}"],
        })  # fmt: skip
    pins.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    fixtures = repo / "pins" / "fixtures.json"
    fdoc = json.loads(fixtures.read_text(encoding="utf-8"))
    fdoc["clock_bound_ms"] = 5000
    fixtures.write_text(json.dumps(fdoc, indent=2) + "\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the ledger and its properties")
    return repo


def _patch(base: Path, tmp: Path, name: str, edits: list[tuple[str, str]]) -> Path:
    """The diff of ``edits`` to the ledger, as a patch file."""
    scratch = tmp / f"scratch-{name}"
    shutil.copytree(base, scratch, symlinks=True)
    path = scratch / "billing" / "ledger.py"
    text = path.read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, (name, old)
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    out = tmp / f"{name}.patch"
    out.write_text(git(scratch, "diff"), encoding="utf-8")
    return out


def _check(gate: Gate, base: Path, tmp: Path, name: str, edits: list[tuple[str, str]]) -> GateRun:
    repo = tmp / f"repo-{name}"
    shutil.copytree(base, repo, symlinks=True)
    return gate.check(BillingRepo(repo), _patch(base, tmp, name, edits), mutants="0")


def _statuses(run: GateRun) -> dict[str, str]:
    ledger: dict[str, Any] = run.file("property_ledger.json")
    return {p: ledger["status_by_id"][p] for p in PROPS if p in ledger["status_by_id"]}


def _failures(run: GateRun, pid: str) -> str:
    runs = run.file("property_ledger.json")["runs"]
    return "\n".join(r["failure_signature"] for r in runs if r["property_id"] == pid)


def test_the_honest_refactor_passes_every_ledger_property(
    values_gate: Gate, base: Path, tmp_path: Path
) -> None:
    """The control of every attack below: a faithful NamedTuple, the real Enum members, a
    dataclass as made, the production exception (a ValueError) — all pass under the judge."""
    run = _check(values_gate, base, tmp_path, "honest", HONEST)
    where = run.stdout + run.stderr
    assert run.receipt["judge"] == "on", where
    assert _statuses(run) == dict.fromkeys(PROPS, "pass"), where
    # the nested helper ran under the judge: executed, so credited (it was "never executed")
    credits = run.receipt["credits"]
    assert credits.get("billing.ledger.split.<locals>.fee_of") == 1, (credits, where)
    assert credits.get("billing.ledger.settle_all") == 1, (credits, where)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_value_that_lies_is_a_property_miss(
    values_gate: Gate, base: Path, tmp_path: Path, attack: str
) -> None:
    edits, pid = ATTACKS[attack]
    run = _check(values_gate, base, tmp_path, attack, edits)
    where = run.stdout + run.stderr
    assert run.receipt["judge"] == "on", where
    assert run.receipt["admit"] is False, where
    status = _statuses(run)[pid]
    assert status in {"fail", "error"}, (status, _failures(run, pid), where)
    if attack == "wire_refusal_caught":  # caught by pytest.raises, voided by the link
        assert status == "error", _failures(run, pid)
        assert "cannot carry" in _failures(run, pid), _failures(run, pid)


def test_the_tricks_are_plain_python(tmp_path: Path) -> None:
    """Each attack's ledger compiles (a typo would make every attack a miss for nothing)."""
    for name, (edits, _pid) in {**ATTACKS, "honest": (HONEST, "")}.items():
        text = LEDGER
        for old, new in edits:
            assert old in text, (name, old)
            text = text.replace(old, new)
        compile(textwrap.dedent(text), f"{name}.py", "exec")
