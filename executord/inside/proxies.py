"""The judge's end of the call link: proxies for the subject's modules, objects and exceptions.

Standard library only; loaded by ``patchgate_judge`` by file path. ``Client`` sends the judge's
requests (``wire.py`` documents them), serves the subject's callbacks while it waits, replays what
the subject printed, logged and warned, and turns answers into values: plain data as itself,
records as ``Record``/``RecordTuple`` (compared here, by type name and fields), anything else as a
``Handle`` whose every use is again a call. A handle cannot be compared, hashed or truth-tested
(``Unjudgeable``); subject exceptions are raised as the same builtin type or a proxy class named
after the production class, marked ``_patchgate_subject``.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from executord.inside import wire
else:
    wire = sys.modules["_patchgate_wire"]  # loaded by patchgate_judge before this module

__all__ = ["Client", "Handle", "ProxyModule", "Record", "RecordTuple", "SubjectLost", "Unjudgeable"]

MARK = "_patchgate_subject"
UNJUDGEABLE = "_patchgate_unjudgeable"
_HINT = "compare its fields (or convert it: int(x), str(x), float(x)) instead"


class SubjectLost(RuntimeError):
    """The subject did not answer (timeout, exit, crash, garbage): marked as the subject's."""

    def __init__(self, why: str) -> None:
        super().__init__(f"the code under test did not answer: {why}")
        setattr(self, MARK, True)


