"""Human pins (DESIGN §3): from a directory or a git revision, one clear error per problem."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchgate.errors import PinError
from patchgate.pins import (
    DirSource,
    FixturePin,
    GitSource,
    command_allowed,
    load_config,
    load_pins,
    parse_fixture_pin,
    parse_flakes,
    parse_properties,
)
from tests.strategies import json_values, junk_json_bytes

BILLING = Path(__file__).resolve().parents[2] / "examples" / "billing"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def _fixture_pin(**over: Any) -> dict[str, Any]:
    pin: dict[str, Any] = {
        "pin_id": "fixpin-a",
        "algorithm": "sha256",
        "files": {"fixtures/a.json": "a" * 64},
        "seed": 7,
        "clock_bound_ms": 30000,
        "allowed_commands": [PYTEST],
    }
    pin.update(over)
    return pin


def _fp(**over: Any) -> FixturePin:
    return parse_fixture_pin(json.dumps(_fixture_pin(**over)).encode(), "fixtures.json")


def _prop(**over: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "id": "billing.x",
        "claim": "c",
        "class": "pure_fn",
        "covers": ["billing.x"],
        "command": [*PYTEST, "properties/test_x.py::test_x"],
    }
    p.update(over)
    return p


def test_billing_example_loads() -> None:
    """The example repo's pins load from its directory."""
    pins = load_pins(DirSource(BILLING))
    assert pins.fixtures.pin_id == "fixpin-billing-a"
    assert {p.id for p in pins.properties} >= {"billing.prorate.non_negative"}
    assert pins.flake("FLK-1044") is not None


def test_loads_from_git_revision(tmp_path: Path) -> None:
    """GitSource reads pins from a revision, not from the working tree."""
    if shutil.which("git") is None:
        pytest.fail("git is required")
    repo = tmp_path / "repo"
    shutil.copytree(BILLING, repo)

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    (repo / "pins" / "fixtures.json").write_text("{broken")  # the working tree is not read
    pins = load_pins(GitSource(repo, "HEAD"))
    assert pins.fixtures.pin_id == "fixpin-billing-a"
    with pytest.raises(PinError):
        load_pins(DirSource(repo))
    with pytest.raises(PinError):
        GitSource(repo, "no-such-rev").read("pins/fixtures.json")


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"pin_id": ""}, "pin_id"),
        ({"pin_id": "bad id"}, "pin_id"),
        ({"algorithm": "md5"}, "algorithm"),
        ({"files": []}, "files"),
        ({"files": {"../x": "a" * 64}}, "files"),
        ({"files": {"other/x": "a" * 64}}, "files"),
        ({"files": {"fixtures/x": "A" * 64}}, "files"),
        ({"seed": -1}, "seed"),
        ({"seed": True}, "seed"),
        ({"clock_bound_ms": 0}, "clock_bound_ms"),
        ({"allowed_commands": []}, "allowed_commands"),
        ({"allowed_commands": ["python -m pytest"]}, "allowed_commands"),
        ({"allowed_commands": [PYTEST, PYTEST]}, "allowed_commands"),
    ],
)
def test_fixture_pin_refusals(over: dict[str, Any], field: str) -> None:
    """Each malformed field is a PinError naming the file and the field."""
    with pytest.raises(PinError) as err:
        _fp(**over)
    assert err.value.file == "fixtures.json"
    assert err.value.field.startswith(field)


@pytest.mark.parametrize(
    ("props", "why"),
    [
        ([_prop(**{"class": "magic"})], "unknown class"),
        ([_prop(), _prop()], "duplicate property id"),
        ([_prop(command=["sh", "-c", "true"])], "not allowed"),
        ([_prop(command="python -m pytest")], "argv"),
        ([_prop(covers="billing.x")], "covers"),
    ],
)
def test_property_refusals(props: list[dict[str, Any]], why: str) -> None:
    """Unknown class, duplicate id, disallowed or shell-string command are refused."""
    raw = json.dumps({"properties": props}).encode()
    with pytest.raises(PinError, match=why):
        parse_properties(raw, "properties.json", _fp())


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"expires_on": "2026-13-01"}, "not a real date"),
        ({"opened_on": "02/09/2026"}, "YYYY-MM-DD"),
        ({"expires_on": "2026-01-01"}, "earlier than opened_on"),
        ({"tests": []}, "tests"),
        ({"review_by": "2026-09-01"}, "review_by: earlier than opened_on"),
        ({"review_by": "soon"}, "review_by: required, a date"),
        ({"accepted_in": ""}, "accepted_in"),
        ({"accepted_in": "main branch"}, "accepted_in: a revision"),
    ],
)
def test_flake_refusals(over: dict[str, Any], why: str) -> None:
    """Malformed dates, expiry before opening and empty test lists are refused."""
    flake = {
        "id": "FLK-1",
        "signature": "TimeoutError",
        "opened_on": "2026-09-02",
        "expires_on": "2026-10-16",
        "tests": ["t::x"],
    }
    flake.update(over)
    with pytest.raises(PinError, match=why):
        parse_flakes(json.dumps({"flakes": [flake]}).encode(), "flakes.json")


