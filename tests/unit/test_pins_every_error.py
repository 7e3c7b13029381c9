"""Invalid pins report every problem at once (issue 13: ``check`` exits 78 listing them all)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchgate.errors import PinError, PinErrors
from patchgate.pins import (
    DirSource,
    load_config,
    load_pins,
    parse_fixture_pin,
    parse_flakes,
    parse_properties,
)

GOOD_FIXTURES = {
    "pin_id": "fixpin-a",
    "algorithm": "sha256",
    "files": {},
    "seed": 7,
    "clock_bound_ms": 30000,
    "allowed_commands": [["python", "-m", "pytest"]],
}
GOOD_PROPERTY = {
    "id": "p.a",
    "class": "pure_fn",
    "covers": ["m.f"],
    "command": ["python", "-m", "pytest", "t.py::test_a"],
}
FIXTURES = parse_fixture_pin(json.dumps(GOOD_FIXTURES).encode(), "fixtures.json")


def _raw(obj: object) -> bytes:
    return json.dumps(obj).encode()


def test_a_fixture_pin_with_three_bad_fields_names_all_three() -> None:
    bad = {**GOOD_FIXTURES, "pin_id": "no spaces", "algorithm": "md5", "seed": -1}
    with pytest.raises(PinErrors) as info:
        parse_fixture_pin(_raw(bad), "fixtures.json")
    assert [e.field for e in info.value.errors] == ["pin_id", "algorithm", "seed"]
    assert "pin_id" in str(info.value)
    assert "seed" in str(info.value)


def test_every_bad_fixture_file_entry_is_named() -> None:
    bad = {**GOOD_FIXTURES, "files": {"fixtures/a": "xx", "../b": "0" * 64, "other/c": "0" * 64}}
    with pytest.raises(PinErrors) as info:
        parse_fixture_pin(_raw(bad), "fixtures.json")
    assert len(info.value.errors) == 3


def test_two_bad_properties_are_both_named() -> None:
    doc = {"properties": [{**GOOD_PROPERTY, "class": "nope"}, {**GOOD_PROPERTY, "id": "p.b",
                                                               "covers": "m.f"}]}  # fmt: skip
    with pytest.raises(PinErrors) as info:
        parse_properties(_raw(doc), "properties.json", FIXTURES)
    assert [e.field for e in info.value.errors] == ["properties[0].class", "properties[1].covers"]


def test_one_property_with_two_bad_fields_names_both() -> None:
    doc = {"properties": [{**GOOD_PROPERTY, "class": "nope", "command": ["sh", "-c", "x"]}]}
    with pytest.raises(PinErrors) as info:
        parse_properties(_raw(doc), "properties.json", FIXTURES)
    assert [e.field for e in info.value.errors] == [
        "properties[0].class",
        "properties[0].command",
    ]


def test_a_single_problem_is_still_a_plain_pin_error() -> None:
    doc = {"properties": [{**GOOD_PROPERTY, "class": "nope"}]}
    with pytest.raises(PinError) as info:
        parse_properties(_raw(doc), "properties.json", FIXTURES)
    assert not isinstance(info.value, PinErrors)


def test_two_bad_flakes_are_both_named() -> None:
    flake = {"id": "F-1", "signature": "s", "opened_on": "2026-01-01", "expires_on": "2026-02-01",
             "tests": ["t"]}  # fmt: skip
    doc = {"flakes": [{**flake, "expires_on": "2025-01-01"}, {**flake, "id": "F-2", "tests": []}]}
    with pytest.raises(PinErrors) as info:
        parse_flakes(_raw(doc), "flakes.json")
    assert [e.field for e in info.value.errors] == ["flakes[0].expires_on", "flakes[1].tests"]


def test_a_broken_fixture_pin_does_not_hide_a_broken_property_pin(tmp_path: Path) -> None:
    pins = tmp_path / "pins"
    pins.mkdir()
    (pins / "fixtures.json").write_text(json.dumps({**GOOD_FIXTURES, "seed": "seven"}))
    (pins / "properties.json").write_text(json.dumps({"properties": [{"id": "p.a"}]}))
    (pins / "flakes.json").write_text("not json")
    with pytest.raises(PinErrors) as info:
        load_pins(DirSource(tmp_path))
    files = {Path(e.file).name for e in info.value.errors}
    assert files == {"fixtures.json", "properties.json", "flakes.json"}


def test_missing_pin_files_are_both_named(tmp_path: Path) -> None:
    with pytest.raises(PinErrors) as info:
        load_pins(DirSource(tmp_path))
    assert [e.why for e in info.value.errors] == ["missing", "missing"]


def test_every_bad_setting_of_the_configuration_is_named(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.patchgate]\npins_dirr = "pins"\nfixture_root = "../out"\noracle_paths = "tests/"\n'
    )
    with pytest.raises(PinErrors) as info:
        load_config(DirSource(tmp_path))
    assert [e.field for e in info.value.errors] == [
        "tool.patchgate.pins_dirr",
        "tool.patchgate.fixture_root",
        "tool.patchgate.oracle_paths",
    ]


@pytest.mark.parametrize(
    "text",
    ["[tool]\npatchgate = 3\n", "tool = 3\n", "[tool]\npatchgate = [1]\n"],
)
def test_a_configuration_of_the_wrong_shape_is_a_pin_error_not_a_crash(
    tmp_path: Path, text: str
) -> None:
    (tmp_path / "patchgate.toml").write_text(text)
    with pytest.raises(PinError):
        load_config(DirSource(tmp_path))
