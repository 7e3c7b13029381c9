"""The subject: a small server that imports the patched production code and answers the judge.

Run by the supervisor as its own non-root uid (``python subject.py`` in the sandbox); it imports
nothing of the gate but the wire (loaded by file path, ``wire.py`` documents the protocol), the
executed tracer (``tracer.py``) and the forwarding of its output, logs and warnings
(``forwarding.py``). Its only channels are inherited pipes: the call link to the judge
(``PATCHGATE_SUBJECT_LINK``) and its executed report to the supervisor
(``PATCHGATE_SUBJECT_REPORT_FD``). Its config (``PATCHGATE_SUBJECT_CONFIG``): the production
top-level names, the source roots, the targets file and the caps.

Results go back by value when they are plain data (exact types), as records (dataclasses with the
generated ``__eq__``, NamedTuples, Enums) or as handles (an id in ``_Table``). While a call runs,
what production code prints, logs or warns is forwarded to the judge; callbacks the judge passed
in run in the judge (``JudgeObject``). Nothing here decides an outcome: the judge does.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import operator
import os
import sys
import threading
import traceback
import types
from collections.abc import Sequence
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["JudgeObject", "Server", "VariantFinder", "main", "read_variant", "record_kind"]


def _load(stem: str) -> ModuleType:
    """A sibling module of this file, by path, under a private name (never from sys.path)."""
    name = f"_patchgate_{stem}"
    mod = sys.modules.get(name)
    if mod is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{stem}.py")
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


if TYPE_CHECKING:
    from executord.inside import forwarding, storage, tracer, wire
else:
    wire = _load("wire")
    tracer = _load("tracer")
    forwarding = _load("forwarding")
    storage = _load("storage")

#: Read from :mod:`storage` (the same objects: ``PRODUCTION`` is filled by the server).
_COMPARE = storage.COMPARE
_BUILTIN_EXC = storage.BUILTIN_EXC
_PRODUCTION = storage.PRODUCTION
_record_fields = storage.record_fields
_verified = storage.verified
record_kind = storage.record_kind
watch_dataclasses = storage.watch_dataclasses


_TB_FRAMES = 8
_TB_CHARS = 4000
_OPS: dict[str, Any] = {
    "len": len,
    "repr": repr,
    "str": str,
    "iter": iter,
    "dir": lambda o: sorted(str(n) for n in dir(o)),
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "contains": lambda o, x: bool(x in o),
    "int": int,
    "float": float,
    "index": operator.index,
    "format": format,
    "bytes": bytes,
}
_BINOPS = frozenset(
    {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "abs", "and_",
     "or_", "xor", "lshift", "rshift", "invert", "matmul"}
)  # fmt: skip


_GROUP_DEPTH = 8  # an exception group's nesting the link carries
_GROUP_MEMBERS = 256  # and its members, per group


def exc_ref(cls: type) -> dict[str, Any]:
    """The TypeRef of an exception class, with ``verified``: for each class of its MRO, whether
    it is the class its module really holds under the name it gives (``_verified``)."""
    ref = wire.type_ref(cls)
    ref["verified"] = [_verified(c) for c in cls.__mro__ if c is not object]
    return ref


class _Table:
    """The subject's objects the judge holds handles to."""

    def __init__(self) -> None:
        self.objs: dict[int, object] = {}
        self._next = 1

    def put(self, obj: object) -> int:
        """A new id per export: each judge proxy releases its own."""
        hid, self._next = self._next, self._next + 1
        self.objs[hid] = obj
        return hid

    def get(self, hid: object) -> object:
        if type(hid) is not int or hid not in self.objs:
            raise wire.WireError(f"no such handle {hid!r}")
        return self.objs[hid]

    def release(self, hid: object) -> None:
        if type(hid) is int:
            self.objs.pop(hid, None)