class Unjudgeable(TypeError):
    """A construct the judge cannot judge across the process boundary; the test is ``error``."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        setattr(self, UNJUDGEABLE, True)


class Client:
    """Requests to the subject; re-entrant for its callbacks."""

    def __init__(self, link: wire.Link, timeout_s: float, production: frozenset[str]) -> None:
        self.link = link
        self.timeout_s = timeout_s
        self.production = production
        self.dead = ""
        self._next = 1
        self._judge_objs: dict[int, object] = {}
        self._judge_ids: dict[int, int] = {}
        self._released: list[int] = []
        self._abandoned: set[int] = set()
        self._depth = 0
        self._answered = 0  # the last call id whose answer was read
        self._env: dict[str, str] | None = None
        self._cwd = ""
        self.exc_classes: dict[tuple[str, str], type[BaseException]] = {}
        self.enums: dict[tuple[str, str, str], Record] = {}

    # -- requests ---------------------------------------------------------------------------
    def request(self, kind: str, **fields: Any) -> Any:
        """Send one request and wait for its answer (decoded); raises what the subject raised."""
        if self.dead:
            raise SubjectLost(self.dead)
        cid, self._next = self._next, self._next + 1
        msg: dict[str, Any] = {"k": kind, "id": cid, **fields}
        ctx = self._ctx()
        if ctx:
            msg["ctx"] = ctx
        try:
            if self._released:
                ids, self._released = self._released, []
                self.link.send({"k": "release", "ids": ids})
            self.link.send(msg)
        except wire.WireError as exc:
            raise self._lose(str(exc)) from exc
        self._depth += 1
        self._answered = 0
        try:
            return self._wait(cid)
        except BaseException:
            if not self.dead and self._answered != cid:  # interrupted before its answer
                self._abandoned.add(cid)
                if self._depth > 1:
                    self.dead = "a test was interrupted inside a callback"
            raise
        finally:
            self._depth -= 1

    def _lose(self, why: str) -> SubjectLost:
        self.dead = why
        return SubjectLost(why)

    def _ctx(self) -> dict[str, Any]:
        ctx: dict[str, Any] = {}
        env = dict(os.environ)
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
            if kind == "call":
                self._callback(got)
            elif kind in ("out", "log", "warn"):
                try:
                    _replay(self, got)
                except Exception as exc:
                    failure.append(exc)
            else:
                raise self._lose(f"an unexpected message {kind!r}")

    def _answer(self, got: dict[str, Any]) -> Any:
        try:
            if got["k"] == "ok":
                if got.get("stop") is True:
                    raise StopIteration
                return self.decode(got.get("value"))
            exc = self.exception(got.get("exc"))
        except wire.WireError as err:
            raise self._lose(f"an answer the judge refuses: {err}") from err
        raise exc

    def _callback(self, got: dict[str, Any]) -> None:
        cid = got.get("id")
        try:
            fn = self._judge_objs[got.get("obj")]  # type: ignore[index]
            args = [self.decode(a) for a in got.get("args") or ()]
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
        return wire.Encoder(self._other, self.link.caps).encode(value)

    def _other(self, value: object) -> list[Any]:
        if isinstance(value, (Handle, Record, RecordTuple)):
            return ["h", {"id": object.__getattribute__(value, "_pg_id")}]
        hid = getattr(value, "_patchgate_hid", None) if isinstance(value, type) else None
        if isinstance(value, ProxyModule):
            hid = value._pg_handle._pg_id
        if type(hid) is int:
            return ["h", {"id": hid}]
        jid = self._judge_ids.get(id(value))
        if jid is None or self._judge_objs.get(jid) is not value:
            jid = len(self._judge_objs) + 1
            self._judge_objs[jid] = value
            self._judge_ids[id(value)] = jid
        return ["j", {"id": jid, "callable": callable(value), "name": type(value).__qualname__}]

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
            return Handle(self, hid, ref, cls_ref if isinstance(cls_ref, dict) else None)
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
            return RecordTuple.make(self, hid, ref, fields)
        rec = Record(self, hid, ref, kind, fields=fields, frozen=payload.get("frozen") is True,
                     order=payload.get("order") is True)  # fmt: skip
        if kind == "enum":
            key = (str(ref.get("module")), str(ref.get("qualname")), str(fields.get("name")))
            return self.enums.setdefault(key, rec)
        return rec

    def exc_class(self, ref: dict[str, Any]) -> type[BaseException]:
        """The judge's class for a subject exception type (builtin, known stdlib, or a proxy)."""
        module, qualname = str(ref.get("module", "")), str(ref.get("qualname", ""))
        known = _known_class(module, qualname, self.production)
        if known is not None:
            return known
        key = (module, qualname)
        if key in self.exc_classes:
            return self.exc_classes[key]
        mro = ref.get("mro") if isinstance(ref.get("mro"), list) else []
        base: type[BaseException] = Exception
        if mro and len(mro) > 1 and isinstance(mro[1], list) and len(mro[1]) == 2:
            base = self.exc_class({"module": mro[1][0], "qualname": mro[1][1], "mro": mro[1:]})
        name = qualname.rsplit(".", 1)[-1] or "SubjectError"
        ns = {"__module__": module, "__qualname__": qualname, "_patchgate_proxy": True}
        cls = type(name, (base,), ns)
        self.exc_classes[key] = cls
        return cls

    def exception(self, raw: object) -> BaseException:
        """A subject exception as a judge exception, marked as the subject's."""
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), dict):
            raise wire.WireError("a malformed exception")
        cls = self.exc_class(raw["type"])
        message = str(raw.get("message", ""))
        args = []
        for a in raw.get("args") or ():
            args.append(self.decode(a) if not (isinstance(a, list) and a[:1] == ["h"]) else None)
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

    def release(self, hid: int) -> None:
        self._released.append(hid)

    def bye(self) -> None:
        with contextlib.suppress(wire.WireError):
            if not self.dead:
                self.link.send({"k": "bye"})


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


def _refuse(op: str) -> Callable[..., Any]:
    def refused(self: Handle, *_args: object) -> Any:
        ref = object.__getattribute__(self, "_pg_ref")
        raise Unjudgeable(
            f"{op} of a {ref.get('module')}.{ref.get('qualname')} from the code under test "
            f"cannot be judged directly (it is a handle to an object of another process): {_HINT}"
        )

    return refused


def _op(op: str) -> Callable[..., Any]:
    def run(self: Handle, *args: object) -> Any:
        return self._pg_client.request("op", obj=self._pg_id, op=op,
                                       args=[self._pg_client.encode(a) for a in args])  # fmt: skip

    return run


