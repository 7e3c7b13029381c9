"""The subject's values read from storage, and exception classes by identity (standard library
only; loaded by the subject before any patched code runs).

A record's fields are read from the object's own storage (a NamedTuple's tuple items, an Enum
member's ``__dict__``, a dataclass instance's ``__dict__`` or slots as noted when ``dataclasses``
made the class), never through the object's attributes, iteration or methods; a class that
rebound or overrides what defines its record crosses as a handle. An exception class is verified
by identity against the class its module really holds, noted at import. The rule per record kind
is in docs/executor.md, "Values cannot lie".
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import dataclasses
import enum
import sys
import types
import weakref
from typing import Any

__all__ = [
    "BUILTIN_EXC",
    "COMPARE",
    "PRODUCTION",
    "record_fields",
    "record_kind",
    "verified",
    "watch_dataclasses",
]

COMPARE = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__",
            "__len__")  # fmt: skip

#: The builtin exception classes and every exception class a module already imported holds at
#: its top level, taken when this module is imported: before any patched code runs.
BUILTIN_EXC = {
    n: c for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, BaseException)
}


def _exception_classes() -> dict[type, tuple[str, str]]:
    """Every exception class a loaded module holds at its top level, under its own name."""
    out: dict[type, tuple[str, str]] = {}
    for module in list(sys.modules.values()):
        space: dict[str, object] = getattr(module, "__dict__", {})
        for c in list(space.values()):
            if not isinstance(c, type) or not issubclass(c, BaseException):
                continue
            name = (str(c.__module__), str(c.__qualname__))
            held = getattr(sys.modules.get(name[0]), name[1], None)
            if id(held) == id(c):  # the very class (``is`` would narrow ``c`` to held's type)
                out[c] = name
    return out


_KNOWN_EXC = _exception_classes()


def verified(cls: type) -> bool:
    """``cls`` is the class its name says: a builtin or a class of a module imported before
    patched code ran, by identity (as noted then); or, of a module imported later that is no
    production module, the very object that module holds under that name (read from its
    ``__dict__``, no attribute hook runs)."""
    module = type.__dict__["__module__"].__get__(cls)
    qualname = type.__dict__["__qualname__"].__get__(cls)
    if module == "builtins":
        return BUILTIN_EXC.get(qualname) is cls
    known = _KNOWN_EXC.get(cls)
    if known is not None:
        return known == (module, qualname)
    if type(module) is not str or module.split(".")[0] in PRODUCTION or module == "__main__":
        return False
    holder: object = sys.modules.get(module)
    for part in qualname.split("."):
        space = getattr(holder, "__dict__", None)
        holder = space.get(part) if isinstance(space, dict) else None
    return holder is cls


#: The production top-level names (the subject's config): never verified by name.
PRODUCTION: set[str] = set()


def record_kind(value: object) -> str:
    """``dataclass``/``namedtuple``/``enum`` when ``value`` crosses as a record, else ""."""
    got = record_fields(value)
    return got[0] if got is not None else ""


#: What defines a record besides its comparison methods: a class (below the record's own base)
#: that defines one of these reads or iterates it its own way, so it crosses as a handle.
_READS = ("__getattribute__", "__getattr__", "__iter__", "__getitem__", "__class__")
_TUPLEGETTER = type(collections.namedtuple("_P", "a").__dict__["a"])  # the C field accessor
#: Each dataclass as ``dataclasses`` made it, noted when it was made (``watch_dataclasses``):
#: its compared fields, the class's own entries that define its record, and its slots.
_DATACLASSES: weakref.WeakKeyDictionary[type, _Made] = weakref.WeakKeyDictionary()


@dataclasses.dataclass(frozen=True)
class _Made:
    fields: tuple[str, ...]
    entries: dict[str, object]
    slots: dict[str, Any]
    frozen: bool
    order: bool
    eq: bool


def watch_dataclasses() -> None:
    """Note every dataclass as it is made (before any production import): what its record is
    read from later, and what a rebinding after creation would change."""
    make = dataclasses._process_class  # type: ignore[attr-defined]  # the one place classes are made

    def noted(cls: type, *args: Any, **kwargs: Any) -> Any:
        made = make(cls, *args, **kwargs)
        with contextlib.suppress(Exception):  # a class it cannot note crosses as a handle
            _DATACLASSES[made] = _made(made)
        return made

    dataclasses._process_class = noted  # type: ignore[attr-defined]


def _made(cls: type) -> _Made:
    own = cls.__dict__
    params = own["__dataclass_params__"]
    names = tuple(f.name for f in dataclasses.fields(cls) if f.compare)
    keys = {"__dataclass_fields__", "__dataclass_params__", "__dict__", *COMPARE, *_READS, *names}
    slots = {n: own[n] for n in names if type(own.get(n)) is types.MemberDescriptorType}
    generated = not _own_methods(cls)
    return _Made(
        fields=names,
        entries={k: own.get(k, _ABSENT) for k in keys},
        slots=slots,
        frozen=bool(params.frozen),
        order=bool(params.order),
        eq=bool(params.eq) and generated,
    )


_ABSENT = object()
_DICT_SLOT = types.GetSetDescriptorType


def record_fields(value: object) -> Any:
    """A record's kind, its fields read from its storage, frozen, ordered (a tuple of four);
    None for a handle."""
    cls = type(value)
    mro = type.__dict__["__mro__"].__get__(cls)
    try:
        if enum.Enum in mro:
            return _enum_fields(value, cls, mro)
        if cls in _DATACLASSES:
            return _dataclass_fields(value, cls, mro)
        if tuple in cls.__bases__ and "_fields" in cls.__dict__:
            return _namedtuple_fields(value, cls, mro)
    except (KeyError, AttributeError, TypeError, IndexError):  # storage not as made: a handle
        return None
    return None


def _defines(mro: tuple[type, ...], base: type, names: tuple[str, ...]) -> bool:
    """A class of ``mro`` before ``base`` defines one of ``names`` (or its own ``__dict__``)."""
    for c in mro:
        if c is base:
            return False
        if any(n in c.__dict__ for n in names) or _own_dict(c):
            return True
    return True


def _own_dict(cls: type) -> bool:
    """``cls`` defines ``__dict__`` other than as the instance's storage."""
    return type(cls.__dict__.get("__dict__", _ABSENT)) not in (type(_ABSENT), _DICT_SLOT)