class JudgeObject:
    """A judge value the subject holds (a callback, a sink): calling it runs it in the judge."""

    def __init__(self, server: Server, jid: int, name: str) -> None:
        self._server, self._jid, self._name = server, jid, name

    def __call__(self, *args: object, **kwargs: object) -> Any:
        return self._server.call_judge(self._jid, args, kwargs)

    def __repr__(self) -> str:
        return f"<judge object {self._name}>"

    def _op(self, op: str, *args: object) -> Any:
        return self._server.op_judge(self._jid, op, args)


class _JudgeIterable(JudgeObject):
    def __iter__(self) -> Any:
        return self._op("iter")


class _JudgeIterator(_JudgeIterable):
    def __next__(self) -> Any:
        return self._op("next")


class _JudgeSized(JudgeObject):
    def __len__(self) -> int:
        n = self._op("len")
        if type(n) is not int:
            raise TypeError("len() of a judge object answered a non-int")
        return n


class _JudgeContainer(JudgeObject):
    def __contains__(self, item: object) -> bool:
        return bool(self._op("contains", item))


_JUDGE_CLASSES: dict[tuple[bool, ...], type[JudgeObject]] = {}


def judge_class(payload: dict[str, Any]) -> type[JudgeObject]:
    """The subject's proxy class of a judge object: only the protocols its type has (a
    callback that is not iterable stays truthy; a generator answers ``next``)."""
    flags = tuple(payload.get(k) is True for k in ("iter", "next", "len", "contains"))
    if flags not in _JUDGE_CLASSES:
        iterable, iterator, sized, container = flags
        bases: list[type[JudgeObject]] = [_JudgeIterator] if iterator else []
        bases += [_JudgeIterable] if iterable and not iterator else []
        bases += [_JudgeSized] if sized else []
        bases += [_JudgeContainer] if container else []
        _JUDGE_CLASSES[flags] = (
            type("JudgeObject", tuple(bases), {"__slots__": ()}) if bases else JudgeObject
        )
    return _JUDGE_CLASSES[flags]


