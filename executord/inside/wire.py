"""The judge's wire: the one module the supervisor, the judge, the subject and the daemon all read.

Standard library only. Inside the sandbox it is loaded by file path under the private name
``_patchgate_wire`` (never from ``sys.path``, so a production module called ``wire`` is neither
shadowed nor able to shadow it); the daemon imports it as ``executord.inside.wire``.

Processes (DESIGN §6.7, §9)
---------------------------
* **supervisor** (``supervisor.py``, PID 1, uid 0, only SETUID/SETGID/KILL): reads the run's
  config (below), connects to the executor's report socket, then starts the subject and the judge
  as two non-root uids, relays the judge's records and adds its own, enforces the clock bound,
  reaps every child, exits with the judge's exit status.
* **judge**: pytest with the pinned property files, ``-p patchgate_reporter -p patchgate_judge``.
  ``patchgate_judge`` makes imports of the production top-level names resolve to proxy modules.
* **subject** (``subject.py``): imports the patched production code on request, answers calls.

Pipes, all inherited file descriptors (no filesystem socket the subject could open):
``judge <-> subject`` (the call link, two pipes), ``judge -> supervisor`` (the judge's records),
``subject -> supervisor`` (the subject's executed report). The fd numbers are passed in the
children's environment: ``PATCHGATE_JUDGE_LINK=<read fd>,<write fd>``,
``PATCHGATE_REPORT_FD=<fd>`` (judge), ``PATCHGATE_SUBJECT_LINK=<read fd>,<write fd>``,
``PATCHGATE_SUBJECT_REPORT_FD=<fd>`` (subject); plus ``PATCHGATE_JUDGE_CONFIG`` /
``PATCHGATE_SUBJECT_CONFIG``: a JSON object (``ROLE_KEYS`` below).

Framing (the call link)
-----------------------
Each message is a 4-byte big-endian unsigned length, then that many bytes of UTF-8 JSON text
holding one JSON object. A length over ``max_message`` (default 16 MiB) is refused before a byte
of the body is read; so is invalid UTF-8, invalid JSON, a non-object, a duplicate key, a JSON
nesting deeper than ``max_depth`` (default 64) or more than ``max_items`` (default 1,000,000)
values in one message. A refusal is ``WireError`` (the link is then dead: never resynchronised,
never truncated silently). The record pipes (judge/subject -> supervisor) carry one JSON object
per line (``\\n``), each at most ``MAX_RECORD_LINE`` bytes, as the executor's channel does.

Why JSON with tagged values: ``json.loads`` only ever builds dict, list, str, int, float, bool and
None, so reading a message cannot run code or build an object of the sender's choosing (pickle
can; marshal builds code objects). The tags keep what plain JSON loses.

Values
------
Every value is a JSON array ``[tag, ...]``. Plain data goes BY VALUE and is recognised by its
EXACT type (``type(v) is int``, never ``isinstance``: a patch's subclass of ``Decimal`` or ``int``
is not plain data, it is a handle):

=====  ==============================  =============================================================
tag    type                            payload
=====  ==============================  =============================================================
n      None                            (none)
b      bool                            true/false
i      int                             ``hex`` string (at most 65536 bits)
f      float                           ``float.hex`` string (keeps NaN, inf, -0.0)
c      complex                         real hex, imag hex
s      str                             the text (lone surrogates kept)
y      bytes                           base64 text
d      decimal.Decimal                 ``str`` of it (NaN, sNaN, -0, Infinity kept)
q      fractions.Fraction              numerator string, denominator string
dt     datetime.datetime               y, mo, d, h, mi, s, us, fold, tz
da     datetime.date                   y, mo, d
ti     datetime.time                   h, mi, s, us, fold, tz
td     datetime.timedelta              days, seconds, microseconds
       (tz: null, or [offset in microseconds, name or null]; only exact ``datetime.timezone``)
u      uuid.UUID                       32 hex digits
p      pathlib PurePosixPath,          class name, path text
       PureWindowsPath, PosixPath,
       WindowsPath
t l    tuple, list                     [values]
S F    set, frozenset                  [values]
D      dict                            [[key, value], ...] (insertion order kept)
r      record                          {"id": subject handle id or null, "type": TypeRef,
                                       "kind": "dataclass"|"namedtuple"|"enum",
                                       "fields": [[name, value], ...], "frozen": bool,
                                       "order": bool, "member": int (enum: the member's number,
                                       one per member for the run)}
h      subject handle                  {"id": int, "type": TypeRef, "callable": bool,
                                       "cls": TypeRef (when the object is a class), "exc": bool
                                       (a class that is an exception type), "package": bool (a
                                       module that is a package)}; judge -> subject: {"id"} only
j      judge object (callback)         {"id": int, "callable": bool, "name": type qualname,
                                       "iter"|"next"|"len"|"contains": true when its type has
                                       __iter__, __next__, __len__, __contains__}
=====  ==============================  =============================================================

``TypeRef`` = ``{"module": str, "qualname": str, "mro": [[module, qualname], ...]}`` (the class's
MRO without ``object``; what ``isinstance``/``issubclass`` against a proxy class reads). The
TypeRef of an exception class (an ``Exc``'s type, a handle's ``cls`` with ``exc``, a warning's
``category``) also has ``"verified": [bool, ...]``, one per MRO entry: the subject found that
class to be the one its module really holds under that name (missing or false: a proxy).

A **record** is an instance of a dataclass whose ``__eq__`` is the generated one (and no own
``__lt__``..., ``__hash__`` other than the generated/None), of a NamedTuple (a tuple subclass with
``_fields`` and no own comparison methods), or an Enum member (``fields`` = ``[["name", n],
["value", v]]``). Its fields are read from the object's storage, never through its own code, and
a class that rebound or overrides what defines its record is a handle (issue 39; the rule per
kind is in ``docs/executor.md``, "Values cannot lie"). Its fields must themselves be plain data,
records or handles. The judge compares records itself: equal when type (module, qualname) and
fields are equal, an Enum member by identity (one record per ``member``); hashable when frozen
(a frozen dataclass, a NamedTuple, an Enum). A record sent back to the subject is the original
object when ``id`` is set, else rebuilt from its fields.

A **handle** is any other object of the subject: an id in the subject's table. Its attribute
reads, method calls, item access, iteration, ``len`` and calling are calls into the subject;
comparing, hashing or truth-testing a handle in the judge raises ``TypeError`` saying to compare
its fields. A handle sent back to the subject is resolved to the original object.

A **judge object** (a callback, a sink the property passes in): any judge value that is not
plain data, a record or a subject handle. The subject gets a proxy it may call; calling it sends
a ``call`` to the judge, which runs it in the judge and answers (the link is re-entrant). A judge
object whose type is iterable, an iterator, sized or a container (a generator, a ``range``, a
dict's ``keys()`` the property passes in) is one in the subject too: ``iter``, ``next``, ``len``
and ``in`` send an ``op`` to the judge and run there; its values cross like any value (no other
operation: a callback stays truthy, and nothing but these four runs judge code for the subject).

Caps while encoding: nesting depth ``max_depth``, ``max_items`` values, ``max_message`` bytes;
past a cap the encoder raises ``WireError`` (never truncates). A self-referencing container is
refused (depth).

Messages (JSON objects on the call link; ``"k"`` is the kind, ``"id"`` a call id chosen by the
side that asks, unique per side; replies carry the id they answer)
----------------------------------------------------------------------------------------------
judge -> subject:

* ``{"k": "hello"}`` -> ``{"k": "ok", "value": ["s", version]}`` (first message, link check)
* ``{"k": "import", "id", "module": name}`` -> the module as a handle
* ``{"k": "getattr", "id", "obj": hid, "name": str}``,
  ``{"k": "setattr", "id", "obj": hid, "name": str, "value": v}`` (on a handle, never on a module)
* ``{"k": "call", "id", "obj": hid, "name": str|null, "args": [v], "kwargs": [[k, v]]}``
  (``name`` set: call the attribute ``name`` of ``obj``; null: call ``obj`` itself)
* ``{"k": "op", "id", "obj": hid, "op": OP, "args": [v]}`` with OP one of ``len``, ``iter``,
  ``next`` (reply ``["n"]`` plus ``"stop": true`` at the end), ``getitem``, ``setitem``,
  ``delitem``, ``contains``, ``repr``, ``str``, ``int``, ``float``, ``index``, ``format``,
  ``bytes``, ``dir``, an ``operator`` function name (``add``, ``sub``, ``mul``, ``truediv``,
  ``floordiv``, ``mod``, ``pow``, ``matmul``, ``and_``, ``or_``, ``xor``, ``lshift``,
  ``rshift``, ``neg``, ``pos``, ``abs``, ``invert``) or the same with an ``r`` in front (the
  reflected form: ``args[0] <op> obj``), or ``await`` (a coroutine run to its end), ``anext``
  and ``aclose`` (an async generator's next item, its close), each on the subject's one event
  loop and only for the exact built-in types (the judge turns a handle of type
  ``builtins.coroutine``/``builtins.async_generator`` into its own coroutine/async generator
  that asks these). Results cross like any value: ``int(h)`` of a handle is
  an exact ``int`` in the judge or the call fails (never a subclass). ``isinstance`` against a
  proxy class needs no call: the handle's TypeRef is the subject's answer, given when it was made
* ``{"k": "release", "ids": [hid]}`` (no reply; ids the judge no longer holds)
* ``{"k": "begin", "id", "nodeid": str}`` (a test's setup starts) and
  ``{"k": "end", "id", "nodeid": str}`` (its teardown ended) -> ``ok``; the subject attributes
  what ran in between to that test (its executed report, on its own pipe)
* ``{"k": "bye"}`` (the judge is done; the subject exits 0)

Every judge -> subject call may carry ``"ctx": {"env": {"set": {name: value}, "unset": [name]}
| absent, "cwd": str | absent}``: how the judge's ``os.environ`` differs from the judge's own at
its start (sent when that changed since the last call; ``monkeypatch.setenv``, the reporter's
``PATCHGATE_OUTPUT``), applied on the subject's own start environment (its ``HOME`` and
``TMPDIR`` stay its own), and the judge's working directory (when changed), before the call.

subject -> judge:

* ``{"k": "ok", "id", "value": v}`` / ``{"k": "raise", "id", "exc": Exc}``
* ``{"k": "call", "id", "obj": jid, "args", "kwargs"}`` (a callback) -> the judge answers with
  ``ok``/``raise`` carrying that id; the subject's pending call waits meanwhile
* ``{"k": "op", "id", "obj": jid, "op": "iter"|"next"|"len"|"contains", "args": [v]}`` (a
  judge object's protocol, answered like a ``call``; the end of an iterator is a ``raise`` of
  ``StopIteration``, rebuilt as itself)
* forwarded effects, sent as they happen during a call, before its reply:
  ``{"k": "out", "stream": "stdout"|"stderr", "text": str}``,
  ``{"k": "log", "name": str, "level": int, "msg": str}``,
  ``{"k": "warn", "category": TypeRef, "message": str, "filename": str, "lineno": int}``

``Exc`` = ``{"type": TypeRef, "builtin": bool, "message": str, "args": [v] (plain data only, else
``["s", repr]``), "traceback": str (the last frames, capped), "handle": hid | null, "group":
{"message": str, "exceptions": [Exc]} (an exception group's members; at most 8 levels, 256
each)}``. A ``raise`` answer with ``"refused": str`` is the link's refusal (the real answer could
not be carried): the judge voids the test and raises ``WireError``. The judge raises its own
class for the first MRO entry that is ``verified`` and reads as the judge's class of that name,
and before it proxy exception classes named after the subject's (module and qualname), each
deriving from the next; with the message (a group with its members); the instance carries
``_patchgate_subject = True`` (``SUBJECT_MARK``) and ``_patchgate_traceback``. Uncaught, a marked
exception makes the test ``error`` whatever its type.

A judge callback that raised answers ``{"k": "raise", "id", "exc": {"type": TypeRef, "builtin":
bool, "message": str, "handle": hid | null}}``: ``handle`` set when the exception is one the
subject raised (it is re-raised there as the original object), else a builtin type is rebuilt by
name and anything else is a ``RuntimeError`` naming it. Handle ids are fresh per export (each
judge proxy releases its own).

Every call the judge makes has a timeout (``call_timeout_ms`` of its role config): no answer in
time, EOF, or a refused message raises ``SubjectLost`` (a marked ``RuntimeError``) and the link
is dead for the rest of the run.

Supervisor config (a JSON file the executor writes; path in ``argv[1]`` of the supervisor)
-----------------------------------------------------------------------------------------
``CONFIG_KEYS``: ``v`` (1), ``socket`` (the executor's report socket, required), ``nonce`` (the
run's nonce; else taken from ``PATCHGATE_REPORT_NONCE`` of the supervisor's environment),
``switch_users`` (bool; false is TEST ONLY: children run as the supervisor's own uid and the config
must also say ``"test_only": true``), ``judge`` and ``subject``: each ``{"argv": [str], "uid": int,
"gid": int, "groups": [int], "env": {str: str}, "cwd": str}``, ``bound_ms`` (per-test clock bound;
0 = none), ``grace_ms`` (how long past the bound the supervisor waits for the judge's own alarm
before it kills the subject), ``deadline_ms`` (the whole run; 0 = none), ``call_timeout_ms``,
``production`` (the top-level production names), ``source_roots`` (absolute paths the subject puts
first on ``sys.path``), ``targets`` (path of ``targets.json``, or ""), ``caps`` ({``max_message``,
``max_depth``, ``max_items``}, optional), and for mutation v2 (DESIGN §6.9): ``variants_file``
(path of the variants' sources, readable by uid 0 only, like this config), ``variants`` (a list of
``{"path": absolute path of the production file, "offset": int, "size": int}``: where each
variant's source lies in ``variants_file``; optionally ``"batch"``: the absolute path of that
variant's own batch file, which its judge gets as ``PATCHGATE_REPORT_BATCH`` in place of the
judge's), ``variant_bound_ms`` (each test's clock bound with
variants: min(``bound_ms``, this) when > 0), ``reset_dirs`` (the writable places emptied between
variants: the entries each role's uid owns; default none), ``zygotes`` (bool, default false: fork
each variant's processes and resets from one zygote per role, ``zygote.py``).

Variants (mutation v2)
----------------------
With ``variants`` the supervisor runs one judge/subject pair per variant, in order, one at a time:
before each pair it sends ``{"kind": "variant", "index": n}`` (1-based), then the pair's records
exactly as for a run without variants (the judge's ``start`` ... ``finish``, its own records, and
the pair's final ``judge`` record). The subject of pair n gets ONLY variant n, through an
inherited file descriptor (``PATCHGATE_SUBJECT_VARIANT_FD``; a memfd, else a pipe): one JSON line
``{"path": str}``, then the source bytes to the end. The subject reads it and closes it before it
imports anything of production; no environment variable holds a source, and the variants file is
the supervisor's alone. The subject's meta-path finder (the same for every variant: controls are
variants whose source equals the file) serves the module whose file is ``path`` with
``compile(source, path, "exec")``; the file on disk is never changed, and the source is dropped
once compiled (a re-import runs the same code object).

Between two pairs (and after the last) the supervisor resets: every process of the subject's and
the judge's uids killed (``switch_users``; else their sessions), then a helper (``zygote.py reset``)
started as each of the two uids removes what that uid owns in ``reset_dirs`` and its own
``HOME``/``TMPDIR`` (``/tmp``: the per-test output areas and ``tmp_path`` dirs included;
``/dev/shm``, ``/dev/mqueue``), and (``switch_users``) the SysV shared memory segments,
semaphore sets and message queues the uid owns or created (``/proc/sysvipc``, ``IPC_RMID``). A
reset that fails ends the run: ``{"kind": "reset", "ok": false, "detail": str}``, and no later
variant runs (the daemon makes them ``error``). The run's ``deadline_ms`` covers every pair; past
it the pair running is ended (``judge`` ``hang``) and no later pair starts. The supervisor then
exits 0 when every pair ran (each pair's judge status is in its ``judge`` record), else 1.

With ``zygotes`` the pairs and the resets are forked (``zygote.py``): each role's zygote starts
once, as that role's uid, before the first variant; the killing between pairs spares the two
zygotes (and only them, by pid). A zygote that is unfit, dies or does not answer is not used
again: the rest of the batch starts fresh interpreters, as without ``zygotes``. The records are
the same either way.

Role configs (``ROLE_KEYS``) the supervisor passes: judge ``{"production", "call_timeout_ms",
"caps"}``; subject ``{"production", "source_roots", "targets", "caps"}``.

Records (one JSON line each, stamped by the supervisor with ``v``, ``nonce``, ``seq``)
-------------------------------------------------------------------------------------
The judge's reporter writes its records (``start``, ``collect``, ``item``, ``finish``, as today,
without nonce or seq; ``item`` gains ``failure_kind``: ``predicate`` | ``subject`` |
``judge_error`` | "" for a pass or skip) and ``begin`` (``{"kind": "begin", "nodeid"}``, a test
starts: the supervisor starts its clock and does not relay it). The supervisor relays the judge's
records in order and adds (never before the judge's ``start``; buffered until then, and flushed
at the end if the judge never started):

* ``{"kind": "executed", "phase": "import"|"test", "nodeid": str ("" for import), "targets":
  [name]}``: the subject's executed report (the daemon counts ``import`` for every test of the
  run). A necessary condition, never evidence on its own: the subject may lie about it.
* ``{"kind": "subject", "event": "exit"|"crash"|"hang", "nodeid": str (the test running, ""
  between tests), "detail": str, "returncode": int|null}``: the subject ended (exit: status;
  crash: killed by a signal, or killed by the supervisor because it outlived the judge) or was
  killed past bound + grace (hang). A test named by one is ``error`` (``exceeded_bound`` for
  ``hang``), never ``pass``. When the judge saw the subject's link close before the subject
  could be reaped, the supervisor still names the test (it waits for a subject that has begun
  to exit before it relays that test's ``item``). After a subject event the subject is gone for
  the rest of the run: later tests that call production code are ``error`` (``SubjectLost``,
  saying where it went); a daemon may re-run them alone.
* ``{"kind": "judge", "event": "exit"|"crash"|"hang", "returncode": int|null, "detail": str}``
  once at the end: how the judge ended (its exit status is also the supervisor's; with variants,
  once per pair, and the supervisor's status is as the Variants section says).
* with variants: ``{"kind": "variant", "index": n}`` before each pair's records, and
  ``{"kind": "reset", "ok": false, "detail": str}`` when a reset failed (nothing follows).

Anything the subject writes to its report pipe other than a well-formed executed record is
dropped and noted once as ``{"kind": "subject", "event": "garbage", ...}``; nothing the subject
writes is ever relayed as an outcome.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as _dt
import decimal
import fractions
import json
import os
import pathlib
import select
import struct
import time
import uuid
from collections.abc import Callable
from typing import Any

__all__ = [
    "CONFIG_KEYS",
    "MAX_RECORD_LINE",
    "PROTOCOL",
    "ROLE_KEYS",
    "SUBJECT_MARK",
    "Caps",
    "Decoder",
    "Encoder",
    "Link",
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
CONFIG_KEYS = frozenset(
    {
        "v",
        "socket",
        "nonce",
        "switch_users",
        "test_only",
        "judge",
        "subject",
        "bound_ms",
        "grace_ms",
        "deadline_ms",
        "call_timeout_ms",
        "production",
        "source_roots",
        "targets",
        "caps",
        "variants_file",
        "variants",
        "variant_bound_ms",
        "reset_dirs",
        "zygotes",
    }
)
ROLE_KEYS = {
    "judge": frozenset({"production", "call_timeout_ms", "caps"}),
    "subject": frozenset({"production", "source_roots", "targets", "caps"}),
}

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
