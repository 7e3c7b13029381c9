"""The judge's proxies for the subject's modules and objects (what ``judgelink.Client`` decodes).

Standard library only; loaded by ``patchgate_judge`` by file path. Records (``Record``,
``RecordTuple``) are compared here, by type name and fields; anything else is a ``Handle`` whose
every use is again a call into the subject. A handle cannot be compared, hashed or truth-tested
(``Unjudgeable``); a production module (``ProxyModule``) cannot be assigned to.

A ``dict``, ``list`` or ``set`` read from a production module (``billing.RATES``, ``from billing
import RATES``) crosses by value, so the test holds a copy: mutating it in place would change
nothing the production code sees (in one process it would), a test that relies on that fails or
errs for no fault of the patch, and nothing said why. Such a value (and every dict, list and set
inside it) is a ``Shared*`` copy whose in-place changes are ``Unjudgeable``, naming the module
attribute; reading, comparing, copying (``dict(x)``, ``x.copy()``, ``copy.copy``) and passing it
to production code (as plain data) work as on the plain type.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, Protocol

__all__ = [
    "MARK",
    "SHARED",
    "Handle",
    "ProxyModule",
    "Record",
    "RecordTuple",
    "Requester",
    "SubjectLost",
    "Unjudgeable",
    "guard",
    "plain",
]

MARK = "_patchgate_subject"
UNJUDGEABLE = "_patchgate_unjudgeable"
_HINT = "compare its fields (or convert it: int(x), str(x), float(x)) instead"


class Requester(Protocol):
    """What a proxy needs of the judge's end of the link (``judgelink.Client``)."""

    def request(self, kind: str, **fields: Any) -> Any: ...

    def encode(self, value: object) -> list[Any]: ...

    def release(self, hid: int) -> None: ...

    def void(self, why: str) -> None: ...


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


def _refuse(op: str) -> Callable[..., Any]:
    def refused(self: Handle, *_args: object) -> Any:
        ref = object.__getattribute__(self, "_pg_ref")
        why = (
            f"{op} of a {ref.get('module')}.{ref.get('qualname')} from the code under test "
            f"cannot be judged directly (it is a handle to an object of another process): {_HINT}"
        )
        _void(object.__getattribute__(self, "_pg_client"), why)
        raise Unjudgeable(why)

    return refused


def _op(op: str) -> Callable[..., Any]:
    def run(self: Handle, *args: object) -> Any:
        return self._pg_client.request("op", obj=self._pg_id, op=op,
                                       args=[self._pg_client.encode(a) for a in args])  # fmt: skip

    return run


def _void(client: object, why: str) -> None:
    """The refusal voids the test even when the test catches it (``judgelink.Client.void``)."""
    void = getattr(client, "void", None)
    if callable(void):
        void(why)


