"""The judge's wire: the one module the supervisor, the judge, the subject and the daemon all read.

Standard library only: the call link's framing and values, the supervisor's config
(``SupervisorConfig``), the report records (``Kind``), the role configs. The protocol is told in
docs/reference/inside-wire.md.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as _dt
import decimal
import enum
import fractions
import json
import os
import pathlib
import select
import struct
import time
import uuid
from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

__all__ = [
    "CONFIG_KEYS",
    "FAILURE_KINDS",
    "ITEM_OUTCOMES",
    "JUDGE_EVENTS",
    "MAX_RECORD_LINE",
    "PROTOCOL",
    "ROLE_KEYS",
    "SUBJECT_EVENTS",
    "SUBJECT_MARK",
    "SUPERVISOR_KINDS",
    "VARIANT_KINDS",
    "Caps",
    "Decoder",
    "Encoder",
    "Kind",
    "Link",
    "RoleConfig",
    "SupervisorConfig",
    "VariantEntry",
    "WireError",
    "dumps",
    "frame",
    "is_plain",
    "loads",
    "parse",
    "parse_record",
    "record_line",
    "role_env",
    "type_ref",
    "write_all",
]

SUBJECT_MARK = "_patchgate_subject"


# -- the supervisor's config (the daemon writes it, the supervisor reads it) ---------------------


class RoleConfig(TypedDict):
    """How the supervisor starts one role (the judge or the subject)."""

    argv: list[str]
    uid: int
    gid: int
    groups: list[int]
    env: dict[str, str]
    cwd: str


class VariantEntry(TypedDict):
    """Where one variant's source lies in the variants file, and its batch file ("" default)."""

    path: str
    offset: int
    size: int
    batch: NotRequired[str]


class SupervisorConfig(TypedDict, total=False):
    """The supervisor's config (``supervisor.json``); docs/reference/inside-wire.md says what
    each key means."""

    v: int
    socket: str
    nonce: str
    switch_users: bool
    test_only: bool
    judge: RoleConfig
    subject: RoleConfig
    bound_ms: int
    grace_ms: int
    deadline_ms: int
    call_timeout_ms: int
    production: list[str]
    source_roots: list[str]
    targets: str
    caps: dict[str, int]
    variants_file: str
    variants: list[VariantEntry]
    variant_bound_ms: int
    reset_dirs: list[str]
    zygotes: bool


CONFIG_KEYS = SupervisorConfig.__required_keys__ | SupervisorConfig.__optional_keys__
ROLE_KEYS = {
    "judge": frozenset({"production", "call_timeout_ms", "caps"}),
    "subject": frozenset({"production", "source_roots", "targets", "caps"}),
}


# -- the records of a run's report stream (reporter, supervisor) ---------------------------------


class Kind(enum.StrEnum):
    """A report record's ``kind``: the reporter's, then those the supervisor adds."""

    START = "start"
    COLLECT = "collect"
    BEGIN = "begin"
    ITEM = "item"
    FINISH = "finish"
    EXECUTED = "executed"
    SUBJECT = "subject"
    JUDGE = "judge"
    VARIANT = "variant"
    RESET = "reset"


SUPERVISOR_KINDS = frozenset({Kind.EXECUTED, Kind.SUBJECT, Kind.JUDGE})  # after the finish too
VARIANT_KINDS = frozenset({Kind.VARIANT, Kind.RESET})  # the supervisor's, between pairs
ITEM_OUTCOMES = frozenset({"pass", "fail", "error", "skip", "exceeded_bound"})
FAILURE_KINDS = frozenset({"", "predicate", "subject", "judge_error"})
SUBJECT_EVENTS = frozenset({"exit", "crash", "hang", "lost", "garbage"})
JUDGE_EVENTS = frozenset({"exit", "crash", "hang"})

