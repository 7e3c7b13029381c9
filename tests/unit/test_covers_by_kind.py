"""``covers`` entries resolve in the base tree, by kind (issue 22, item 1).

An entry names a module, a class or a function of the base, and matches only symbols of that kind
and name; an entry that names nothing (or two things) in the base is a pin error. Git runs here
(the trees are real); no sockets, no Docker.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from client.analysis.patch.covers import base_names, resolve_covers
from client.analysis.patch.roles import Layout
from client.gate import steps
from client.gate.workspace import materialize
from client.pinning.names import tree_symbols
from client.verdict.admission import covering
from patchgate.errors import PinErrors
from patchgate.pins import DirSource, ProjectConfig, PropertyPin, load_pins
from patchgate.symbols import Cover, Symbol, covers
from tests.attacks.repos import CORPUS, build, git

LAYOUT = Layout(source_roots=("",), oracle_paths=("tests/",), pins_dir="pins")


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _prop(*entries: str) -> PropertyPin:
    return PropertyPin(
        id="p", claim="c", property_class="pure_fn", covers=entries, command=("pytest", "t.py")
    )


BASE = {
    "billing/__init__.py": (
        "X = 1\n\ndef prorate(a):\n    def inner():\n        return a\n    return inner()\n\n"
        "class Line:\n    def net(self):\n        return 1\n"
    ),
    "billing/orders.py": "def load_orders():\n    return []\n",
}


@pytest.fixture
def names(tmp_path: Path) -> dict[str, tuple[Cover, ...]]:
    return base_names(LAYOUT, _tree(tmp_path, BASE))


def _resolved(names: dict[str, tuple[Cover, ...]], *entries: str) -> PropertyPin:
    (prop,), problems = resolve_covers([_prop(*entries)], names)
    assert problems == ()
    return prop


def test_each_entry_resolves_to_its_kind(names: dict[str, tuple[Cover, ...]]) -> None:
    prop = _resolved(names, "billing", "billing.prorate", "billing.Line", "billing.Line.net")
    kinds = [(c.kind, c.module, c.qualname) for c in prop.covers if isinstance(c, Cover)]
    assert kinds == [
        ("module", "billing", ""),
        ("function", "billing", "prorate"),
        ("class", "billing", "Line"),
        ("function", "billing", "Line.net"),
    ]


def test_a_function_entry_never_covers_a_module_added_under_its_name(
    names: dict[str, tuple[Cover, ...]],
) -> None:
    prop = _resolved(names, "billing.prorate")
    added = Symbol.make("billing.prorate", "")  # billing/prorate.py, added by a patch
    added_fn = Symbol.make("billing.prorate", "rate")
    assert covering(prop, [added, added_fn]) == ()
    # what it names: the function and what is defined inside it
    inner = Symbol.make("billing", "prorate.<locals>.inner")
    assert covering(prop, [Symbol.make("billing", "prorate"), inner]) == (
        "billing.prorate",
        inner,
    )
    # the plain-string rule (unresolved) would have matched the added module: the attack
    assert covers("billing.prorate", added)


def test_a_class_entry_covers_its_methods_and_a_module_entry_its_file_only(
    names: dict[str, tuple[Cover, ...]],
) -> None:
    cls = _resolved(names, "billing.Line")
    assert covering(cls, [Symbol.make("billing", "Line.net"), Symbol.make("billing", "prorate")])
    assert covering(cls, [Symbol.make("billing", "prorate")]) == ()
    assert covering(cls, [Symbol.make("billing", "")]) == ()
    mod = _resolved(names, "billing")
    inside = [Symbol.make("billing", ""), Symbol.make("billing", "prorate")]
    assert covering(mod, inside) == tuple(inside)
    others = [Symbol.make("billing.orders", "load_orders"), Symbol.make("billing.sub", "")]
    assert covering(mod, others) == ()
    assert covering(mod, ["billing.prorate", Symbol("billing.prorate", "")]) == ()


def test_an_entry_naming_nothing_is_a_problem_with_the_nearest_name(
    names: dict[str, tuple[Cover, ...]],
) -> None:
    _, problems = resolve_covers([_prop("billing.prorat", "billing.orders.load_orders")], names)
    assert problems == (
        "p: covers entry 'billing.prorat' names no symbol of the base tree; "
        "did you mean billing.prorate?",
    )


def test_an_entry_naming_two_things_in_the_base_is_a_problem(tmp_path: Path) -> None:
    base = _tree(tmp_path, {**BASE, "billing/prorate.py": "Y = 2\n"})
    _, problems = resolve_covers([_prop("billing.prorate")], base_names(LAYOUT, base))
    assert len(problems) == 1
    assert "'billing.prorate' is ambiguous in the base tree" in problems[0]
    assert "function prorate of module billing" in problems[0]
    assert "module billing.prorate" in problems[0]
    found = tree_symbols(base, ProjectConfig(source_roots=("",)))
    assert "billing.prorate" in found.ambiguous
    assert "billing.Line" not in found.ambiguous


def test_a_cover_survives_copying() -> None:
    cover = Cover("billing.prorate", "function", "billing", "prorate")
    again = copy.deepcopy(cover)
    assert (again, again.kind, again.module, again.qualname) == (
        "billing.prorate",
        "function",
        "billing",
        "prorate",
    )
    with pytest.raises(ValueError, match="unknown kind"):
        Cover("x", "package", "x")


# -- through the workspace: the attack patch and the refusal ---------------------------------


@pytest.fixture(scope="module")
def billing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build("billing", tmp_path_factory.mktemp("covers") / "billing")


def test_the_attack_patch_adds_a_module_no_entry_covers(billing: Path) -> None:
    patch = (CORPUS / "patches" / "module_added_under_function_name.patch").read_bytes()
    with materialize(billing, "HEAD", patch) as ws:
        pins = steps.resolve_pins(ws, load_pins(DirSource(ws.base_dir)))
        touched = steps.changed(ws, pins)
    assert [str(s) for s in touched.symbols] == ["module:billing.prorate"]
    assert [p.id for p in pins.properties if covering(p, touched.symbols)] == []


def test_an_unknown_entry_is_a_pin_error_of_the_check(billing: Path, tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shutil.copytree(billing, repo)
    props = repo / "pins/properties.json"
    props.write_text(props.read_text().replace('"billing.invoice_total"', '"billing.invoice_tot"'))
    git(repo, "commit", "-qam", "a covers entry that names nothing")
    patch = (CORPUS / "patches" / "control_billing_refactor.patch").read_bytes()
    with materialize(repo, "HEAD", patch) as ws, pytest.raises(PinErrors) as err:
        steps.resolve_pins(ws, load_pins(DirSource(ws.base_dir)))
    assert str(err.value) == (
        "pins/properties.json: covers: billing.invoice_total.matches_fixture: covers entry "
        "'billing.invoice_tot' names no symbol of the base tree; did you mean "
        "billing.invoice_total?"
    )
