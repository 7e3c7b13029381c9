"""Target repositories of the attack corpus: a copy of ``examples/billing`` or a small generated
one.

``build(name, dest)`` writes the repository named in ``manifest.json`` under ``dest``, commits it
as the base (one commit, a person's identity) and returns its path. No network, no Docker: git
only. Used by the corpus's integration test and by the unit tests that compare the patch parser
with the trees.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

__all__ = ["CORPUS", "REPOS", "Entry", "build", "entries", "git"]

CORPUS = Path(__file__).resolve().parent
ROOT = CORPUS.parents[1]
BILLING = ROOT / "examples" / "billing"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` as a person; the output."""
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=person", "-c", "user.email=p@example.org",
         "-c", "commit.gpgsign=false", *args],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


TEXTKIT_INIT = '''\
"""Small text helpers."""

from textkit.core import slugify
from textkit.sub import words

__all__ = ["slugify", "words"]
'''

TEXTKIT_CORE = '''\
"""Slugs."""

import re

_NOT_WORD = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    """Lowercase words of ``text`` joined by single dashes."""
    return _NOT_WORD.sub("-", text.lower()).strip("-")
'''

TEXTKIT_SUB = '''\
"""Words."""


def words(text: str) -> list[str]:
    """The whitespace-separated words of ``text``."""
    return [w for w in text.split() if w]
'''

TEXTKIT_PROPS = '''\
"""Properties of textkit, pinned in pins/properties.json."""

from textkit import slugify, words

SAMPLES = ["Hello World", "  a  b  ", "Ünïcode and 123", "x--y", "", "-a-", "MiXeD case!!"]


def test_slug_is_clean():
    assert slugify("Hello World") == "hello-world"
    assert slugify("MiXeD case!!") == "mixed-case"
    for text in SAMPLES:
        slug = slugify(text)
        assert slug == slug.lower()
        assert " " not in slug
        assert not slug.startswith("-") and not slug.endswith("-")


def test_words_are_not_empty():
    for text in SAMPLES:
        assert all(w for w in words(text))
'''

TEXTKIT_QA = '''\
"""A pinned property that lives outside the oracle paths (qa/ is not one)."""

from textkit import slugify


def test_slug_has_single_dashes():
    for text in ["a  b", "a - b", "x--y", "Hello,  World"]:
        assert "--" not in slugify(text)
'''


def _textkit(dest: Path) -> None:
    files = {
        "pyproject.toml": '[project]\nname = "textkit"\nversion = "0.1.0"\n\n'
        '[tool.pytest.ini_options]\npythonpath = ["src"]\n',
        "src/textkit/__init__.py": TEXTKIT_INIT,
        "src/textkit/core.py": TEXTKIT_CORE,
        "src/textkit/sub.py": TEXTKIT_SUB,
        "properties/__init__.py": "",
        "properties/test_textkit.py": TEXTKIT_PROPS,
        "qa/prop_slug.py": TEXTKIT_QA,
        "fixtures/words.txt": "alpha beta\n",
        "README.md": "textkit\n",
    }
    for rel, text in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text, encoding="utf-8")
    digest = hashlib.sha256((dest / "fixtures/words.txt").read_bytes()).hexdigest()
    fixtures = {
        "pin_id": "fixpin-textkit-a",
        "algorithm": "sha256",
        "files": {"fixtures/words.txt": digest},
        "seed": 7,
        "clock_bound_ms": 30000,
        "allowed_commands": [PYTEST],
    }

    def prop(pid: str, covers: list[str], node: str) -> dict[str, object]:
        return {"id": pid, "claim": pid, "class": "pure_fn", "covers": covers,
                "command": [*PYTEST, node]}  # fmt: skip

    properties = {
        "properties": [
            prop("textkit.slug_clean", ["textkit.core.slugify"],
                 "properties/test_textkit.py::test_slug_is_clean"),
            prop("textkit.slug_single_dashes", ["textkit.core.slugify"],
                 "qa/prop_slug.py::test_slug_has_single_dashes"),
            # A package entry: the module-level code of textkit/__init__.py and what it defines,
            # never textkit/sub.py (issue 13: it used to, by prefix).
            prop("textkit.words_not_empty", ["textkit"],
                 "properties/test_textkit.py::test_words_are_not_empty"),
        ]
    }  # fmt: skip
    (dest / "pins").mkdir()
    (dest / "pins/fixtures.json").write_text(json.dumps(fixtures, indent=2) + "\n")
    (dest / "pins/properties.json").write_text(json.dumps(properties, indent=2) + "\n")