class Server:
    """Answers the judge's messages on one link; re-entrant for callbacks."""

    def __init__(self, link: wire.Link, config: dict[str, Any], report_fd: int = -1) -> None:
        self.link = link
        self.caps = link.caps
        self.table = _Table()
        self.production = frozenset(str(p) for p in config.get("production", ()))
        _PRODUCTION.update(self.production)
        self.report_fd = report_fd
        self._lock = threading.RLock()
        self._owner = threading.get_ident()
        self._next_call = 1
        self._env0 = dict(os.environ)  # the subject's own start: the judge's changes go on it
        self.members: dict[int, tuple[object, int]] = {}  # id of an Enum member -> (it, its id)

    # -- values -----------------------------------------------------------------------------
    def export(self, value: object) -> list[Any]:
        """What is not plain data: a record or a handle."""
        return self._encoder().encode(value)

    def _encoder(self) -> wire.Encoder:
        enc = wire.Encoder(None, self.caps)
        enc.other = lambda v: self._other(enc, v)
        return enc

    def _other(self, enc: wire.Encoder, value: object) -> list[Any]:
        got = _record_fields(value)
        if got is not None:
            return ["r", self._record(enc, value, got)]
        info: dict[str, Any] = {
            "id": self.table.put(value),
            "type": wire.type_ref(type(value)),
            "callable": callable(value),
        }
        if isinstance(value, type):
            info["exc"] = issubclass(value, BaseException)
            info["cls"] = exc_ref(value) if info["exc"] else wire.type_ref(value)
        if isinstance(value, ModuleType):
            info["package"] = hasattr(value, "__path__")
        return ["h", info]

    def exc_ref(self, cls: type) -> dict[str, Any]:
        """An exception or warning class's TypeRef, each class of its MRO verified."""
        return exc_ref(cls)

    def _record(self, enc: wire.Encoder, value: Any, got: tuple[Any, ...]) -> dict[str, Any]:
        kind, fields, frozen, order = got
        out = {
            "id": self.table.put(value),
            "type": wire.type_ref(type(value)),
            "kind": kind,
            "fields": [[n, enc.encode(v, 1)] for n, v in fields],
            "frozen": frozen,
            "order": order,
        }
        if kind == "enum":  # one identity per member, for as long as the run lasts
            key = id(value)
            if key not in self.members:
                self.members[key] = (value, len(self.members) + 1)
            out["member"] = self.members[key][1]
        return out

    def _rebuild(self, tag: str, payload: dict[str, Any]) -> object:
        if tag in ("h", "r"):
            return self.table.get(payload.get("id"))
        jid = payload.get("id")
        if type(jid) is not int:
            raise wire.WireError("a judge object without an id")
        return judge_class(payload)(self, jid, str(payload.get("name", "callback")))

    def decode(self, raw: object) -> Any:
        return wire.Decoder(self._rebuild, self.caps).decode(raw)

    def exc_info(self, exc: BaseException, depth: int = 0) -> dict[str, Any]:
        """An exception of the subject as the wire's ``Exc``; its type by identity (``exc_ref``),
        an exception group's members with it (``WireError`` past the caps)."""
        cls = type(exc)
        args: list[Any] = []
        for a in BaseException.__dict__["args"].__get__(exc):
            plain = wire.is_plain(a)
            args.append(wire.Encoder(None, self.caps).encode(a) if plain else ["s", repr(a)])
        frames = traceback.format_exception(cls, exc, exc.__traceback__, limit=-_TB_FRAMES)
        try:
            message = str(exc)
        except Exception:  # a str() that raises still gives an error
            message = f"<{cls.__qualname__}: str() failed>"
        out = {
            "type": exc_ref(cls),
            "builtin": _BUILTIN_EXC.get(cls.__name__) is cls,
            "message": message[:_TB_CHARS],
            "args": args,
            "traceback": "".join(frames)[-_TB_CHARS:],
            "handle": self.table.put(exc),
        }
        if isinstance(exc, BaseExceptionGroup):
            members = BaseExceptionGroup.__dict__["exceptions"].__get__(exc)
            if depth >= _GROUP_DEPTH or len(members) > _GROUP_MEMBERS:
                raise wire.WireError(
                    f"an exception group nested deeper than {_GROUP_DEPTH} or of more than "
                    f"{_GROUP_MEMBERS} exceptions"
                )
            out["group"] = {
                "message": str(BaseExceptionGroup.__dict__["message"].__get__(exc))[:_TB_CHARS],
                "exceptions": [self.exc_info(m, depth + 1) for m in members],
            }
        return out

    # -- the link ---------------------------------------------------------------------------
    def event(self, message: dict[str, Any]) -> None:
        """A forwarded effect (output, log, warning); dropped when sent from another thread
        while the link is busy would interleave frames (the lock keeps frames whole)."""
        with self._lock, contextlib.suppress(wire.WireError):
            self.link.send(message)

    def reply(self, call_id: object, fn: Any) -> None:
        try:
            value = fn()
            out: dict[str, Any] = {"k": "ok", "id": call_id, "value": self.export(value)}
        except StopIteration:
            out = {"k": "ok", "id": call_id, "value": ["n"], "stop": True}
        except wire.WireError as exc:  # the link's refusal, never the code's answer
            out = self._refused(call_id, exc)
        except BaseException as exc:  # every exception of production code is an answer
            try:
                out = {"k": "raise", "id": call_id, "exc": self.exc_info(exc)}
            except wire.WireError as refused:
                out = self._refused(call_id, refused)
        try:
            with self._lock:
                self.link.send(out)
        except wire.WireError as exc:  # too big to send: say so instead
            with self._lock:
                self.link.send(self._refused(call_id, exc))

    def _refused(self, call_id: object, exc: wire.WireError) -> dict[str, Any]:
        """The answer when the link cannot carry the real one: the judge voids the test."""
        why = str(exc)[:_TB_CHARS] or type(exc).__name__
        return {"k": "raise", "id": call_id, "refused": why,
                "exc": {"type": wire.type_ref(RuntimeError), "builtin": True, "message": why,
                        "args": [], "traceback": "", "handle": None}}  # fmt: skip

    def call_judge(self, jid: int, args: tuple[object, ...], kwargs: dict[str, object]) -> Any:
        """Run a judge callback: send the call, serve the judge's messages until its answer."""
        return self._ask_judge({
            "k": "call",
            "obj": jid,
            "args": [self.export(a) for a in args],
            "kwargs": [[k, self.export(v)] for k, v in kwargs.items()],
        })  # fmt: skip

    def op_judge(self, jid: int, op: str, args: tuple[object, ...]) -> Any:
        """Iterate, size or search a judge object: the operation runs in the judge."""
        return self._ask_judge(
            {"k": "op", "obj": jid, "op": op, "args": [self.export(a) for a in args]}
        )

    def _ask_judge(self, msg: dict[str, Any]) -> Any:
        if threading.get_ident() != self._owner:
            raise RuntimeError("a judge callback was called from a thread of the code under test")
        cid, self._next_call = self._next_call, self._next_call + 1
        msg["id"] = cid
        with self._lock:
            self.link.send(msg)
        while True:
            got = self.link.receive()
            if got["k"] in ("ok", "raise") and got.get("id") == cid:
                if got["k"] == "ok":
                    return self.decode(got.get("value"))
                raise self._judge_exception(got.get("exc"))
            self.handle(got)

    def _judge_exception(self, raw: object) -> BaseException:
        return _judge_exception(raw, self.table)

    def _apply_ctx(self, ctx: object) -> None:
        if not isinstance(ctx, dict):
            return
        env = ctx.get("env")
        if isinstance(env, dict):
            sets, unset = env.get("set"), env.get("unset")
            if not isinstance(sets, dict) or not isinstance(unset, list):
                return
            new = {k: v for k, v in self._env0.items() if k not in unset}
            new.update({str(k): str(v) for k, v in sets.items()})
            if new != dict(os.environ):
                os.environ.clear()
                os.environ.update(new)
        cwd = ctx.get("cwd")
        if type(cwd) is str:
            with contextlib.suppress(OSError):
                os.chdir(cwd)

    def handle(self, msg: dict[str, Any]) -> bool:
        """One message from the judge; False when the judge said goodbye."""
        kind, cid = msg["k"], msg.get("id")
        self._apply_ctx(msg.get("ctx"))
        if kind == "bye":
            return False
        if kind == "release":
            for hid in msg.get("ids") or ():
                self.table.release(hid)
        elif kind == "hello":
            self.reply(cid, lambda: wire.PROTOCOL)
        elif kind == "import":
            self.reply(cid, lambda: self._import(msg.get("module")))
        elif kind == "getattr":
            self.reply(cid, lambda: getattr(self.table.get(msg.get("obj")), _name(msg)))
        elif kind == "setattr":
            self.reply(cid, lambda: self._setattr(msg))
        elif kind == "call":
            self.reply(cid, lambda: self._call(msg))
        elif kind == "op":
            self.reply(cid, lambda: self._op(msg))
        elif kind in ("begin", "end"):
            self.reply(cid, lambda: self._phase(kind, msg.get("nodeid")))
        else:
            self.reply(cid, lambda: _refuse(f"unknown message kind {kind!r}"))
        return True

    def _setattr(self, msg: dict[str, Any]) -> None:
        obj = self.table.get(msg.get("obj"))
        if isinstance(obj, ModuleType):
            raise TypeError("the judge does not assign attributes of production modules")
        setattr(obj, _name(msg), self.decode(msg.get("value")))

    def _import(self, name: object) -> ModuleType:
        if type(name) is not str or name.split(".")[0] not in self.production:
            raise ImportError(f"the subject imports production modules only, not {name!r}")
        return importlib.import_module(name)

    def _call(self, msg: dict[str, Any]) -> Any:
        obj = self.table.get(msg.get("obj"))
        if msg.get("name") is not None:
            obj = getattr(obj, _name(msg))
        args = [self.decode(a) for a in msg.get("args") or ()]
        kwargs = {str(k): self.decode(v) for k, v in msg.get("kwargs") or ()}
        return obj(*args, **kwargs)  # type: ignore[operator]

    def _op(self, msg: dict[str, Any]) -> Any:
        op = msg.get("op")
        obj = self.table.get(msg.get("obj"))
        args = [self.decode(a) for a in msg.get("args") or ()]
        if op == "next":
            return next(obj)  # type: ignore[call-overload]
        if op in ("await", "anext", "aclose"):
            return _run_async(str(op), obj)
        if op in _OPS:
            return _OPS[str(op)](obj, *args)
        if op in _BINOPS:
            return getattr(operator, str(op))(obj, *args)
        if type(op) is str and op.startswith("r") and op[1:] in _BINOPS:
            return getattr(operator, op[1:])(args[0], obj)
        raise TypeError(f"unknown operation {op!r}")

    def _phase(self, kind: str, nodeid: object) -> None:
        if type(nodeid) is not str:
            raise TypeError("a test phase without a node id")
        if kind == "begin":
            self.report(tracer.TRACER.begin(nodeid))
        else:
            self.report(tracer.TRACER.end(nodeid))

    def report(self, records: list[dict[str, Any]]) -> None:
        """The executed report, on the subject's own pipe to the supervisor."""
        for rec in records:
            if self.report_fd < 0:
                continue
            with contextlib.suppress(OSError, wire.WireError):
                wire.write_all(self.report_fd, wire.record_line(rec))

    def serve(self) -> int:
        """Answer until the judge says goodbye or the link ends; the exit status."""
        while True:
            try:
                msg = self.link.receive()
            except EOFError:
                return 0
            except wire.WireError:
                return 3
            if not self.handle(msg):
                return 0