MAX_MESSAGE = 16 << 20
MAX_DEPTH = 64
MAX_ITEMS = 1_000_000
MAX_INT_BITS = 1 << 16
MAX_RECORD_LINE = 128 << 10
PROTOCOL = "patchgate-judge/1"
_HEADER = struct.Struct(">I")
_HEX = "0123456789abcdef"
_PATHS = {
    c.__name__: c
    for c in (
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
        pathlib.PosixPath,
        pathlib.WindowsPath,
    )
}
_SCALARS = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        decimal.Decimal,
        fractions.Fraction,
        _dt.datetime,
        _dt.date,
        _dt.time,
        _dt.timedelta,
        uuid.UUID,
        *_PATHS.values(),
    }
)
_CONTAINERS = frozenset({tuple, list, set, frozenset, dict})


class WireError(BaseException):
    """A message or value the wire refuses (over a cap, malformed, of a type it cannot carry).

    It derives from ``BaseException`` directly, as ``SystemExit`` and ``KeyboardInterrupt`` do,
    and from no type a test would catch (``ValueError``, ``TypeError``, ``Exception``): a
    refusal of the link is never an answer of the code under test, so ``pytest.raises`` of a
    built-in, ``except Exception`` or ``contextlib.suppress(Exception)`` must not turn it into
    one. The judge's link also records every refusal (``judgelink.Client.void``), so the test is
    ``error`` even under a bare ``except:``; the type keeps the ordinary handlers out of it. The
    code of the link catches it by name."""


@dataclasses.dataclass(frozen=True)
class Caps:
    """The link's limits; refusing past them, never truncating."""

    max_message: int = MAX_MESSAGE
    max_depth: int = MAX_DEPTH
    max_items: int = MAX_ITEMS

    @classmethod
    def from_json(cls, raw: object) -> Caps:
        """Caps from a config's ``caps`` object (missing keys: the defaults)."""
        if not isinstance(raw, dict):
            return cls()
        vals = {k: raw[k] for k in ("max_message", "max_depth", "max_items") if k in raw}
        if any(type(v) is not int or v <= 0 for v in vals.values()):
            raise WireError("caps must be positive integers")
        return cls(**vals)


def is_plain(value: object) -> bool:
    """True when ``value`` is plain data by exact type, containers included (no cap check)."""
    t = type(value)
    if t in _SCALARS:
        return t not in (_dt.datetime, _dt.time) or _tz_ok(value.tzinfo)  # type: ignore[attr-defined]
    if t is dict:
        return all(is_plain(k) and is_plain(v) for k, v in value.items())  # type: ignore[attr-defined]
    if t in _CONTAINERS:
        return all(is_plain(v) for v in value)  # type: ignore[attr-defined]
    return False


def _tz_ok(tz: object) -> bool:
    return tz is None or type(tz) is _dt.timezone


