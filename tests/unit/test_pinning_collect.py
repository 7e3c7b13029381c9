"""``pin properties --from-pytest``: marked tests become properties; every bad mark refused."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from client.errors import CommandRefused, ConfigError
from client.pinning.check import check_tree
from client.pinning.collect import (
    build_properties,
    default_id,
    repin_properties,
    run_collection,
)
from client.pinning.tree import WorkTree
from patchgate.pins import DirSource, load_pins
from tests.unit._pinning_helpers import PYTEST, make_library, prop, write, write_pins


def _item(nodeid: str = "tests/test_a.py::test_x", **kwargs: Any) -> dict[str, Any]:
    return {
        "nodeid": nodeid,
        "parametrized": False,
        "args": 0,
        "kwargs": {"kind": "pure_fn", "covers": ["m.f"], **kwargs},
    }


def _fake(items: list[dict[str, Any]]) -> Any:
    def collect(repo: Path, paths: Sequence[str]) -> list[dict[str, Any]]:
        return items

    return collect


def test_default_id_is_module_and_test() -> None:
    assert default_id("tests/test_a.py::test_x") == "tests.test_a.test_x"
    assert default_id("tests/sub/test_b.py::TestC::test_y") == "tests.sub.test_b.TestC.test_y"


def test_a_marked_test_becomes_a_property() -> None:
    """id from id=, class from kind=, command = first allowed command + node id."""
    (p,), problems = build_properties([_item(id="p.one", claim="c")], PYTEST)
    assert problems == []
    assert p == {
        "id": "p.one",
        "claim": "c",
        "class": "pure_fn",
        "covers": ["m.f"],
        "command": [*PYTEST, "tests/test_a.py::test_x"],
    }


@pytest.mark.parametrize(
    ("item", "why"),
    [
        ({**_item(), "args": 1}, "keyword arguments only"),
        (_item(kind="fast"), "kind= is required"),
        ({**_item(), "kwargs": {"covers": []}}, "kind= is required"),
        ({**_item(), "kwargs": {"kind": "pure_fn"}}, "covers= is required"),
        (_item(covers="m.f"), "covers= is required"),
        (_item(covers=["m.f", ""]), "covers= is required"),
        (_item(covers=[{"unsupported": "object"}]), "covers= is required"),
        (_item(claim=3), "claim= must be a string"),
        (_item(id=7), "id= must be a string"),
        (_item(cover=["m.f"]), "unknown argument cover="),
    ],
)
def test_every_bad_mark_is_named_with_its_test(item: dict[str, Any], why: str) -> None:
    _, problems = build_properties([item], PYTEST)
    assert len(problems) == 1, problems
    assert problems[0].startswith(item["nodeid"] + ": ")
    assert why in problems[0]


def test_colliding_ids_are_refused_naming_both_tests() -> None:
    """An explicit id= equal to another test's default id collides too."""
    items = [
        _item("tests/test_a.py::test_x"),
        _item("tests/test_b.py::test_y", id="tests.test_a.test_x"),
    ]
    _, problems = build_properties(items, PYTEST)
    (line,) = problems
    assert line.startswith("tests/test_b.py::test_y: id 'tests.test_a.test_x' is also the id of ")
    assert line.endswith(" tests/test_a.py::test_x")


def test_repin_replaces_the_file_and_reports_by_id(tmp_path: Path) -> None:
    """Collected tests are the truth: a hand-kept property not collected is removed (and said)."""
    write_pins(
        tmp_path, [prop("old.one", ["m"]), prop("p.same", ["m.f"], "tests/test_a.py::test_x")]
    )
    (tmp_path / "tests").mkdir()
    items = [_item(id="p.same", claim="now"), _item("tests/test_a.py::test_new", id="p.new")]
    update = repin_properties(tmp_path, collect=_fake(items))
    assert update.changes.to_json() == {
        "added": ["p.new"],
        "removed": ["old.one"],
        "changed": ["p.same"],
    }
    pins = load_pins(DirSource(tmp_path))
    assert [p.id for p in pins.properties] == ["p.same", "p.new"]


def test_refusals_write_nothing_and_list_every_problem(tmp_path: Path) -> None:
    """Two bad marks and an id the parser refuses: three lines, the old file unchanged."""
    write_pins(tmp_path, [prop("old.one", ["m"])])
    before = (tmp_path / "pins/properties.json").read_bytes()
    (tmp_path / "tests").mkdir()
    items = [_item("t.py::test_a", kind="x"), _item("t.py::test_b", covers=None)]
    with pytest.raises(ConfigError) as info:
        repin_properties(tmp_path, collect=_fake(items))
    assert len(info.value.problems) == 2
    with pytest.raises(ConfigError) as info:
        repin_properties(tmp_path, collect=_fake([_item("t.py::test_c", id="bad id!")]))
    (line,) = info.value.problems
    assert line.startswith("t.py::test_c: id: letters, digits")
    assert (tmp_path / "pins/properties.json").read_bytes() == before


def test_repin_needs_a_valid_fixture_pin(tmp_path: Path) -> None:
    """The command prefix comes from the fixture pin: missing -> init first; invalid -> 78."""
    with pytest.raises(CommandRefused, match="init"):
        repin_properties(tmp_path, collect=_fake([]))
    write(tmp_path, {"pins/fixtures.json": "{}"})
    with pytest.raises(ConfigError):
        repin_properties(tmp_path, collect=_fake([]))