_LOOPS: list[Any] = []  # the subject's one event loop for the judge's awaits, made on first use


def _run_async(op: str, obj: object) -> Any:
    """A coroutine awaited, or an async generator's next item or close, run to completion on the
    subject's own event loop (one for the run, so an async generator keeps its loop between
    items); only the exact built-in types, never an object that says it is one."""
    if op == "await" and type(obj) is not types.CoroutineType:
        raise TypeError("await of an object that is not a coroutine")
    if op != "await" and type(obj) is not types.AsyncGeneratorType:
        raise TypeError(f"{op} of an object that is not an async generator")
    if not _LOOPS:
        import asyncio  # noqa: PLC0415 - only a run that awaits production code pays for it

        _LOOPS.append(asyncio.new_event_loop())
    step = obj if op == "await" else getattr(obj, f"__{op}__")()
    return _LOOPS[0].run_until_complete(step)


def _name(msg: dict[str, Any]) -> str:
    name = msg.get("name")
    if type(name) is not str:
        raise TypeError("an attribute name that is not text")
    return name


def _refuse(why: str) -> None:
    raise TypeError(why)


def _judge_exception(raw: object, table: _Table) -> BaseException:
    """An exception a judge callback raised: the subject's own when it came from here, else
    rebuilt (builtin types by name, anything else a RuntimeError naming it)."""
    info = raw if isinstance(raw, dict) else {}
    own = table.objs.get(info["handle"]) if type(info.get("handle")) is int else None
    if isinstance(own, BaseException):
        return own
    ref = info.get("type") if isinstance(info.get("type"), dict) else {}
    name = str(ref.get("qualname", "")) if isinstance(ref, dict) else ""
    cls = getattr(builtins, name, None) if info.get("builtin") else None
    message = str(info.get("message", "a judge callback failed"))
    if isinstance(cls, type) and issubclass(cls, Exception):
        with contextlib.suppress(Exception):
            return cls(message)
    return RuntimeError(f"judge callback raised {name}: {message}")