def _tz_out(tz: _dt.tzinfo | None) -> list[Any] | None:
    if tz is None:
        return None
    off = tz.utcoffset(None) or _dt.timedelta(0)  # a datetime.timezone always has one
    name = tz.tzname(None)
    default = _dt.timezone(off).tzname(None)
    return [off // _dt.timedelta(microseconds=1), None if name == default else name]


def _tz_in(raw: object) -> _dt.timezone | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != 2 or type(raw[0]) is not int:
        raise WireError("bad time zone")
    off = _dt.timedelta(microseconds=raw[0])
    return _dt.timezone(off) if raw[1] is None else _dt.timezone(off, _str(raw[1]))


Other = Callable[[object], list[Any]]
Rebuild = Callable[[str, Any], object]


class Encoder:
    """Turns a value into its tagged form; ``other`` encodes what is not plain data (a record,
    a handle, a judge object: each side has its own rule). Counts items and depth."""

    def __init__(self, other: Other | None = None, caps: Caps | None = None) -> None:
        self.other = other
        self.caps = caps or Caps()
        self.items = 0

    def encode(self, value: object, depth: int = 0) -> list[Any]:
        self.items += 1
        if self.items > self.caps.max_items:
            raise WireError(f"a value of more than {self.caps.max_items} items")
        if depth > self.caps.max_depth:
            raise WireError(f"a value nested deeper than {self.caps.max_depth}")
        t = type(value)
        scalar = _encode_scalar(t, value)
        if scalar is not None:
            return scalar
        d = depth + 1
        if t in (tuple, list, set, frozenset):
            tag = {tuple: "t", list: "l", set: "S", frozenset: "F"}[t]
            return [tag, [self.encode(v, d) for v in value]]  # type: ignore[attr-defined]
        if t is dict:
            return ["D", [[self.encode(k, d), self.encode(v, d)] for k, v in value.items()]]  # type: ignore[attr-defined]
        if self.other is None:
            raise WireError(f"cannot carry a value of type {t.__qualname__}")
        return self.other(value)


def _encode_scalar(t: type, v: Any) -> list[Any] | None:
    if v is None:
        return ["n"]
    if t is bool:
        return ["b", v]
    if t is int:
        if v.bit_length() > MAX_INT_BITS:
            raise WireError(f"an int of more than {MAX_INT_BITS} bits")
        return ["i", hex(v)]
    if t is float:
        return ["f", v.hex()]
    if t is complex:
        return ["c", v.real.hex(), v.imag.hex()]
    if t is str:
        return ["s", v]
    if t is bytes:
        return ["y", base64.b64encode(v).decode("ascii")]
    if t is decimal.Decimal:
        return ["d", str(v)]
    if t is fractions.Fraction:
        return ["q", *(_encode_scalar(int, x)[1] for x in (v.numerator, v.denominator))]  # type: ignore[index]
    if t is _dt.datetime and _tz_ok(v.tzinfo):
        return ["dt", v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, v.fold,
                _tz_out(v.tzinfo)]  # fmt: skip
    if t is _dt.date:
        return ["da", v.year, v.month, v.day]
    if t is _dt.time and _tz_ok(v.tzinfo):
        return ["ti", v.hour, v.minute, v.second, v.microsecond, v.fold, _tz_out(v.tzinfo)]
    if t is _dt.timedelta:
        return ["td", v.days, v.seconds, v.microseconds]
    if t is uuid.UUID:
        return ["u", v.hex]
    if t.__name__ in _PATHS and _PATHS[t.__name__] is t:
        return ["p", t.__name__, str(v)]
    return None


class Decoder:
    """Turns a tagged form back into a value; ``rebuild(tag, payload)`` makes records, handles
    and judge objects (tags ``r``, ``h``, ``j``). Refuses anything malformed with ``WireError``."""

    def __init__(self, rebuild: Rebuild | None = None, caps: Caps | None = None) -> None:
        self.rebuild = rebuild
        self.caps = caps or Caps()
        self.items = 0

    def decode(self, raw: object, depth: int = 0) -> Any:
        self.items += 1
        if self.items > self.caps.max_items or depth > self.caps.max_depth:
            raise WireError("a value over the wire's caps")
        if not isinstance(raw, list) or not raw or not isinstance(raw[0], str):
            raise WireError("a value without a tag")
        tag, rest = raw[0], raw[1:]
        try:
            return self._decode(tag, rest, depth + 1)
        except WireError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, OverflowError, ArithmeticError) as exc:
            raise WireError(f"a malformed {tag!r} value: {exc}") from exc

    def _decode(self, tag: str, rest: list[Any], d: int) -> Any:
        if tag in ("t", "l", "S", "F"):
            (items,) = rest
            if not isinstance(items, list):
                raise WireError("a container without a list")
            vals = [self.decode(v, d) for v in items]
            return {"t": tuple, "l": list, "S": set, "F": frozenset}[tag](vals)
        if tag == "D":
            (pairs,) = rest
            out: dict[Any, Any] = {}
            for pair in pairs:
                k, v = pair
                out[self.decode(k, d)] = self.decode(v, d)
            return out
        if tag in ("r", "h", "j"):
            (payload,) = rest
            if self.rebuild is None or not isinstance(payload, dict):
                raise WireError(f"a {tag!r} value where none may be")
            return self.rebuild(tag, payload)
        return _decode_scalar(tag, rest)