def _billing(dest: Path) -> None:
    shutil.copytree(
        BILLING, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("patches", "__pycache__")
    )


CHECKOUT_TEST = '''\
"""The test FLK-1044 of pins/flakes.json names: it drains the worker, and prorates the last day."""

from decimal import Decimal

from billing import prorate


def test_worker_drain():
    assert prorate(Decimal("10.00"), 7777, 7777) == Decimal("10.00")
'''


def _billing_flaky(dest: Path) -> None:
    """billing, plus a pinned property on FLK-1044's listed test that covers billing.prorate."""
    _billing(dest)
    (dest / "tests" / "test_checkout.py").write_text(CHECKOUT_TEST, encoding="utf-8")
    pins = dest / "pins" / "properties.json"
    doc = json.loads(pins.read_text(encoding="utf-8"))
    doc["properties"].append({
        "id": "checkout.worker_drain", "claim": "the worker drains", "class": "pure_fn",
        "covers": ["billing.prorate"],
        "command": [*PYTEST, "tests/test_checkout.py::test_worker_drain"],
    })  # fmt: skip
    pins.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


CHECKOUT_IMPORT_TEST = '''\
"""The test FLK-1044 names: it checks the checkout worker, and prorates a batch at import."""

from decimal import Decimal

from billing import prorate
from billing.checkout import drain_worker

BATCH = prorate(Decimal("10.00"), 7777, 7777)  # module code of the test: runs at collection


def test_worker_drain():
    assert drain_worker(["A-1", "A-2", "A-3"], 2) == ["A-1", "A-2"]
'''


def _billing_flaky_import(dest: Path) -> None:
    """billing, plus a pinned property on FLK-1044's listed test that covers only
    billing.checkout.drain_worker, and whose test module calls billing.prorate at import."""
    _billing(dest)
    (dest / "tests" / "test_checkout.py").write_text(CHECKOUT_IMPORT_TEST, encoding="utf-8")
    pins = dest / "pins" / "properties.json"
    doc = json.loads(pins.read_text(encoding="utf-8"))
    doc["properties"].append({
        "id": "checkout.worker_drain", "claim": "the worker drains", "class": "pure_fn",
        "covers": ["billing.checkout.drain_worker"],
        "command": [*PYTEST, "tests/test_checkout.py::test_worker_drain"],
    })  # fmt: skip
    pins.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


VACUOUS_TESTS = """

DEBUG = False


def test_prorate_tuple():
    assert (prorate(Decimal("10.00"), -5, 30) >= 0, "prorate never goes negative")


def test_prorate_if_debug():
    if DEBUG:
        assert prorate(Decimal("10.00"), -5, 30) >= 0
"""

OPAQUE_TESTS = """

from unittest import mock

import pytest


def positive(value):
    return value > 0


def test_prorate_mocked():
    sink = mock.MagicMock()
    sink(prorate(Decimal("10.00"), -5, 30))
    sink.assert_called_once()


def test_prorate_helper():
    assert positive(30)


@pytest.mark.parametrize("line", load_fixture("orders_min.json")["orders"][1]["lines"])
def test_prorate_table(line):
    assert prorate(Decimal(line["unit_price"]), 30, 30) == Decimal(line["unit_price"])
"""


WEAK_TESTS = """

def test_prorate_leaves_its_arguments_alone(rng):
    for _ in range(50):
        args = [Decimal(rng.randint(0, 1000)), rng.randint(-10, 40), rng.randint(1, 30)]
        before = list(args)
        try:
            prorate(*args)
        except Exception:
            pass
        assert args == before
"""


def _only_covers_prorate(dest: Path, source: str, nodes: dict[str, str]) -> None:
    """billing, where only the properties ``nodes`` (id -> test function added from ``source``)
    cover billing.prorate: the example's own prorate properties are not pinned."""
    _billing(dest)
    tests = dest / "properties" / "test_billing.py"
    tests.write_text(tests.read_text(encoding="utf-8") + source, encoding="utf-8")
    pins = dest / "pins" / "properties.json"
    doc = json.loads(pins.read_text(encoding="utf-8"))
    doc["properties"] = [p for p in doc["properties"] if p["covers"] != ["billing.prorate"]]
    doc["properties"].extend(
        {"id": pid, "claim": f"{node} (vacuous, issue 15)", "class": "pure_fn",
         "covers": ["billing.prorate"], "command": [*PYTEST, f"properties/test_billing.py::{node}"]}
        for pid, node in nodes.items()
    )  # fmt: skip
    pins.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