class VariantFinder(importlib.abc.MetaPathFinder):
    """Serves the module whose file is ``path`` from ``source`` (first on ``sys.meta_path``).

    The module is found as the path finder finds it (same name, same package layout, the real
    file as its origin, ``__file__`` and code filename); only its code comes from memory, compiled
    once as that file, never from a ``.pyc``. The source is dropped once compiled: a re-import or
    ``importlib.reload`` runs the same code object. The file on disk is never read here: code that
    reads it sees the patched bytes."""

    def __init__(self, path: str, source: bytes) -> None:
        self.path = os.path.realpath(path)
        self._source: bytes | None = source
        self._code: CodeType | None = None
        self._failed: BaseException | None = None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.has_location or not spec.origin:
            return None
        if os.path.realpath(spec.origin) != self.path:
            return None
        spec.loader = _VariantLoader(self, spec.origin)
        spec.cached = None
        return spec

    def code(self, filename: str) -> CodeType:
        """The variant's code object, compiled on first use (the source then dropped)."""
        if self._code is None:
            if self._source is None:
                raise ImportError(f"the variant of {filename} did not compile: {self._failed}")
            source, self._source = self._source, None
            try:
                self._code = compile(source, filename, "exec", dont_inherit=True)
            except BaseException as exc:
                self._failed = exc
                raise
            finally:
                del source
        return self._code