def _str(v: object) -> str:
    if type(v) is not str:
        raise WireError("a text field that is not text")
    return v


def _ints(rest: list[Any], n: int) -> list[int]:
    if len(rest) < n or any(type(x) is not int for x in rest[:n]):
        raise WireError("integer fields expected")
    return rest[:n]


def _int(text: object) -> int:
    s = _str(text)
    digits = s[3:] if s.startswith("-0x") else s[2:] if s.startswith("0x") else ""
    if not digits or len(digits) > MAX_INT_BITS // 4 or digits.strip(_HEX) or not s.isascii():
        raise WireError("a malformed int")
    return int(s, 16)


def _decode_scalar(tag: str, rest: list[Any]) -> Any:
    if tag == "n" and not rest:
        return None
    if tag == "b" and len(rest) == 1 and type(rest[0]) is bool:
        return rest[0]
    if tag == "i" and len(rest) == 1:
        return _int(rest[0])
    if tag == "f" and len(rest) == 1:
        return float.fromhex(_str(rest[0]))
    if tag == "c" and len(rest) == 2:
        return complex(float.fromhex(_str(rest[0])), float.fromhex(_str(rest[1])))
    if tag == "s" and len(rest) == 1:
        return _str(rest[0])
    if tag == "y" and len(rest) == 1:
        return base64.b64decode(_str(rest[0]).encode("ascii"), validate=True)
    if tag == "d" and len(rest) == 1:
        return decimal.Decimal(_str(rest[0]))
    if tag == "q" and len(rest) == 2:
        return fractions.Fraction(_int(rest[0]), _int(rest[1]))
    if tag == "dt" and len(rest) == 9:
        y, mo, d, h, mi, s, us, fold = _ints(rest, 8)
        return _dt.datetime(y, mo, d, h, mi, s, us, tzinfo=_tz_in(rest[8]), fold=fold)
    if tag == "da" and len(rest) == 3:
        return _dt.date(*_ints(rest, 3))
    if tag == "ti" and len(rest) == 6:
        h, mi, s, us, fold = _ints(rest, 5)
        return _dt.time(h, mi, s, us, tzinfo=_tz_in(rest[5]), fold=fold)
    if tag == "td" and len(rest) == 3:
        return _dt.timedelta(*_ints(rest, 3))
    if tag == "u" and len(rest) == 1:
        return uuid.UUID(hex=_str(rest[0]))
    if tag == "p" and len(rest) == 2 and rest[0] in _PATHS:
        return _PATHS[rest[0]](_str(rest[1]))
    raise WireError(f"an unknown or malformed value tag {tag!r}")


def dumps(value: object, caps: Caps | None = None) -> bytes:
    """Plain data only, tagged, as JSON bytes (no records, handles or callbacks)."""
    return json.dumps(Encoder(None, caps).encode(value), separators=(",", ":")).encode()


def loads(data: bytes, caps: Caps | None = None) -> Any:
    """The inverse of ``dumps``; ``WireError`` on anything else."""
    return Decoder(None, caps).decode(parse(data, caps or Caps()))


def type_ref(cls: type) -> dict[str, Any]:
    """The TypeRef of ``cls`` (module, qualname, its MRO without ``object``)."""
    return {
        "module": str(getattr(cls, "__module__", "")),
        "qualname": str(getattr(cls, "__qualname__", cls.__name__)),
        "mro": [
            [str(getattr(c, "__module__", "")), str(getattr(c, "__qualname__", c.__name__))]
            for c in cls.__mro__
            if c is not object
        ],
    }


