"""The judge's wire (executord/inside/wire.py): plain data round-trips exactly, by exact type;
caps refuse instead of truncating; junk input is refused with ``WireError`` (issue 20)."""

from __future__ import annotations

import ast
import contextlib
import datetime as dt
import decimal
import fractions
import math
import os
import pathlib
import struct
import sys
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executord.inside import FILES, REPORTER_DIR, wire

_tz = st.one_of(
    st.none(),
    st.just(dt.UTC),
    st.builds(
        dt.timezone,
        st.timedeltas(min_value=dt.timedelta(hours=-23), max_value=dt.timedelta(hours=23)),
    ),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=True),
    st.text(),
    st.binary(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.fractions(),
    st.datetimes(timezones=_tz),
    st.dates(),
    st.times(timezones=_tz),
    st.timedeltas(),
    st.uuids(),
    st.builds(pathlib.PurePosixPath, st.text()),
    st.builds(pathlib.Path, st.text(alphabet="abc/._")),
    st.builds(pathlib.PureWindowsPath, st.text(alphabet="abc\\:._")),
)
hashable = st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.binary(), st.uuids())
plain = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.sets(hashable, max_size=4),
        st.frozensets(hashable, max_size=4),
        st.dictionaries(hashable, inner, max_size=4),
    ),
    max_leaves=20,
)


def key(v: Any) -> Any:
    """A structure that is equal exactly when two values are the same (NaN, -0.0, types)."""
    t = type(v)
    if t is float:
        return (t, v.hex())
    if t is complex:
        return (t, v.real.hex(), v.imag.hex())
    if t is decimal.Decimal:
        return (t, str(v))
    if t in (dt.datetime, dt.time):
        return (t, v.isoformat(), v.fold, repr(v.tzinfo))
    if t in (list, tuple):
        return (t, [key(x) for x in v])
    if t in (set, frozenset):
        return (t, sorted(repr(key(x)) for x in v))
    if t is dict:
        return (t, [(key(k), key(x)) for k, x in v.items()])
    return (t, v)


@settings(max_examples=300)
@given(plain)
def test_plain_data_round_trips_exactly(value: object) -> None:
    assert wire.is_plain(value)
    assert key(wire.loads(wire.dumps(value))) == key(value)


def test_the_values_plain_json_loses_survive() -> None:
    value = [float("nan"), -0.0, math.inf, (1, 2), [1, 2], {1}, frozenset({1}), b"\x00\xff"]
    back = wire.loads(wire.dumps(value))
    assert math.isnan(back[0])
    assert math.copysign(1.0, back[1]) == -1.0
    assert back[2] == math.inf
    assert [type(x) for x in back[3:]] == [tuple, list, set, frozenset, bytes]
    assert str(wire.loads(wire.dumps(decimal.Decimal("-0")))) == "-0"
    assert wire.loads(wire.dumps(decimal.Decimal("sNaN"))).is_snan()


class _Amount(decimal.Decimal):
    def __ge__(self, other: object) -> bool:
        return True


class _Int(int):
    pass


class _Str(str):
    pass


class _Tz(dt.tzinfo):
    def utcoffset(self, d: object) -> dt.timedelta:
        return dt.timedelta(0)


@pytest.mark.parametrize(
    "value",
    [
        _Amount("-1.67"),
        _Int(3),
        _Str("x"),
        [1, _Int(2)],
        {"k": _Amount(1)},
        {_Str("k"): 1},
        (object(),),
        dt.datetime(2026, 1, 1, tzinfo=_Tz()),
        True.__class__,  # a type is not data
    ],
)
def test_a_subclass_or_foreign_object_is_not_plain_data(value: object) -> None:
    """A patch's subclass of Decimal/int/str, a foreign tzinfo, an object: never by value."""
    assert not wire.is_plain(value)
    with pytest.raises(wire.WireError, match="cannot carry"):
        wire.dumps(value)


def test_a_subclass_goes_to_the_side_s_own_rule() -> None:
    """What is not plain data is handed to ``other`` (the subject makes it a handle)."""
    seen: list[object] = []

    def other(v: object) -> list[Any]:
        seen.append(v)
        return ["h", {"id": 7}]

    enc = wire.Encoder(other)
    assert enc.encode([1, _Amount("-1.67")]) == ["l", [["i", "0x1"], ["h", {"id": 7}]]]
    assert type(seen[0]) is _Amount


def test_depth_cap_refuses_instead_of_truncating() -> None:
    deep: list[Any] = []
    cur = deep
    for _ in range(wire.MAX_DEPTH + 5):
        cur.append([])
        cur = cur[0]
    with pytest.raises(wire.WireError, match="deeper"):
        wire.dumps(deep)
    ok: list[Any] = []
    cur = ok
    for _ in range(wire.MAX_DEPTH - 1):
        cur.append([])
        cur = cur[0]
    assert wire.loads(wire.dumps(ok)) == ok  # the control: just under the cap passes


def test_a_self_referencing_container_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(wire.WireError):
        wire.dumps(loop)