class _VariantLoader(importlib.abc.Loader):
    def __init__(self, finder: VariantFinder, filename: str) -> None:
        self._finder, self._filename = finder, filename

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        exec(self._finder.code(self._filename), module.__dict__)  # noqa: S102 - the code under test


def read_variant(name: str = "PATCHGATE_SUBJECT_VARIANT_FD") -> tuple[str, bytes] | None:
    """The variant on the fd the environment names (``{"path"}`` line, then the source), read to
    its end and closed; None without one. ``ValueError`` when it is malformed."""
    raw = os.environ.pop(name, "")
    if not raw:
        return None
    if not raw.isdigit():
        raise ValueError("a variant fd that is not a number")
    fd = int(raw)
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    head, newline, source = b"".join(chunks).partition(b"\n")
    doc = json.loads(head) if newline else None
    if not isinstance(doc, dict) or type(doc.get("path")) is not str:
        raise ValueError("a malformed variant")
    return doc["path"], source


def _fds(name: str) -> list[int]:
    raw = os.environ.pop(name, "")
    return [int(x) for x in raw.split(",") if x.strip().isdigit()]


def main() -> int:
    """The subject's entry point (the supervisor starts it with its fds and config set)."""
    try:
        variant = read_variant()
    except (OSError, ValueError):
        return 2
    if variant is not None:  # before any production import
        sys.meta_path.insert(0, VariantFinder(*variant))
        del variant
    config = wire.role_env("PATCHGATE_SUBJECT_CONFIG")
    os.environ.pop("PATCHGATE_SUBJECT_CONFIG", None)
    link_fds = _fds("PATCHGATE_SUBJECT_LINK")
    report = _fds("PATCHGATE_SUBJECT_REPORT_FD")
    if len(link_fds) != 2:
        return 2
    for root in reversed([str(r) for r in config.get("source_roots", ())]):
        sys.path.insert(0, root)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    server = Server(
        wire.Link(link_fds[0], link_fds[1], wire.Caps.from_json(config.get("caps"))),
        config,
        report[0] if report else -1,
    )
    watch_dataclasses()  # before any production import: each dataclass noted as it is made
    tracer.TRACER.configure(str(config.get("targets", "")))
    tracer.TRACER.start()
    forwarding.install(server)
    status = server.serve()
    server.report(tracer.TRACER.stop())
    return status


if __name__ == "__main__":
    zygote = bool(os.environ.get("PATCHGATE_ZYGOTE_FD"))  # mutation v2's zygote (zygote.py)
    code = _load("zygote").subject_main(main) if zygote else main()
    sys.stdout.flush()
    os._exit(code)  # never run production atexit hooks or threads' cleanup past the judge's end