def _enum_fields(value: Any, cls: type, mro: tuple[type, ...]) -> Any:
    if _defines(mro, enum.Enum, (*COMPARE, *_READS, "name", "value", "_name_", "_value_")):
        return None
    storage = object.__getattribute__(value, "__dict__")
    name = storage["_name_"]
    if type(name) is not str or cls.__dict__["_member_map_"].get(name) is not value:
        return None
    return "enum", [("name", name), ("value", storage["_value_"])], True, False


def _dataclass_fields(value: Any, cls: type, mro: tuple[type, ...]) -> Any:
    for c in mro:
        made = _DATACLASSES.get(c)
        if made is not None and any(c.__dict__.get(k, _ABSENT) is not v
                                    for k, v in made.entries.items()):  # fmt: skip
            return None  # rebound after it was made
        if (
            made is None
            and c is not object
            and (any(n in c.__dict__ for n in _READS) or _own_dict(c))
        ):
            return None
    made = _DATACLASSES[cls]
    if not made.eq:
        return None
    fields: list[tuple[str, object]] = []
    storage = None
    for name in made.fields:
        if name in made.slots:
            fields.append((name, made.slots[name].__get__(value, cls)))
            continue
        if storage is None:
            storage = object.__getattribute__(value, "__dict__")
        fields.append((name, storage[name]))
    return "dataclass", fields, made.frozen, made.order


def _namedtuple_fields(value: Any, cls: type, mro: tuple[type, ...]) -> Any:
    if _defines(mro, tuple, (*COMPARE, *_READS, "__len__")):
        return None
    names = cls.__dict__["_fields"]
    if type(names) is not tuple or tuple.__len__(value) != len(names):
        return None
    for i, name in enumerate(names):
        getter = cls.__dict__.get(name) if type(name) is str else None
        if type(getter) is not _TUPLEGETTER or getter.__reduce__()[1][0] != i:
            return None  # a field's accessor rebound after creation, or the names reordered
    items = [(name, tuple.__getitem__(value, i)) for i, name in enumerate(names)]
    return "namedtuple", items, True, True


def _own_compare(cls: type, base: type) -> bool:
    """A class between ``cls`` and ``base`` defines a comparison, hash or truth method."""
    for c in cls.__mro__:
        if c is base:
            return False
        if any(name in c.__dict__ for name in COMPARE):
            return True
    return False


def _own_methods(cls: type) -> bool:
    """A dataclass whose comparison, hash or truth methods are not all the generated ones
    (generated methods are compiled from ``<string>`` and named for the class)."""
    for c in cls.__mro__:
        if c is object:
            return False
        for name in COMPARE:
            fn = c.__dict__.get(name)
            if fn is None:
                continue
            code = getattr(fn, "__code__", None)
            if code is None or code.co_filename != "<string>" or not dataclasses.is_dataclass(c):
                return True
    return False