TABLE_TESTS = """

import json
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "data" / "prorate_table.json"


def test_prorate_table():
    for row in json.loads(TABLE.read_text(encoding="utf-8")):
        share = prorate(Decimal(row["amount"]), row["used"], row["period"])
        assert share == Decimal(row["expected"])
        assert share >= 0
"""
PRORATE_TABLE = [
    {"amount": "30.00", "used": 10, "period": 30, "expected": "10.00"},
    {"amount": "30.00", "used": -5, "period": 30, "expected": "0.00"},
    {"amount": "30.00", "used": 45, "period": 30, "expected": "30.00"},
]


def _billing_data_table(dest: Path) -> None:
    """billing.prorate covered only by a property whose expected values come from data/, a file
    neither under the fixture root nor an oracle path (issue 22, item 3)."""
    _only_covers_prorate(dest, TABLE_TESTS, {"prorate.table": "test_prorate_table"})
    (dest / "data").mkdir()
    table = json.dumps(PRORATE_TABLE, indent=1) + "\n"
    (dest / "data" / "prorate_table.json").write_text(table, encoding="utf-8")


def _billing_vacuous(dest: Path) -> None:
    """billing.prorate covered only by properties that cannot fail (a tuple, an if DEBUG)."""
    nodes = {"prorate.tuple": "test_prorate_tuple", "prorate.if_debug": "test_prorate_if_debug"}
    _only_covers_prorate(dest, VACUOUS_TESTS, nodes)


def _billing_opaque(dest: Path) -> None:
    """billing.prorate covered only by a mock assertion, a helper off the code and a fixture
    table fed through parametrize."""
    nodes = {
        "prorate.mocked": "test_prorate_mocked",
        "prorate.helper": "test_prorate_helper",
        "prorate.table": "test_prorate_table",
    }
    _only_covers_prorate(dest, OPAQUE_TESTS, nodes)


def _billing_weak(dest: Path) -> None:
    """billing.prorate covered only by a property that calls it and checks nothing it computes
    (its arguments are left alone): it passes, executes prorate, and can fail on no mutant."""
    _only_covers_prorate(
        dest, WEAK_TESTS, {"prorate.weak": "test_prorate_leaves_its_arguments_alone"}
    )


#: The classifier's constant forms (issue 22, item 5), one pinned property each: the truth of
#: none depends on what prorate returned, so each is a tautology refused for a changed prorate.
CONSTANT_FORMS = {
    "form.bitor_true": "(prorate(Decimal('10.00'), -5, 30) >= 0) | True",
    "form.or_true": "prorate(Decimal('10.00'), -5, 30) or True",
    "form.isinstance_object": "isinstance(prorate(Decimal('10.00'), -5, 30), object)",
    "form.in_true_false": "(prorate(Decimal('10.00'), -5, 30) >= 0) in (True, False)",
    "form.both_sides": "share >= 0 or share < 0",
    "form.approx_huge": "float(share) == pytest.approx(0, abs=1e300)",
    "form.max_floor": "max(float(share), 0) >= 0",
    "form.isfinite_constant": "math.isfinite(1)",
}
CONSTANT_HEADER = """

import math

import pytest
"""


def _billing_constant_forms(dest: Path) -> None:
    """billing.prorate covered only by the constant forms of :data:`CONSTANT_FORMS`."""
    source = CONSTANT_HEADER + "".join(
        f"\n\ndef test_{pid.split('.')[1]}():\n"
        "    share = prorate(Decimal('10.00'), -5, 30)\n"
        f"    assert {form}\n"
        for pid, form in CONSTANT_FORMS.items()
    )
    nodes = {pid: f"test_{pid.split('.')[1]}" for pid in CONSTANT_FORMS}
    _only_covers_prorate(dest, source, nodes)


REPOS = {
    "billing": _billing,
    "billing_flaky": _billing_flaky,
    "billing_flaky_import": _billing_flaky_import,
    "textkit": _textkit,
    "billing_vacuous": _billing_vacuous,
    "billing_opaque": _billing_opaque,
    "billing_weak": _billing_weak,
    "billing_constant_forms": _billing_constant_forms,
    "billing_data_table": _billing_data_table,
}


def build(name: str, dest: Path) -> Path:
    """Write repository ``name`` under ``dest``, commit it as the base; ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    REPOS[name](dest)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "base")
    return dest


class Entry(dict[str, object]):
    """One manifest entry (a dict with attribute-style helpers)."""

    @property
    def id(self) -> str:
        return str(self["id"])

    @property
    def patch(self) -> Path:
        return CORPUS / "patches" / str(self["patch"])


def entries() -> list[Entry]:
    """Every entry of ``manifest.json``, in order."""
    doc = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    return [Entry(e) for e in doc["entries"]]
