"""Pin loaders fed junk: every input yields pins or a PinError (no bare exception, no hang)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchgate.errors import PinError
from patchgate.pins import (
    DirSource,
    load_config,
    load_pins,
    parse_fixture_pin,
    parse_flakes,
    parse_properties,
)
from tests.strategies import json_values, junk_json_bytes, safe_paths, sha256_hex

FUZZ = settings(max_examples=250, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
GOOD_FIXTURES = json.dumps({
    "pin_id": "fixpin-a", "algorithm": "sha256",
    "files": {"fixtures/a.json": "0" * 64}, "seed": 7, "clock_bound_ms": 30000,
    "allowed_commands": [["python", "-m", "pytest"]],
}).encode()  # fmt: skip

_values = json_values | sha256_hex | safe_paths | st.integers(-(2**70), 2**70)
_argv = st.lists(st.text(max_size=8), max_size=4) | _values


@st.composite
def fixture_pins(draw: st.DrawFn) -> bytes:
    """Near-valid fixture pins: the right keys, some values wrong or missing."""
    obj: dict[str, Any] = {
        "pin_id": draw(st.from_regex(r"[A-Za-z0-9._:-]{0,10}", fullmatch=True) | _values),
        "algorithm": draw(st.sampled_from(["sha256", "SHA256", "md5", ""]) | _values),
        "files": draw(st.dictionaries(safe_paths | st.text(max_size=12), sha256_hex | _values,
                                      max_size=4) | _values),
        "seed": draw(st.integers(-5, 2**33) | _values),
        "clock_bound_ms": draw(st.integers(-5, 2**40) | _values),
        "allowed_commands": draw(st.lists(_argv, max_size=3) | _values),
    }  # fmt: skip
    for key in draw(st.lists(st.sampled_from(sorted(obj)), max_size=2)):
        obj.pop(key, None)
    return json.dumps(obj).encode()


@st.composite
def property_pins(draw: st.DrawFn) -> bytes:
    """Near-valid properties.json documents."""
    item = st.fixed_dictionaries({
        "id": st.from_regex(r"[a-z.]{0,12}", fullmatch=True) | _values,
        "claim": st.text(max_size=12) | _values,
        "class": st.sampled_from(["pure_fn", "idempotent_io", "bounded_time", "external_probe",
                                  "other"]) | _values,
        "covers": st.lists(st.text(max_size=10), max_size=3) | _values,
        "command": st.just(["python", "-m", "pytest", "x"]) | _argv,
    })  # fmt: skip
    props = draw(st.lists(item | _values, max_size=3) | _values)
    return json.dumps({"properties": props}).encode()


@st.composite
def flake_pins(draw: st.DrawFn) -> bytes:
    """Near-valid flakes.json documents."""
    date = st.dates().map(str) | st.text(max_size=10) | _values
    item = st.fixed_dictionaries({
        "id": st.text(max_size=10) | _values, "signature": st.text(max_size=10) | _values,
        "opened_on": date, "expires_on": date, "tests": st.lists(st.text(max_size=10)) | _values,
    })  # fmt: skip
    return json.dumps({"flakes": draw(st.lists(item | _values, max_size=3) | _values)}).encode()


@FUZZ
@given(raw=junk_json_bytes | fixture_pins())
def test_fixture_pin_junk_is_a_pin_error(raw: bytes) -> None:
    try:
        pin = parse_fixture_pin(raw, "pins/fixtures.json")
    except PinError:
        return
    assert pin.pin_id


@FUZZ
@given(raw=junk_json_bytes | property_pins())
def test_properties_junk_is_a_pin_error(raw: bytes) -> None:
    fixtures = parse_fixture_pin(GOOD_FIXTURES, "pins/fixtures.json")
    try:
        props = parse_properties(raw, "pins/properties.json", fixtures)
    except PinError:
        return
    assert all(p.id for p in props)


@FUZZ
@given(raw=junk_json_bytes | flake_pins())
def test_flakes_junk_is_a_pin_error(raw: bytes) -> None:
    try:
        parse_flakes(raw, "pins/flakes.json")
    except PinError:
        return


_toml_values = st.sampled_from(
    [
        '"pins"',
        '"../x"',
        '"/abs"',
        "1",
        "[]",
        '["tests/", 3]',
        '"a\\u0000b"',
        "{x = 1}",
        "true",
        '""',
    ]
)


@st.composite
def pyprojects(draw: st.DrawFn) -> bytes:
    """pyproject.toml with a [tool.patchgate] table of odd settings, or raw junk."""
    keys = st.sampled_from(["pins_dir", "fixture_root", "oracle_paths", "exclude", "bogus"])
    lines = [f"{k} = {draw(_toml_values)}" for k in draw(st.lists(keys, max_size=4, unique=True))]
    return ("[tool.patchgate]\n" + "\n".join(lines) + "\n").encode()


@FUZZ
@given(pyproject=pyprojects() | st.binary(max_size=120), pins=st.tuples(
    junk_json_bytes | fixture_pins(), junk_json_bytes | property_pins(),
    junk_json_bytes | flake_pins()))  # fmt: skip
def test_load_config_and_pins_from_a_directory_yield_pins_or_pin_error(
    pyproject: bytes, pins: tuple[bytes, bytes, bytes]
) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "pyproject.toml").write_bytes(pyproject)
        (root / "pins").mkdir()
        for name, raw in zip(
            ("fixtures.json", "properties.json", "flakes.json"), pins, strict=True
        ):
            (root / "pins" / name).write_bytes(raw)
        try:
            config = load_config(DirSource(root))
            load_pins(DirSource(root), config)
        except PinError:
            return
