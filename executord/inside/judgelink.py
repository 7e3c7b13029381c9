"""The judge's end of the call link: requests to the subject, answers turned into values.

Standard library only; loaded by ``patchgate_judge`` by file path. ``Client`` sends the judge's
requests (``wire.py`` documents them), serves the subject's callbacks while it waits, replays what
the subject printed, logged and warned (so capsys, caplog and pytest.warns see it), and turns
answers into values: plain data as itself, records as ``proxies.Record``/``RecordTuple``,
anything else as a ``proxies.Handle``. Subject exceptions are raised as the same builtin type,
the judge's own class of a module it already has, or a proxy class named after the production
class (subclass relations kept), marked ``_patchgate_subject``.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime
import decimal
import enum
import fractions
import logging
import os
import sys
import threading
import time
import uuid
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from executord.inside import proxies, wire
else:  # loaded by patchgate_judge before this module
    wire = sys.modules["_patchgate_wire"]
    proxies = sys.modules["_patchgate_proxies"]

__all__ = ["Client", "Recorder"]

MARK = "_patchgate_subject"
# What the subject may ask of a judge object beside calling it: the flag in its "j" payload and
# the special method whose presence on the object's type sets it.
_JUDGE_OPS = {"iter": "__iter__", "next": "__next__", "len": "__len__", "contains": "__contains__"}


class Client:
    """Requests to the subject; re-entrant for its callbacks."""

    def __init__(self, link: wire.Link, timeout_s: float, production: frozenset[str]) -> None:
        self.link = link
        self.timeout_s = timeout_s
        self.production = production
        self.dead = ""
        self._lock = threading.RLock()
        self.current = ""  # the test running (set by patchgate_judge), for the lost reason
        self._interrupted = ""  # the first test whose call was interrupted before its answer
        self._next = 1
        self._judge_objs: dict[int, object] = {}
        self._judge_ids: dict[int, int] = {}
        self._released: list[int] = []
        self._abandoned: set[int] = set()
        self._depth = 0
        self._answered = 0  # the last call id whose answer was read
        self._env0 = dict(os.environ)  # the judge's environment at start: changes are mirrored
        self._env: dict[str, Any] | None = None
        self._raw: dict[Any, Any] | None = None  # os.environ's own mapping when _env was taken
        self._cwd = ""
        self.exc_classes: dict[tuple[Any, ...], type[BaseException]] = {}
        self.enums: dict[int, proxies.Record] = {}  # the subject's member id -> its one record
        self.voids: dict[str, str] = {}  # node id ("" outside a test) -> why the link refused
        self._kind = ""  # the kind of the last request sent

    # -- requests ---------------------------------------------------------------------------
    def request(self, kind: str, **fields: Any) -> Any:
        """Send one request and wait for its answer (decoded); raises what the subject raised.
        One request at a time: a test's threads take turns (a callback's own calls re-enter)."""
        frozen = "" if kind in _NO_PRODUCTION else _frozen_clock()
        if frozen:
            why = (
                f"the clock is frozen in the test's process ({frozen}): a time-freezing library "
                "(freezegun's freeze_time, time-machine's travel) changes the clock where the "
                "test runs, never where the code under test runs, so the call would read the real "
                "time. Pass the time in as an argument (when=, now=), or run the check with "
                '--judge off (docs/gate.md, "The judge")'
            )
            self.void(why)
            raise proxies.Unjudgeable(why)
        with self._lock:
            return self._request(kind, fields)

    def _request(self, kind: str, fields: dict[str, Any]) -> Any:
        if self.dead:
            raise proxies.SubjectLost(self.dead)
        cid, self._next = self._next, self._next + 1
        self._kind = kind
        msg: dict[str, Any] = {"k": kind, "id": cid, **fields}
        ctx = self._ctx()
        if ctx:
            msg["ctx"] = ctx
        self._depth += 1
        self._answered = 0
        try:
            try:
                if self._released:
                    ids, self._released = self._released, []
                    self.link.send({"k": "release", "ids": ids})
                # an interruption (the clock bound's alarm) that lands once the request is
                # written but before its wait is noted below: its late answer is skipped, never
                # "an unexpected message" that loses the subject for the rest of the run
                self.link.send(msg)
            except wire.WireError as exc:
                raise self._lose(str(exc)) from exc
            return self._wait(cid)
        except BaseException:
            if not self.dead and self._answered != cid:  # interrupted before its answer
                self._abandoned.add(cid)
                self._interrupted = self._interrupted or self.current or "a test"
                if self._depth > 1:
                    self.dead = "a test was interrupted inside a callback"
            raise
        finally:
            self._depth -= 1

    def _lose(self, why: str) -> proxies.SubjectLost:
        if self._interrupted:
            why += f" (after a call was interrupted in {self._interrupted})"
        self.dead = f"{why} (lost during {self.current})" if self.current else why
        if self._kind not in _NO_PRODUCTION:  # a test's call, not the link's own bookkeeping
            self.void(f"the code under test did not answer: {self.dead}")
        return proxies.SubjectLost(self.dead)

    def void(self, why: str) -> None:
        """The link refused something during the test running (or outside any test): that test
        is ``error`` with ``why`` whatever it caught (``patchgate_judge`` reads it at its end)."""
        self.voids.setdefault(self.current, why[:4000])

    def refuse(self, why: str) -> BaseException:
        """A refusal of the link: voids the test and is raised as a ``WireError`` (no built-in
        type a test catches), marked as the subject's."""
        self.void(why)
        err = wire.WireError(why)
        setattr(err, MARK, True)
        return err

    def _ctx(self) -> dict[str, Any]:
        ctx: dict[str, Any] = {}
        raw = getattr(os.environ, "_data", None)  # its encoded mapping: compared without decoding
        if raw is None or raw != self._raw:
            now = dict(os.environ)
            env = {
                "set": {k: v for k, v in now.items() if self._env0.get(k) != v},
                "unset": sorted(k for k in self._env0 if k not in now),
            }
            self._raw = dict(raw) if isinstance(raw, dict) else None
            if env != self._env:
                ctx["env"], self._env = env, env
        with contextlib.suppress(OSError):
            cwd = os.getcwd()
            if cwd != self._cwd:
                ctx["cwd"] = self._cwd = cwd
        return ctx

    def _wait(self, cid: int) -> Any:
        failure: list[BaseException] = []
        while True:
            try:
                got = self.link.receive(self.timeout_s)
            except TimeoutError as exc:
                raise self._lose(f"no answer within {self.timeout_s:g} s") from exc
            except EOFError as exc:
                raise self._lose("the subject ended") from exc
            except wire.WireError as exc:
                raise self._lose(f"a message the judge refuses: {exc}") from exc
            kind, gid = got["k"], got.get("id")
            if kind in ("ok", "raise") and gid in self._abandoned:
                self._abandoned.discard(gid)
                continue
            if kind in ("ok", "raise") and gid == cid:
                self._answered = cid
                if failure:
                    raise failure[0]
                return self._answer(got)
            if kind in ("call", "op"):
                self._callback(got)
            elif kind in ("out", "log", "warn"):
                try:
                    _replay(self, got)
                except Exception as exc:
                    failure.append(exc)
            else:
                raise self._lose(f"an unexpected message {kind!r}")

    def _answer(self, got: dict[str, Any]) -> Any:
        refused = got.get("refused")
        if got["k"] == "raise" and refused is not None:
            raise self.refuse(f"the code under test answered what the link cannot carry: {refused}")
        if got["k"] == "ok" and got.get("stop") is True:
            raise StopIteration
        try:  # the guarded path: nothing rebuilt here escapes as a type a test would catch
            if got["k"] == "ok":
                return self.decode(got.get("value"))
            exc = self.exception(got.get("exc"))
        except wire.WireError as err:
            raise self._lose(f"an answer the judge refuses: {err}") from err
        except (RecursionError, MemoryError, Exception) as err:
            why = f"{type(err).__name__}: {err}"
            raise self.refuse(f"an answer the judge cannot rebuild ({why})") from err
        raise exc

    def _callback(self, got: dict[str, Any]) -> None:
        cid = got.get("id")
        try:
            fn = self._judge_objs[got.get("obj")]  # type: ignore[index]
            args = [self.decode(a) for a in got.get("args") or ()]
            if got["k"] == "op":
                value = _judge_op(fn, got.get("op"), args)
            else:
                kwargs = {str(k): self.decode(v) for k, v in got.get("kwargs") or ()}
                value = fn(*args, **kwargs)  # type: ignore[operator]
            out: dict[str, Any] = {"k": "ok", "id": cid, "value": self.encode(value)}
        except Exception as exc:
            ref = wire.type_ref(type(exc))
            builtin = type(exc).__module__ == "builtins"
            hid = getattr(exc, "_patchgate_handle", None)  # the subject's own exception, back
            info = {"type": ref, "builtin": builtin, "message": str(exc)[:4000],
                    "handle": hid if type(hid) is int else None}  # fmt: skip
            out = {"k": "raise", "id": cid, "exc": info}
        try:
            self.link.send(out)
        except wire.WireError as exc:
            raise self._lose(str(exc)) from exc

    # -- values -----------------------------------------------------------------------------
    def encode(self, value: object) -> list[Any]:
        """A judge value for the subject; one the link refuses voids the test."""
        try:
            return wire.Encoder(self._other, self.link.caps).encode(value)
        except wire.WireError as exc:
            why = f"a value the link cannot carry to the code under test: {exc}"
            raise self.refuse(why) from exc
        except proxies.Unjudgeable as exc:
            self.void(str(exc))
            raise

    def _other(self, value: object) -> list[Any]:
        if isinstance(value, proxies.SHARED):  # a production module's value, back as plain data
            return self.encode(proxies.plain(value))
        if isinstance(value, (proxies.Handle, proxies.Record, proxies.RecordTuple)):
            return ["h", {"id": object.__getattribute__(value, "_pg_id")}]
        hid = getattr(value, "_patchgate_hid", None) if isinstance(value, type) else None
        if isinstance(value, proxies.ProxyModule):
            hid = value._pg_handle._pg_id
        if type(hid) is int:
            return ["h", {"id": hid}]
        if isinstance(value, _PLAIN_SCALARS) and not isinstance(value, enum.Enum):
            # a subclass of plain data (freezegun's FakeDatetime, a str subclass): as a judge
            # object the production code's isinstance checks would see something else than in
            # one process, and its result could be a false fail; refused, never guessed
            sub = type(value)
            raise proxies.Unjudgeable(
                f"an instance of {sub.__module__}.{sub.__qualname__}, a subclass of "
                f"{_plain_base(sub)}, cannot cross to the code under test: only the exact type "
                "crosses by value (pass a plain one, e.g. datetime.datetime(...) for a frozen "
                "clock's FakeDatetime)"
            )
        jid = self._judge_ids.get(id(value))
        if jid is None or self._judge_objs.get(jid) is not value:
            jid = len(self._judge_objs) + 1
            self._judge_objs[jid] = value
            self._judge_ids[id(value)] = jid
        cls = type(value)
        info: dict[str, Any] = {"id": jid, "callable": callable(value), "name": cls.__qualname__}
        info.update({k: True for k, attr in _JUDGE_OPS.items() if hasattr(cls, attr)})
        return ["j", info]

    def decode(self, raw: object) -> Any:
        return wire.Decoder(self._rebuild, self.link.caps).decode(raw)

    def _rebuild(self, tag: str, payload: dict[str, Any]) -> object:
        hid = payload.get("id")
        ref = payload.get("type")
        if type(hid) is not int or not isinstance(ref, dict):
            raise wire.WireError(f"a {tag!r} value without id or type")
        if tag == "h":
            cls_ref = payload.get("cls")
            if isinstance(cls_ref, dict) and payload.get("exc") is True:
                cls = self.exc_class(cls_ref)
                if getattr(cls, "_patchgate_proxy", False):
                    cls._patchgate_hid = hid  # type: ignore[attr-defined]  # passed back: the class
                return cls
            if payload.get("package") is True:
                ref = {**ref, "package": True}
            handle = proxies.Handle(self, hid, ref, cls_ref if isinstance(cls_ref, dict) else None)
            shape = (ref.get("module"), ref.get("qualname"))
            if shape == ("builtins", "coroutine"):  # awaited here, run in the subject
                return _awaited(self, handle)
            if shape == ("builtins", "async_generator"):
                return _async_items(self, handle)
            return handle
        if tag != "r":
            raise wire.WireError("a judge object coming back from the subject")
        kind = payload.get("kind")
        pairs = payload.get("fields")
        if kind not in ("dataclass", "namedtuple", "enum") or not isinstance(pairs, list):
            raise wire.WireError("a malformed record")
        fields = {}
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2 or type(pair[0]) is not str:
                raise wire.WireError("a malformed record field")
            fields[pair[0]] = self.decode(pair[1])
        if kind == "namedtuple":
            return proxies.RecordTuple.make(self, hid, ref, fields)
        frozen, order = payload.get("frozen") is True, payload.get("order") is True
        if kind == "enum":  # the subject's member itself: one record per member, by identity
            member = payload.get("member")
            if type(member) is not int:
                raise wire.WireError("an Enum member without its member id")
            if member not in self.enums:
                self.enums[member] = proxies.Record(self, hid, ref, kind, fields=fields,
                                                    frozen=True, order=False)  # fmt: skip
            else:
                self.release(hid)  # the record kept holds the member's first handle
            return self.enums[member]
        return proxies.Record(self, hid, ref, kind, fields=fields, frozen=frozen, order=order)

    def exc_class(self, ref: dict[str, Any]) -> type[BaseException]:
        """The judge's class for a subject exception type: the judge's own class (builtin, or of
        a module it already has) only for a class of the MRO the subject verified by identity
        whose own MRO reads as the judge's; every class before it a proxy class named after the
        subject's, deriving from the next (so no ``except`` of a built-in the subject's class
        only names catches it). ``ValueError`` past ``MAX_MRO`` classes."""
        mro = _mro_entries(ref)
        flags = ref.get("verified")
        verified = [f is True for f in flags] if isinstance(flags, list) else []
        verified += [False] * (len(mro) - len(verified))
        key = tuple((m, q, v) for (m, q), v in zip(mro, verified, strict=False))
        if key in self.exc_classes:
            return self.exc_classes[key]
        base: type[BaseException] = Exception
        top = len(mro)
        for i, (module, qualname) in enumerate(mro):
            known = _known_class(module, qualname, self.production) if verified[i] else None
            if known is not None and _names(known) == mro[i:]:
                base, top = known, i
                break
        if top > MAX_MRO:
            raise ValueError(f"an exception class of more than {MAX_MRO} proxied classes")
        cls = base
        for j in range(top - 1, -1, -1):
            sub = tuple((m, q, v) for (m, q), v in zip(mro[j:], verified[j:], strict=False))
            made = self.exc_classes.get(sub)
            if made is None:
                module, qualname = mro[j]
                name = qualname.rsplit(".", 1)[-1] or "SubjectError"
                ns = {"__module__": module, "__qualname__": qualname, "_patchgate_proxy": True}
                made = type(name, (cls,), ns)
                self.exc_classes[sub] = made
            cls = made
        self.exc_classes[key] = cls
        return cls

    def exception(self, raw: object) -> BaseException:
        """A subject exception as a judge exception, marked as the subject's."""
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), dict):
            raise wire.WireError("a malformed exception")
        cls = self.exc_class(raw["type"])
        message = str(raw.get("message", ""))
        group = raw.get("group")
        if issubclass(cls, BaseExceptionGroup) or group is not None:
            exc = self._group(cls, group)
        else:
            args = []
            for a in raw.get("args") or ():
                handle = isinstance(a, list) and a[:1] == ["h"]
                args.append(None if handle else self.decode(a))
            try:
                exc = cls(*args) if args and str(cls(*args)) == message else cls(message)
            except Exception:
                exc = cls.__new__(cls)
                exc.args = (message,)
        setattr(exc, MARK, True)
        tb = str(raw.get("traceback", ""))
        exc._patchgate_traceback = tb  # type: ignore[attr-defined]
        exc._patchgate_handle = raw.get("handle")  # type: ignore[attr-defined]
        with contextlib.suppress(AttributeError):
            exc.add_note("raised by the code under test (in the subject process):\n" + tb)
        return exc

    def _group(self, cls: type[BaseException], group: object) -> BaseException:
        """An exception group rebuilt with its members (each rebuilt as any exception is);
        ``ValueError`` when it cannot be (the caller voids the test)."""
        if not issubclass(cls, BaseExceptionGroup) or not isinstance(group, dict):
            raise ValueError("an exception group without its members, or members without a group")
        members = group.get("exceptions")
        if not isinstance(members, list) or not members:
            raise ValueError("an exception group without members")
        rebuilt = [self.exception(m) for m in members]
        return cls(str(group.get("message", "")), rebuilt)

    def release(self, hid: int) -> None:
        self._released.append(hid)

    def bye(self) -> None:
        with contextlib.suppress(wire.WireError):
            if not self.dead:
                self.link.send({"k": "bye"})

    def record(self) -> None:
        """From here on every message both ways is noted (the judge's zygote while it collects
        against its collection subject)."""
        self.link = Recorder(self.link)  # type: ignore[assignment]

    def detach(self) -> list[tuple[bool, dict[str, Any]]]:
        """What was noted since ``record`` (``(sent, message)``, in order); the link is closed
        without a goodbye (the collection subject sees it end)."""
        rec = self.link
        events = rec.events if isinstance(rec, Recorder) else []
        rec.close()
        return events

    def replay(self, link: wire.Link, events: list[tuple[bool, dict[str, Any]]]) -> bool:
        """On this run's ``link``: send again what was sent while collecting and check that each
        answer is, message for message, what the collection subject answered. True: this run's
        subject is now where the collection left its own, and so this judge is where a fresh
        collection against it would be. False at the first difference (the link is this run's
        either way)."""
        self.link = link
        pending = None  # the request whose answer is still to come
        try:
            for sent, msg in events:
                if sent:
                    link.send(msg)
                    if msg["k"] not in _NO_ANSWER:
                        pending = msg.get("id")
                    continue
                got = link.receive(self.timeout_s)
                if got.get("k") in ("ok", "raise") and got.get("id") == pending:
                    pending = None
                if got != msg:
                    if pending is not None:  # its answer still comes: read up to it, as a call
                        with contextlib.suppress(BaseException):
                            self._wait(pending)
                    return False
        except (wire.WireError, EOFError, TimeoutError):
            return False
        return True