class Handle:
    """An object of the subject; every use is a call into the subject."""

    __slots__ = ("__weakref__", "_pg_client", "_pg_cls", "_pg_id", "_pg_ref")

    def __init__(
        self, client: Requester, hid: int, ref: dict[str, Any], cls: dict[str, Any] | None
    ):
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

    def __init__(self, client: Requester, hid: int, ref: dict[str, Any], kind: str, *,
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
        if self._pg_kind == "enum" or other._pg_kind == "enum":  # the member itself, by identity
            return self is other
        return self._pg_key() == other._pg_key() and self._pg_fields == other._pg_fields

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        if not self._pg_frozen:
            raise TypeError(f"unhashable record: {self._pg_ref.get('qualname')} is not frozen")
        if self._pg_kind == "enum":
            return object.__hash__(self)
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
    def make(cls, client: Requester, hid: int, ref: dict[str, Any], fields: dict[str, Any]) -> Any:
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


def _mutator(name: str) -> Callable[..., Any]:
    def refused(self: Any, *args: object, **kwargs: object) -> Any:
        where = object.__getattribute__(self, "_pg_where")
        raise Unjudgeable(
            f"changing {where} in place ({type(self).__mro__[1].__name__}.{name}) from a test "
            "cannot be judged: the test holds a copy of the production module's value, and "
            "production code runs in another process and never sees the change. Pass the value "
            "in as an argument, change a copy (dict(x), list(x), set(x)), or run the check with "
            '--judge off (docs/gate.md, "The judge")'
        )

    return refused


def _shared(base: Any, mutators: tuple[str, ...]) -> type:
    """``Shared<Base>``: a ``base`` read from a production module, a copy whose in-place changes
    (``mutators``) are refused; ``copy``, ``deepcopy`` and pickling give the plain value, and
    ``type(x)(...)`` elsewhere (``dataclasses.asdict`` builds its dicts so) a plain ``base``."""

    def __new__(cls: type, *args: Any, _pg_where: str = "", **kwargs: Any) -> Any:
        if not _pg_where:  # the caller's own object, not a copy of the module's value
            return base(*args, **kwargs)
        return base.__new__(cls)

    def __init__(self: Any, items: Any, *, _pg_where: str) -> None:
        base.__init__(self, items)
        self._pg_where = _pg_where

    def plain_copy(self: Any, memo: object = None) -> Any:
        return plain(self)

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        return (base, (plain(self),))

    ns: dict[str, Any] = {
        "__slots__": ("_pg_where",),
        "__module__": __name__,
        "__doc__": f"A ``{base.__name__}`` read from a production module (see the module doc).",
        "__new__": __new__,
        "__init__": __init__,
        "__copy__": plain_copy,
        "__deepcopy__": plain_copy,
        "__reduce_ex__": __reduce_ex__,
    }
    ns.update({name: _mutator(name) for name in mutators})
    return type(f"Shared{base.__name__.capitalize()}", (base,), ns)


SharedDict = _shared(dict, (
    "__setitem__", "__delitem__", "__ior__", "clear", "pop", "popitem", "setdefault", "update",
))  # fmt: skip
SharedList = _shared(list, (
    "__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop",
    "remove", "clear", "sort", "reverse",
))  # fmt: skip
SharedSet = _shared(set, (
    "__ior__", "__iand__", "__isub__", "__ixor__", "add", "discard", "remove", "pop", "clear",
    "update", "intersection_update", "difference_update", "symmetric_difference_update",
))  # fmt: skip
SHARED = (SharedDict, SharedList, SharedSet)


def guard(value: object, where: str) -> Any:
    """``value`` (read from ``where``, a production module's attribute) with every dict, list
    and set in it, inside tuples too, made a ``Shared*`` copy; the rest as is."""
    t = type(value)
    if t is dict:
        return SharedDict({k: guard(v, where) for k, v in value.items()}, _pg_where=where)  # type: ignore[attr-defined]
    if t is list:
        return SharedList([guard(v, where) for v in value], _pg_where=where)  # type: ignore[attr-defined]
    if t is set:
        return SharedSet(value, _pg_where=where)  # members are hashable
    if t is tuple:
        return tuple(guard(v, where) for v in value)  # type: ignore[attr-defined]
    return value


def plain(value: object) -> Any:
    """The plain data a ``guard``ed value stands for (what crosses to production code)."""
    t = type(value)
    if t in (dict, SharedDict):
        return {k: plain(v) for k, v in value.items()}  # type: ignore[attr-defined]
    if t in (list, SharedList):
        return [plain(v) for v in value]  # type: ignore[attr-defined]
    if t is SharedSet:
        return set(value)  # type: ignore[call-overload]
    if t is tuple:
        return tuple(plain(v) for v in value)  # type: ignore[attr-defined]
    return value


class ProxyModule(ModuleType):
    """A production module in the judge: attribute reads are calls into the subject."""

    _pg_handle: Handle
    _pg_ready = False  # set once the import system has made the module (its dunders are in)

    def __init__(self, name: str, handle: Handle) -> None:
        super().__init__(name)
        object.__setattr__(self, "_pg_handle", handle)

    def _pg_imported(self) -> None:
        """The loader's end: from now on a dunder too is the test's, never the import's."""
        object.__setattr__(self, "_pg_ready", True)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_pg_") or name in ("__path__", "__file__", "__wrapped__"):
            raise AttributeError(name)
        return guard(getattr(self._pg_handle, name), f"{self.__name__}.{name}")

    def __setattr__(self, name: str, value: object) -> None:
        dunder = name.startswith("__") and name.endswith("__")
        submodule = isinstance(value, ModuleType) and value.__name__ == f"{self.__name__}.{name}"
        if (dunder and not self._pg_ready) or submodule:
            object.__setattr__(self, name, value)  # the import system's own bookkeeping
            return
        why = (
            f"assigning {self.__name__}.{name} from a test (monkeypatching production code) "
            "cannot be judged: production code runs in another process. Pass the value in as an "
            'argument, or run the check with --judge off (docs/gate.md, "The judge")'
        )
        _void(self._pg_handle._pg_client, why)
        raise Unjudgeable(why)

    def __delattr__(self, name: str) -> None:
        raise Unjudgeable(f"deleting {self.__name__}.{name} from a test cannot be judged")