class Handle:
    """An object of the subject; every use is a call into the subject."""

    __slots__ = ("__weakref__", "_pg_client", "_pg_cls", "_pg_id", "_pg_ref")

    def __init__(self, client: Client, hid: int, ref: dict[str, Any], cls: dict[str, Any] | None):
        for k, v in (("_pg_client", client), ("_pg_id", hid), ("_pg_ref", ref), ("_pg_cls", cls)):
            object.__setattr__(self, k, v)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_pg_") or name.startswith("_patchgate"):
            raise AttributeError(name)
        return self._pg_client.request("getattr", obj=self._pg_id, name=name)

    def __setattr__(self, name: str, value: object) -> None:
        self._pg_client.request("setattr", obj=self._pg_id, name=name,
                                value=self._pg_client.encode(value))  # fmt: skip

    def __call__(self, *args: object, **kwargs: object) -> Any:
        c = self._pg_client
        return c.request("call", obj=self._pg_id, name=None, args=[c.encode(a) for a in args],
                         kwargs=[[k, c.encode(v)] for k, v in kwargs.items()])  # fmt: skip

    def __repr__(self) -> str:
        try:
            text = self._pg_client.request("op", obj=self._pg_id, op="repr", args=[])
        except Exception:
            text = None
        qual = self._pg_ref.get("qualname")
        return f"<{qual} of the code under test: {text}>" if type(text) is str else f"<{qual}>"

    def __instancecheck__(self, instance: object) -> bool:
        return _is_instance(self._pg_cls, instance)

    def __subclasscheck__(self, sub: object) -> bool:
        other = object.__getattribute__(sub, "_pg_cls") if isinstance(sub, Handle) else None
        return _is_instance(self._pg_cls, None, other)

    def __iter__(self) -> Any:
        return _op("iter")(self)

    def __next__(self) -> Any:
        return _op("next")(self)

    def __enter__(self) -> Any:
        return self.__getattr__("__enter__")()

    def __exit__(self, *exc: object) -> None:
        self.__getattr__("__exit__")(None, None, None)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._pg_client.release(self._pg_id)

    __eq__ = _refuse("comparing (==)")
    __ne__ = _refuse("comparing (!=)")
    __lt__ = _refuse("comparing (<)")
    __le__ = _refuse("comparing (<=)")
    __gt__ = _refuse("comparing (>)")
    __ge__ = _refuse("comparing (>=)")
    __hash__ = _refuse("hashing")
    __bool__ = _refuse("truth-testing")
    __len__ = _op("len")
    __str__ = _op("str")
    __int__ = _op("int")
    __float__ = _op("float")
    __index__ = _op("index")
    __bytes__ = _op("bytes")
    __format__ = _op("format")
    __getitem__ = _op("getitem")
    __setitem__ = _op("setitem")
    __delitem__ = _op("delitem")
    __contains__ = _op("contains")


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lshift", "rshift"):  # fmt: skip
    _opname = _name + "_" if _name in ("and", "or") else _name
    setattr(Handle, f"__{_name}__", _op(_opname))
    setattr(Handle, f"__r{_name}__", _op("r" + _opname))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(Handle, f"__{_name}__", _op(_name))


def _mro_of(value: object) -> list[tuple[str, str]]:
    if isinstance(value, (Handle, Record, RecordTuple)):
        ref = object.__getattribute__(value, "_pg_ref")
        return [(str(m), str(q)) for m, q in ref.get("mro", ())]
    cls = type(value)
    return [(c.__module__, c.__qualname__) for c in cls.__mro__ if c is not object]


def _is_instance(cls: dict[str, Any] | None, instance: object, sub: object = None) -> bool:
    if cls is None:
        raise Unjudgeable("isinstance() against an object of the code under test that is no class")
    want = (str(cls.get("module")), str(cls.get("qualname")))
    if isinstance(sub, dict):
        return want in [(str(m), str(q)) for m, q in sub.get("mro", ())]
    return want in _mro_of(instance)