class Recorder:
    """A link that notes every message both ways; the link's ``caps`` and ``close`` as its own."""

    def __init__(self, link: wire.Link) -> None:
        self.inner, self.caps = link, link.caps
        self.events: list[tuple[bool, dict[str, Any]]] = []

    def send(self, message: dict[str, Any]) -> None:
        self.inner.send(message)
        self.events.append((True, message))

    def receive(self, timeout_s: float | None = None) -> dict[str, Any]:
        got = self.inner.receive(timeout_s)
        self.events.append((False, got))
        return got

    def close(self) -> None:
        self.inner.close()


MAX_MRO = 64  # proxy classes one subject exception class may need


def _mro_entries(ref: dict[str, Any]) -> list[tuple[str, str]]:
    """A TypeRef's MRO as (module, qualname) pairs (at least the class itself)."""
    raw = ref.get("mro")
    out = [(str(e[0]), str(e[1])) for e in raw if isinstance(e, list) and len(e) == 2] if (
        isinstance(raw, list)) else []  # fmt: skip
    if not out:
        out = [(str(ref.get("module", "")), str(ref.get("qualname", "")))]
    return out


def _names(cls: type) -> list[tuple[str, str]]:
    return [(c.__module__, c.__qualname__) for c in cls.__mro__ if c is not object]