def _no_dups(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise WireError("a message with a duplicate key")
    return out


def _no_constant(name: str) -> Any:
    raise WireError(f"a bare JSON constant {name}")


#: The message codecs, made once (``json.loads``/``dumps`` with options build a new one per
#: call, and every test's call to the subject is four messages).
_DECODER = json.JSONDecoder(object_pairs_hook=_no_dups, parse_constant=_no_constant)
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def parse(data: bytes, caps: Caps) -> Any:
    """JSON text of a message body, refused when malformed or over the caps."""
    if len(data) > caps.max_message:
        raise WireError(f"a message over {caps.max_message} bytes")
    try:
        text = data.decode("utf-8")
        return _DECODER.decode(text)
    except WireError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise WireError(f"a message that is not JSON: {type(exc).__name__}") from exc


def frame(message: dict[str, Any], caps: Caps) -> bytes:
    """One message as its length prefix and JSON body; ``WireError`` past ``max_message``."""
    try:
        body = _ENCODER.encode(message).encode()
    except (ValueError, TypeError, RecursionError) as exc:
        raise WireError(f"a message that cannot be written: {exc}") from exc
    if len(body) > caps.max_message:
        raise WireError(f"a message over {caps.max_message} bytes")
    return _HEADER.pack(len(body)) + body


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (``OSError`` when the other end is gone)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Link:
    """One end of the call link: framed messages over a read fd and a write fd."""

    def __init__(self, rfd: int, wfd: int, caps: Caps | None = None) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.caps = caps or Caps()
        self._buf = bytearray()
        self.closed = False

    def send(self, message: dict[str, Any]) -> None:
        data = frame(message, self.caps)
        try:
            write_all(self.wfd, data)
        except OSError as exc:
            self.closed = True
            raise WireError(f"the other end is gone: {exc}") from exc

    def _fill(self, need: int, deadline: float | None) -> None:
        while len(self._buf) < need:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no answer in time")
                ready, _, _ = select.select([self.rfd], [], [], left)
                if not ready:
                    continue
            chunk = os.read(self.rfd, min(1 << 20, max(need - len(self._buf), 1 << 16)))
            if not chunk:
                self.closed = True
                raise EOFError("the other end closed the link")
            self._buf += chunk

    def receive(self, timeout_s: float | None = None) -> dict[str, Any]:
        """The next message; ``TimeoutError``, ``EOFError`` or ``WireError`` (the link is then
        not to be read again, except after a ``TimeoutError``)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self._fill(_HEADER.size, deadline)
        (size,) = _HEADER.unpack(bytes(self._buf[: _HEADER.size]))
        if size > self.caps.max_message:
            self.closed = True
            raise WireError(f"a message of {size} bytes announced, over {self.caps.max_message}")
        self._fill(_HEADER.size + size, deadline)
        body = bytes(self._buf[_HEADER.size : _HEADER.size + size])
        del self._buf[: _HEADER.size + size]
        msg = parse(body, self.caps)
        if not isinstance(msg, dict) or not isinstance(msg.get("k"), str):
            self.closed = True
            raise WireError("a message that is not an object with a kind")
        return msg

    def close(self) -> None:
        self.closed = True
        for fd in {self.rfd, self.wfd}:
            with contextlib.suppress(OSError):
                os.close(fd)


def record_line(record: dict[str, Any]) -> bytes:
    """One record as a JSON line (ASCII), ``WireError`` past ``MAX_RECORD_LINE``."""
    line = json.dumps(record, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"
    if len(line) > MAX_RECORD_LINE:
        raise WireError(f"a record over {MAX_RECORD_LINE} bytes")
    return line


def parse_record(line: bytes) -> dict[str, Any]:
    """A record line (without its newline) as an object with a string ``kind``."""
    if len(line) > MAX_RECORD_LINE:
        raise WireError(f"a record over {MAX_RECORD_LINE} bytes")
    rec = parse(line, Caps(max_message=MAX_RECORD_LINE, max_depth=16, max_items=100_000))
    if not isinstance(rec, dict) or not isinstance(rec.get("kind"), str):
        raise WireError("a record that is not an object with a kind")
    return rec


def role_env(name: str) -> dict[str, Any]:
    """A role config from the environment variable ``name`` (``{}`` when absent or malformed)."""
    raw = os.environ.get(name, "")
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}