def test_flake_valid_until_expiry_date() -> None:
    """expires_on must be later than the review clock's UTC date."""
    (flake,) = parse_flakes(
        json.dumps(
            {
                "flakes": [
                    {
                        "id": "F",
                        "signature": "s",
                        "opened_on": "2026-09-02",
                        "expires_on": "2026-10-16",
                        "tests": ["t"],
                    }
                ]
            }
        ).encode(),
        "flakes.json",
    )
    assert flake.valid_at(dt.datetime(2026, 10, 15, 23, 59, tzinfo=dt.UTC))
    assert not flake.valid_at(dt.datetime(2026, 10, 16, 0, 0, tzinfo=dt.UTC))


def test_command_allowed_is_a_prefix_match() -> None:
    """An allowed command must be a prefix of the argv, element by element."""
    allowed = [("python", "-m", "pytest")]
    assert command_allowed(("python", "-m", "pytest", "-q"), allowed)
    assert not command_allowed(("python", "-m"), allowed)
    assert not command_allowed(("python", "-m", "pytest2"), allowed)


def test_config_from_pyproject(tmp_path: Path) -> None:
    """[tool.patchgate] sets pins_dir and fixture_root; an unknown key is refused."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.patchgate]\npins_dir = "p"\nfixture_root = "fx"\n'
    )
    cfg = load_config(DirSource(tmp_path))
    assert (cfg.pins_dir, cfg.fixture_root) == ("p", "fx")
    (tmp_path / "pyproject.toml").write_text("[tool.patchgate]\nbogus = 1\n")
    with pytest.raises(PinError, match="unknown setting"):
        load_config(DirSource(tmp_path))


def test_missing_pin_file_refused(tmp_path: Path) -> None:
    """A repo without pins/fixtures.json is a PinError naming it."""
    with pytest.raises(PinError, match=r"fixtures\.json"):
        load_pins(DirSource(tmp_path))


@given(junk_json_bytes)
def test_junk_pins_raise_pin_error(raw: bytes) -> None:
    """Every pin parser fed junk raises PinError, never a bare exception."""
    for parse in (
        lambda: parse_fixture_pin(raw, "f"),
        lambda: parse_properties(raw, "p", _fp()),
        lambda: parse_flakes(raw, "fl"),
    ):
        with contextlib.suppress(PinError):
            parse()


@given(st.sampled_from(sorted(_fixture_pin())), json_values)
def test_fixture_pin_with_one_junk_field_raises_pin_error(key: str, junk: object) -> None:
    """A valid fixture pin with any one field replaced by junk: parsed or PinError."""
    with contextlib.suppress(PinError):
        _fp(**{key: junk})


@given(st.sampled_from(sorted(_prop())), json_values)
def test_property_with_one_junk_field_raises_pin_error(key: str, junk: object) -> None:
    """A valid property entry with any one field replaced by junk: parsed or PinError."""
    raw = json.dumps({"properties": [_prop(**{key: junk})]}).encode()
    with contextlib.suppress(PinError):
        parse_properties(raw, "p", _fp())


def test_flake_review_by_and_accepted_in_are_read_and_review_by_bounds_validity() -> None:
    """Issue 23: the flake pin has a place for review_by and accepted_in; a flake is valid only
    before review_by (when given) as before expires_on."""
    import datetime as dt  # noqa: PLC0415

    item = {"id": "F", "signature": "s", "opened_on": "2026-09-02", "expires_on": "2026-10-16",
            "tests": ["t"], "review_by": "2026-09-20", "accepted_in": "4f3dbb7"}  # fmt: skip
    (flake,) = parse_flakes(json.dumps({"flakes": [item]}).encode(), "flakes.json")
    assert (flake.review_by, flake.accepted_in) == (dt.date(2026, 9, 20), "4f3dbb7")
    at = lambda day: dt.datetime(2026, 9, day, 12, tzinfo=dt.UTC)  # noqa: E731
    assert flake.valid_at(at(19))
    assert flake.open_at(at(19))
    assert not flake.valid_at(at(20))
    assert not flake.open_at(at(1))