class Record:
    """A dataclass instance or Enum member of the subject, by value: compared here."""

    __slots__ = ("_pg_client", "_pg_fields", "_pg_frozen", "_pg_id", "_pg_kind", "_pg_order",
                 "_pg_ref")  # fmt: skip

    def __init__(self, client: Client, hid: int, ref: dict[str, Any], kind: str, *,
                 fields: dict[str, Any], frozen: bool, order: bool) -> None:  # fmt: skip
        for k, v in (("_pg_client", client), ("_pg_id", hid), ("_pg_ref", ref),
                     ("_pg_kind", kind), ("_pg_fields", fields), ("_pg_frozen", frozen),
                     ("_pg_order", order)):  # fmt: skip
            object.__setattr__(self, k, v)

    def _pg_key(self) -> tuple[Any, ...]:
        return (self._pg_ref.get("module"), self._pg_ref.get("qualname"))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_pg_"):
            raise AttributeError(name)
        if name in self._pg_fields:
            return self._pg_fields[name]
        return self._pg_client.request("getattr", obj=self._pg_id, name=name)

    def __setattr__(self, name: str, value: object) -> None:
        if self._pg_frozen:
            raise AttributeError(f"cannot assign to field {name!r} of a frozen record")
        self._pg_client.request("setattr", obj=self._pg_id, name=name,
                                value=self._pg_client.encode(value))  # fmt: skip
        if name in self._pg_fields:
            self._pg_fields[name] = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return self._pg_key() == other._pg_key() and self._pg_fields == other._pg_fields

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        if not self._pg_frozen:
            raise TypeError(f"unhashable record: {self._pg_ref.get('qualname')} is not frozen")
        return hash((self._pg_key(), tuple(self._pg_fields.items())))

    def _pg_cmp(self, other: object) -> tuple[Any, Any]:
        if not self._pg_order or not isinstance(other, Record) or self._pg_key() != other._pg_key():
            raise TypeError(f"records of {self._pg_ref.get('qualname')} are not ordered")
        return tuple(self._pg_fields.values()), tuple(other._pg_fields.values())

    def __lt__(self, other: object) -> bool:
        a, b = self._pg_cmp(other)
        return bool(a < b)

    def __le__(self, other: object) -> bool:
        a, b = self._pg_cmp(other)
        return bool(a <= b)

    def __gt__(self, other: object) -> bool:
        a, b = self._pg_cmp(other)
        return bool(a > b)

    def __ge__(self, other: object) -> bool:
        a, b = self._pg_cmp(other)
        return bool(a >= b)

    def __repr__(self) -> str:
        qual = self._pg_ref.get("qualname")
        if self._pg_kind == "enum":
            return f"<{qual}.{self._pg_fields.get('name')}: {self._pg_fields.get('value')!r}>"
        inner = ", ".join(f"{k}={v!r}" for k, v in self._pg_fields.items())
        return f"{qual}({inner})"

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._pg_client.release(self._pg_id)


class RecordTuple(tuple):  # type: ignore[type-arg]
    """A NamedTuple of the subject, by value: a tuple with its fields' names."""

    _pg_ref: dict[str, Any]
    _pg_id: int
    _fields: tuple[str, ...]

    @classmethod
    def make(cls, client: Client, hid: int, ref: dict[str, Any], fields: dict[str, Any]) -> Any:
        rec = cls(fields.values())
        rec._pg_ref, rec._pg_id, rec._fields = ref, hid, tuple(fields)
        return rec

    def __getattr__(self, name: str) -> Any:
        names = self.__dict__.get("_fields", ())
        if name in names:
            return self[names.index(name)]
        raise AttributeError(name)

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self, strict=True))
        return f"{self._pg_ref.get('qualname')}({inner})"


class ProxyModule(ModuleType):
    """A production module in the judge: attribute reads are calls into the subject."""

    _pg_handle: Handle

    def __init__(self, name: str, handle: Handle) -> None:
        super().__init__(name)
        object.__setattr__(self, "_pg_handle", handle)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_pg_") or name in ("__path__", "__file__", "__wrapped__"):
            raise AttributeError(name)
        return getattr(self._pg_handle, name)

    def __setattr__(self, name: str, value: object) -> None:
        if (name.startswith("__") and name.endswith("__")) or isinstance(value, ProxyModule):
            object.__setattr__(self, name, value)  # the import system's own bookkeeping
            return
        raise Unjudgeable(
            f"assigning {self.__name__}.{name} from a test (monkeypatching production code) "
            "cannot be judged: production code runs in another process. Pass the value in as an "
            "argument, or run the property with --judge off (docs/judge.md)"
        )

    def __delattr__(self, name: str) -> None:
        raise Unjudgeable(f"deleting {self.__name__}.{name} from a test cannot be judged")