def test_item_and_size_caps() -> None:
    caps = wire.Caps(max_items=10)
    with pytest.raises(wire.WireError, match="items"):
        wire.dumps(list(range(20)), caps)
    assert wire.loads(wire.dumps(list(range(5)), caps), caps) == list(range(5))
    with pytest.raises(wire.WireError, match="over"):
        wire.frame({"k": "ok", "value": ["s", "x" * 200]}, wire.Caps(max_message=100))
    with pytest.raises(wire.WireError, match="bits"):
        wire.dumps(1 << 70000)


@pytest.mark.parametrize(
    "junk",
    [
        b"",
        b"\xff\xfe",
        b"{",
        b"[]",
        b'["x"]',
        b'["i", 3]',
        b'["i", "1e5"]',
        b'["i", "0x"]',
        b'["i", "0x-1"]',
        b'["i", "0x1_0"]',
        b'["i", "\xd9\xa3"]',
        b'["f", 1.5]',
        b'["f", "zz"]',
        b'["y", "!!!"]',
        b'["d", "one"]',
        b'["b", 1]',
        b'["l", {"a": 1}]',
        b'["D", [[["s","a"]]]]',
        b'["D", [[["l",[]], ["n"]]]]',
        b'["h", {"id": 1}]',
        b'["p", "os.system", "x"]',
        b'["da", 2026, 13, 1]',
        b'["dt", 1, 1, 1, 0, 0, 0, 0, 0, [1, 2]]',
        b"NaN",
        b'{"a": 1, "a": 2}',
        b"[" * 100000 + b"]" * 100000,
    ],
)
def test_junk_is_refused(junk: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.loads(junk)


@given(st.binary(max_size=64))
def test_random_bytes_are_refused_or_decoded(data: bytes) -> None:
    """Nothing but ``WireError`` escapes the reader, whatever the bytes."""
    with contextlib.suppress(wire.WireError):
        wire.loads(data)


def _pipe_link(caps: wire.Caps | None = None) -> tuple[wire.Link, int]:
    r, w = os.pipe()
    return wire.Link(r, os.open(os.devnull, os.O_WRONLY), caps), w


def test_link_frames_round_trip_and_refuse_an_oversized_header() -> None:
    link, w = _pipe_link(wire.Caps(max_message=1000))
    try:
        msg = {"k": "ok", "id": 1, "value": wire.Encoder().encode((1.5, "x"))}
        wire.write_all(w, wire.frame(msg, link.caps))
        assert link.receive(timeout_s=5) == msg
        wire.write_all(w, struct.pack(">I", 1001))
        with pytest.raises(wire.WireError, match="announced"):
            link.receive(timeout_s=5)
    finally:
        os.close(w)
        link.close()


def test_link_times_out_and_sees_eof() -> None:
    link, w = _pipe_link()
    try:
        with pytest.raises(TimeoutError):
            link.receive(timeout_s=0.01)
        os.close(w)
        with pytest.raises(EOFError):
            link.receive(timeout_s=5)
    finally:
        link.close()


def test_link_refuses_a_body_that_is_not_a_message() -> None:
    link, w = _pipe_link()
    try:
        wire.write_all(w, struct.pack(">I", 2) + b"[]")
        with pytest.raises(wire.WireError, match="kind"):
            link.receive(timeout_s=5)
    finally:
        os.close(w)
        link.close()


def test_record_lines() -> None:
    rec = {"kind": "item", "nodeid": "t.py::x"}
    assert wire.parse_record(wire.record_line(rec)[:-1]) == rec
    with pytest.raises(wire.WireError):
        wire.parse_record(b"[1]")
    with pytest.raises(wire.WireError):
        wire.record_line({"kind": "x", "pad": "y" * wire.MAX_RECORD_LINE})


def test_other_plain_values() -> None:
    for v in (uuid.uuid4(), fractions.Fraction(-3, 7), dt.timedelta(days=-1, microseconds=3)):
        assert key(wire.loads(wire.dumps(v))) == key(v)
    named = dt.timezone(dt.timedelta(hours=2), "CEST")
    back = wire.loads(wire.dumps(dt.time(1, tzinfo=named)))
    assert back.tzinfo.tzname(None) == "CEST"


def test_every_in_sandbox_module_is_listed_and_imports_only_the_standard_library() -> None:
    """FILES names every module the executor mounts; each imports the standard library (pytest on
    the judge's side) and nothing else at run time (``executord`` only for type checking)."""
    names = sorted(p.name for p in REPORTER_DIR.glob("*.py") if p.name != "__init__.py")
    assert sorted(FILES) == names
    for name in names:
        tree = ast.parse(pathlib.Path(REPORTER_DIR, name).read_text(encoding="utf-8"))
        guarded = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in guarded or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for mod in mods:
                top = str(mod).split(".")[0]
                judge_side = ("__future__", "pytest", "_pytest")
                assert top in sys.stdlib_module_names or top in judge_side, (
                    name,
                    mod,
                )