def test_real_collection_of_a_generated_library(tmp_path: Path) -> None:
    """pytest in a subprocess finds the two marked tests of the library, not the unmarked one."""
    root = make_library(tmp_path)
    items = run_collection(root, [])
    assert sorted(i["nodeid"] for i in items) == [
        "tests/test_core.py::test_count",
        "tests/test_core.py::test_slugify_idempotent",
    ]
    assert list(root.rglob("__pycache__")) == []  # collection leaves no bytecode behind


def test_a_collection_error_is_a_configuration_error_with_its_text(tmp_path: Path) -> None:
    """An ImportError at collection: exit 78 with the end of pytest's own output."""
    root = make_library(tmp_path)
    write(root, {"tests/test_broken.py": "import no_such_module_xyz\n"})
    with pytest.raises(ConfigError) as info:
        run_collection(root, [])
    assert info.value.problems[0].startswith("pytest collection failed (exit 2)")
    assert any("no_such_module_xyz" in line for line in info.value.problems)


def test_collected_properties_file_is_stable_json(tmp_path: Path) -> None:
    root = make_library(tmp_path)
    write_pins(root, [])
    repin_properties(root)
    data = json.loads((root / "pins/properties.json").read_text())
    assert [p["id"] for p in data["properties"]] == [
        "textkit.slugify.idempotent",
        "tests.test_core.test_count",
    ]


def _case(node: str, case: str, total: int, **kwargs: Any) -> dict[str, Any]:
    return {
        **_item(f"{node}[{case}]", **kwargs), "parametrized": True, "function": node,
        "cases_collected": total,
    }  # fmt: skip


def test_a_parametrized_test_is_one_property_with_all_its_cases() -> None:
    """Issue 24: the cases of one marked function fold into one property whose command names the
    function (pytest runs every case); its id is the function's. Cases with different marks, or a
    function only some of whose cases are marked, are refused."""
    node = "tests/test_a.py::test_p"
    props, problems = build_properties([_case(node, "1", 2), _case(node, "2", 2)], PYTEST)
    assert problems == []
    (p,) = props
    assert p["command"] == [*PYTEST, node]
    assert p["id"] == "tests.test_a.test_p"
    _, differ = build_properties([_case(node, "1", 2), _case(node, "2", 2, covers=["m.g"])], PYTEST)
    assert differ == [f"{node}: its cases carry different patchgate marks; a parametrized test "
                      "is one property: mark the function once"]  # fmt: skip
    _, some = build_properties([_case(node, "1", 3)], PYTEST)
    assert some == [f"{node}: only 1 of its 3 cases are marked; a parametrized test is one "
                    "property with all its cases: mark the function"]  # fmt: skip


def test_real_collection_folds_a_parametrized_test(tmp_path: Path) -> None:
    """With pytest itself: a parametrized marked test (three cases, one through pytest.param) is
    one property naming the function; marking one case alone is refused with the count."""
    root = make_library(tmp_path)
    write(root, {"tests/test_param.py": PARAM_TESTS})
    write_pins(root, [])
    update = repin_properties(root, ["tests/test_param.py"])
    data = json.loads((root / "pins/properties.json").read_text())
    assert [(p["id"], p["command"][-1]) for p in data["properties"]] == [
        ("tests.test_param.test_slug_has_no_space", "tests/test_param.py::test_slug_has_no_space")
    ]
    assert update.properties == 1
    assert check_tree(WorkTree(root)).problems == ()  # pin check accepts it
    write(root, {"tests/test_param.py": PARAM_TESTS + ONE_CASE_MARKED})
    with pytest.raises(ConfigError) as info:
        repin_properties(root, ["tests/test_param.py"])
    assert info.value.problems == (
        "tests/test_param.py::test_one_case: only 1 of its 2 cases are marked; a parametrized "
        "test is one property with all its cases: mark the function",
    )


PARAM_TESTS = """\
import pytest
from textkit.core import slugify


@pytest.mark.patchgate(kind="pure_fn", covers=["textkit.core.slugify"])
@pytest.mark.parametrize("text", ["a b", "C  d", pytest.param("e f g", id="three")])
def test_slug_has_no_space(text):
    assert " " not in slugify(text)
"""

ONE_CASE_MARKED = """\


@pytest.mark.parametrize(
    "text",
    ["x", pytest.param("y", marks=pytest.mark.patchgate(kind="pure_fn", covers=[]))],
)
def test_one_case(text):
    assert slugify(text) == text
"""


def test_collection_defaults_to_the_oracle_paths_that_exist(tmp_path: Path) -> None:
    """Real libraries, second round: without PATH, --from-pytest collects the oracle paths (not
    the whole tree, whose sanity tests needed what the suite's environment lacked)."""
    write_pins(tmp_path, [])
    (tmp_path / "tests").mkdir()
    seen: list[Sequence[str]] = []

    def collect(repo: Path, paths: Sequence[str]) -> list[dict[str, Any]]:
        seen.append(paths)
        return [_item("tests/test_a.py::test_x", id="p.x")]

    repin_properties(tmp_path, collect=collect)
    repin_properties(tmp_path, ["other/"], collect=collect)
    assert seen == [["tests"], ["other/"]]


def test_collection_refuses_oracle_paths_that_name_nothing(tmp_path: Path) -> None:
    """No oracle path exists (tests live in pkg/tests/): a configuration error saying what to set,
    and properties.json unchanged."""
    write_pins(tmp_path, [])
    before = (tmp_path / "pins/properties.json").read_bytes()
    with pytest.raises(ConfigError) as info:
        repin_properties(tmp_path, collect=_fake([]))
    assert "set oracle_paths in [tool.patchgate]" in info.value.problems[0]
    assert (tmp_path / "pins/properties.json").read_bytes() == before