def _known_class(
    module: str, qualname: str, production: frozenset[str]
) -> type[BaseException] | None:
    """A builtin exception class, or one of a module the judge already has (never imported
    here, never a production module)."""
    if module == "builtins":
        cls: Any = getattr(builtins, qualname, None)
    elif module.split(".", maxsplit=1)[0] in production or module not in sys.modules:
        return None
    else:
        cls = sys.modules[module]
        for part in qualname.split("."):
            cls = getattr(cls, part, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return cls
    return None


# Requests that run no production code: a frozen clock does not change their answer (the phase
# markers must still reach the subject, or what ran in a test would go unattributed).
_NO_PRODUCTION = frozenset({"hello", "begin", "end"})
_NO_ANSWER = frozenset({"release", "bye", "ok", "raise"})  # what the judge sends unanswered

# The clock as the judge found it, before any test module ran (this module is loaded first).
_CLOCK = {
    "datetime.datetime": (datetime, "datetime", datetime.datetime),
    "datetime.date": (datetime, "date", datetime.date),
    "time.time": (time, "time", time.time),
    "time.localtime": (time, "localtime", time.localtime),
    "time.gmtime": (time, "gmtime", time.gmtime),
}


def _frozen_clock() -> str:
    """Which clock name a test rebound (freezegun replaces these in ``datetime`` and ``time``
    themselves), as ``name is module.qualname``, or that time-machine travels (it patches the
    C functions below the names, so every name above stays the real object; its public
    ``escape_hatch.is_travelling()`` says so); empty when the clock is the real one."""
    for name, (module, attr, real) in _CLOCK.items():
        now = getattr(module, attr, real)
        if now is not real:
            where = getattr(now, "__module__", "?")
            return f"{name} is {where}.{getattr(now, '__qualname__', '?')}"
    machine = sys.modules.get("time_machine")
    if machine is not None:
        hatch = getattr(machine, "escape_hatch", None)
        try:  # the test's own import: a broken one refuses rather than guesses
            travelling = (
                bool(hatch.is_travelling())
                if hatch is not None
                else bool(getattr(machine, "coordinates_stack", ()))
            )
        except Exception:  # any failure to tell is a refusal
            travelling = True
        if travelling:
            return "time_machine.travel is active"
    return ""


#: Plain scalar types (wire.py): a judge value of a subclass of one is refused, never a handle.
_PLAIN_SCALARS = (
    int, float, complex, str, bytes,
    decimal.Decimal, fractions.Fraction,
    datetime.datetime, datetime.date, datetime.time, datetime.timedelta,
    uuid.UUID,
)  # fmt: skip


def _plain_base(cls: type) -> str:
    base = next(b for b in cls.__mro__ if b in _PLAIN_SCALARS)
    return f"{base.__module__}.{base.__qualname__}".removeprefix("builtins.")


async def _awaited(client: Client, handle: proxies.Handle) -> Any:
    """A coroutine of the subject as one of the judge: awaiting it runs the subject's coroutine
    to its end on the subject's own loop (its result or exception crosses as any answer)."""
    return client.request("op", obj=object.__getattribute__(handle, "_pg_id"), op="await", args=[])


async def _async_items(client: Client, handle: proxies.Handle) -> Any:
    """An async generator of the subject as one of the judge: each item is the subject's next,
    run on the subject's loop; closing this one closes the subject's."""
    hid = object.__getattribute__(handle, "_pg_id")
    try:
        while True:
            try:
                item = client.request("op", obj=hid, op="anext", args=[])
            except StopAsyncIteration:
                return
            yield item
    finally:
        if not client.dead:
            with contextlib.suppress(Exception):
                client.request("op", obj=hid, op="aclose", args=[])
        del handle


def _judge_op(obj: object, op: object, args: list[Any]) -> object:
    """A protocol operation the subject asks of a judge object (a generator, a dict view, a
    ``range`` the property passes in): run here, in the judge, like a callback."""
    if op == "iter":
        return iter(obj)  # type: ignore[call-overload]
    if op == "next":
        return next(obj)  # type: ignore[call-overload]  # StopIteration crosses as itself
    if op == "len":
        return len(obj)  # type: ignore[arg-type]
    if op == "contains" and len(args) == 1:
        return args[0] in obj  # type: ignore[operator]
    raise TypeError(f"the subject asked an unknown operation {op!r} of a judge object")


def _replay(client: Client, got: dict[str, Any]) -> None:
    """One forwarded effect of the subject, in the judge (capsys, caplog, pytest.warns see it)."""
    kind = got["k"]
    if kind == "out":
        stream = sys.stderr if got.get("stream") == "stderr" else sys.stdout
        stream.write(str(got.get("text", "")))
    elif kind == "log":
        name, level = str(got.get("name", "root")), got.get("level")
        lvl = level if type(level) is int else logging.WARNING
        logger = logging.getLogger(None if name == "root" else name)
        if logger.isEnabledFor(lvl):
            logger.handle(logger.makeRecord(logger.name, lvl, "(subject)", 0,
                                            str(got.get("msg", "")), (), None))  # fmt: skip
    else:
        ref = got.get("category")
        cls = client.exc_class(ref) if isinstance(ref, dict) else UserWarning
        if not issubclass(cls, Warning):
            cls = UserWarning
        lineno = got.get("lineno")
        warnings.warn_explicit(str(got.get("message", "")), cls, str(got.get("filename", "")),
                               lineno if type(lineno) is int else 0)  # fmt: skip
