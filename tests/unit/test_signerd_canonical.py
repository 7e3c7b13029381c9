"""signerd.canonical: what a signable manifest is, and every way one is refused."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchgate.digest import fixture_digest
from signerd.canonical import LIMITS, Limits, RawFile, RawManifest, validate
from signerd.errors import InvalidArgument

H = "0" * 64


def raw(**changes: object) -> RawManifest:
    base: dict[str, object] = {
        "pin_id": "fixpin-a",
        "algorithm": "sha256",
        "files": [RawFile("fixtures/a.json", H, 3)],
        "seed": 7,
        "clock_bound_ms": 30000,
        "allowed_commands": [["python", "-m", "pytest"]],
    }
    base.update(changes)
    return RawManifest(**base)  # type: ignore[arg-type]


def test_design_test_vector_digest() -> None:
    """The DESIGN §4 test vector, sent in any order, validates to its documented digest."""
    m = validate(
        raw(
            pin_id="v",
            files=[
                RawFile("fixtures/b.txt", hashlib.sha256(b"hello").hexdigest(), 5),
                RawFile("fixtures/a.json", hashlib.sha256(b'{"x": 1}\n').hexdigest(), 9),
            ],
            allowed_commands=[
                ["python", "-m", "pytest", "-q", "-k", "prorate"],
                ["python", "-m", "pytest", "-q"],
            ],
        )
    )
    assert fixture_digest(m) == "6ea8f3fe7ff21bd234d472a92daa33697534e140f1426d7981174b0181b87302"


def test_zero_files_is_allowed() -> None:
    """A pin with no fixture files is still a canonical manifest."""
    assert validate(raw(files=[])).files == {}


REFUSED = {
    "empty pin id": (raw(pin_id=""), "pin_id"),
    "pin id with newline": (raw(pin_id="a\nb"), "pin_id"),
    "pin id too long": (raw(pin_id="p" * 257), "pin_id"),
    "algorithm": (raw(algorithm="SHA256"), "algorithm"),
    "absolute path": (raw(files=[RawFile("/a", H, 1)]), "absolute"),
    "dot segment": (raw(files=[RawFile("a/./b", H, 1)]), "segment"),
    "dotdot segment": (raw(files=[RawFile("../b", H, 1)]), "segment"),
    "trailing slash": (raw(files=[RawFile("a/", H, 1)]), "segment"),
    "backslash": (raw(files=[RawFile("a\\b", H, 1)]), "backslash"),
    "nul": (raw(files=[RawFile("a\x00b", H, 1)]), "NUL"),
    "newline": (raw(files=[RawFile("a\nb", H, 1)]), "newline"),
    "carriage return": (raw(files=[RawFile("a\rb", H, 1)]), "control"),
    "C1 control in path": (raw(files=[RawFile("a\x9bb", H, 1)]), "control"),
    "bidi override in path": (raw(files=[RawFile("a\u202eb", H, 1)]), "control"),
    "zero-width space in path": (raw(files=[RawFile("a\u200bb", H, 1)]), "control"),
    "byte-order mark in path": (raw(files=[RawFile("\ufeffa", H, 1)]), "control"),
    "path too long": (raw(files=[RawFile("a" * 1025, H, 1)]), "longer"),
    "duplicate path": (raw(files=[RawFile("a", H, 1), RawFile("a", H, 1)]), "twice"),
    "uppercase hex": (raw(files=[RawFile("a", "A" * 64, 1)]), "sha256"),
    "short hex": (raw(files=[RawFile("a", "0" * 63, 1)]), "sha256"),
    "non-hex": (raw(files=[RawFile("a", "g" * 64, 1)]), "sha256"),
    "negative size": (raw(files=[RawFile("a", H, -1)]), "size"),
    "huge size": (raw(files=[RawFile("a", H, (1 << 40) + 1)]), "size"),
    "negative seed": (raw(seed=-1), "seed"),
    "seed over 2^32-1": (raw(seed=1 << 32), "seed"),
    "zero clock bound": (raw(clock_bound_ms=0), "clock_bound_ms"),
    "clock bound over a day": (raw(clock_bound_ms=24 * 3600 * 1000 + 1), "clock_bound_ms"),
    "no commands": (raw(allowed_commands=[]), "allowed_commands"),
    "empty argv": (raw(allowed_commands=[[]]), "empty argv"),
    "empty program": (raw(allowed_commands=[["", "x"]]), "program"),
    "nul in argument": (raw(allowed_commands=[["python", "a\x00"]]), "NUL"),
    "argument too long": (raw(allowed_commands=[["python", "a" * 4097]]), "longer"),
    "too many arguments": (raw(allowed_commands=[["p"] * 257]), "arguments"),
    "duplicate command": (raw(allowed_commands=[["p"], ["p"]]), "twice"),
    "too many commands": (raw(allowed_commands=[[f"p{i}"] for i in range(65)]), "limit"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_non_canonical_shape_is_refused_with_a_reason(case: str) -> None:
    """Each non-canonical shape raises InvalidArgument whose reason names the problem."""
    manifest, word = REFUSED[case]
    with pytest.raises(InvalidArgument) as info:
        validate(manifest)
    assert word in info.value.reason
    assert info.value.grpc_code == "INVALID_ARGUMENT"


def test_file_count_limit() -> None:
    """More files than the limit are refused before any is checked."""
    small = Limits(max_files=2)
    files = [RawFile(f"f{i}", H, 1) for i in range(3)]
    with pytest.raises(InvalidArgument, match="limit 2"):
        validate(raw(files=files), small)
    assert len(validate(raw(files=files[:2]), small).files) == 2


def test_limits_defaults_are_the_documented_ones() -> None:
    """docs/signer.md quotes these numbers."""
    assert (LIMITS.max_files, LIMITS.max_commands, LIMITS.max_argv) == (10_000, 64, 256)


@given(st.text(max_size=40))
def test_any_path_either_validates_or_is_refused_cleanly(path: str) -> None:
    """Junk paths never raise anything but InvalidArgument."""
    try:
        m = validate(raw(files=[RawFile(path, H, 1)]))
    except InvalidArgument:
        return
    assert list(m.files) == [path]
    fixture_digest(m)  # and the digest can be computed
