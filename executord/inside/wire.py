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
i      int                             decimal string (at most 4300 digits)
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
                                       "fields": [[name, value], ...], "frozen": bool}
h      subject handle                  {"id": int, "type": TypeRef, "callable": bool}
j      judge object (callback)         {"id": int, "callable": bool}
=====  ==============================  =============================================================

``TypeRef`` = ``{"module": str, "qualname": str, "mro": [[module, qualname], ...]}`` (the class's
MRO without ``object``; what ``isinstance``/``issubclass`` against a proxy class reads).

A **record** is an instance of a dataclass whose ``__eq__`` is the generated one (and no own
``__lt__``..., ``__hash__`` other than the generated/None), of a NamedTuple (a tuple subclass with
``_fields`` and no own comparison methods), or an Enum member (``fields`` = ``[["name", n],
["value", v]]``). Its fields must themselves be plain data, records or handles. The judge
compares records itself: equal when type (module, qualname) and fields are equal; hashable when
frozen (a frozen dataclass, a NamedTuple, an Enum). A record sent back to the subject is the
original object when ``id`` is set, else rebuilt from its fields.

A **handle** is any other object of the subject: an id in the subject's table. Its attribute
reads, method calls, item access, iteration, ``len`` and calling are calls into the subject;
comparing, hashing or truth-testing a handle in the judge raises ``TypeError`` saying to compare
its fields. A handle sent back to the subject is resolved to the original object.

A **judge object** (a callback, a sink the property passes in): any judge value that is not
plain data, a record or a subject handle. The subject gets a proxy it may call; calling it sends
a ``call`` to the judge, which runs it in the judge and answers (the link is re-entrant).

Caps while encoding: nesting depth ``max_depth``, ``max_items`` values, ``max_message`` bytes;
past a cap the encoder raises ``WireError`` (never truncates). A self-referencing container is
refused (depth).

Messages (JSON objects on the call link; ``"k"`` is the kind, ``"id"`` a call id chosen by the
side that asks, unique per side; replies carry the id they answer)
----------------------------------------------------------------------------------------------
judge -> subject:

* ``{"k": "hello"}`` -> ``{"k": "ok", "value": ["s", version]}`` (first message, link check)
* ``{"k": "import", "id", "module": name}`` -> the module as a handle
* ``{"k": "getattr", "id", "obj": hid, "name": str}``
* ``{"k": "call", "id", "obj": hid, "name": str|null, "args": [v], "kwargs": [[k, v]]}``
  (``name`` set: call the attribute ``name`` of ``obj``; null: call ``obj`` itself)
* ``{"k": "op", "id", "obj": hid, "op": OP, "args": [v]}`` with OP one of ``len``, ``iter``,
  ``next`` (reply ``["n"]`` plus ``"stop": true`` at the end), ``getitem``, ``setitem``,
  ``delitem``, ``contains``, ``repr``, ``str``, ``dir`` (``isinstance`` against a proxy class
  needs no call: the handle's TypeRef is the subject's answer, given when the handle was made)
* ``{"k": "release", "ids": [hid]}`` (no reply; ids the judge no longer holds)
* ``{"k": "begin", "id", "nodeid": str}`` (a test's setup starts) and
  ``{"k": "end", "id", "nodeid": str}`` (its teardown ended) -> ``ok``; the subject attributes
  what ran in between to that test (its executed report, on its own pipe)
* ``{"k": "bye"}`` (the judge is done; the subject exits 0)

Every judge -> subject call may carry ``"ctx": {"env": {name: value} | absent, "cwd": str |
absent}``: the judge's ``os.environ`` (whole, when it changed since the last call) and working
directory (when changed), applied in the subject before the call.

subject -> judge:

* ``{"k": "ok", "id", "value": v}`` / ``{"k": "raise", "id", "exc": Exc}``
* ``{"k": "call", "id", "obj": jid, "args", "kwargs"}`` (a callback) -> the judge answers with
  ``ok``/``raise`` carrying that id; the subject's pending call waits meanwhile
* forwarded effects, sent as they happen during a call, before its reply:
  ``{"k": "out", "stream": "stdout"|"stderr", "text": str}``,
  ``{"k": "log", "name": str, "level": int, "msg": str}``,
  ``{"k": "warn", "category": TypeRef, "message": str, "filename": str, "lineno": int}``

``Exc`` = ``{"type": TypeRef, "builtin": bool, "message": str, "args": [v] (plain data only, else
``["s", repr]``), "traceback": str (the last frames, capped), "handle": hid | null}``. The judge
raises the same builtin type when ``builtin`` (an exception class of ``builtins``), else a proxy
exception class named after the production class (module and qualname; bases: the proxy classes
of its MRO, ending in the nearest builtin exception type), with the message; the instance carries
``_patchgate_subject = True`` (``SUBJECT_MARK``) and ``_patchgate_traceback``. Uncaught, a marked
exception makes the test ``error`` whatever its type.

Every call the judge makes has a timeout (``call_timeout_ms`` of its role config): no answer in
time, EOF, or a refused message raises ``SubjectLost`` (a marked ``RuntimeError``) and the link
is dead for the rest of the run.

Supervisor config (a JSON file the executor writes; path in ``argv[1]`` of the supervisor)
-----------------------------------------------------------------------------------------
``CONFIG_KEYS``: ``v`` (1), ``socket`` (the executor's report socket; "" = records to stdout,
test only), ``nonce`` (the run's nonce; else taken from ``PATCHGATE_REPORT_NONCE`` of the
supervisor's environment), ``switch_users`` (bool; false is TEST ONLY: children run as the
supervisor's own uid and the config must also say ``"test_only": true``), ``judge`` and
``subject``: each ``{"argv": [str], "uid": int, "gid": int, "groups": [int], "env": {str: str},
"cwd": str}``, ``bound_ms`` (per-test clock bound; 0 = none), ``grace_ms`` (how long past the
bound the supervisor waits for the judge's own alarm before it kills the subject), ``deadline_ms``
(the whole run; 0 = none), ``call_timeout_ms``, ``production`` (the top-level production names),
``source_roots`` (absolute paths the subject puts first on ``sys.path``), ``targets`` (path of
``targets.json``, or ""), ``caps`` ({``max_message``, ``max_depth``, ``max_items``}, optional).

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
* ``{"kind": "subject", "event": "exit"|"crash"|"hang"|"lost", "nodeid": str (the test running,
  "" between tests), "detail": str, "returncode": int|null}``: the subject ended (exit: status;
  crash: killed by a signal) or was killed past the clock bound (hang). A test named by one is
  ``error`` (``exceeded_bound`` for ``hang``), never ``pass``.
* ``{"kind": "judge", "event": "exit"|"crash"|"hang", "returncode": int|null, "detail": str}``
  once at the end: how the judge ended (its exit status is also the supervisor's).

Anything the subject writes to its report pipe other than a well-formed executed record is
dropped and noted once as ``{"kind": "subject", "event": "garbage", ...}``; nothing the subject
writes is ever relayed as an outcome.
"""

from __future__ import annotations

__all__ = ["CONFIG_KEYS", "ROLE_KEYS", "SUBJECT_MARK"]

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
    }
)
ROLE_KEYS = {
    "judge": frozenset({"production", "call_timeout_ms", "caps"}),
    "subject": frozenset({"production", "source_roots", "targets", "caps"}),
}
