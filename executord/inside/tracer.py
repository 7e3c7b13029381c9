"""Which target code ran in the subject, from its first import, per test (the ``executed`` report).

Standard library only; loaded by the subject by file path. A target is (path relative to the
workspace, first line, last line, qualified name), as ``targets.json`` lists them (the file
``executord.runs.channel.write_targets`` writes). A target counts when ITS OWN code object had a
call: a code object whose file is the target's file, whose first line lies in the target's range
(decorators included, as ``co_firstlineno`` of a decorated function is its first decorator's
line), and whose qualified name (``co_qualname`` without ``<locals>``) is the target's name
after its module (a nested def as the client names it, ``outer.<locals>.inner``, or without
the ``<locals>``; a name the client sent hashed, by the hash of the frame's module and the
qualname) — so a lambda in the symbol's default arguments, a comprehension, or a nested def
that is a symbol of its own does not count for the symbol around it.

The hook is ``sys.setprofile`` plus ``threading.setprofile`` (set before any production import,
so threads the code under test starts are traced too). Hits are attributed to the phase that is
current when they happen: ``import`` (module import, collection-time calls, anything between
tests) until the judge says a test's setup begins, then that test until the judge says its
teardown ended. Records (``wire.py``: ``executed``) go to the supervisor; the code under test can
switch the hook off or lie — executed is a necessary condition, never evidence on its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from types import CodeType, FrameType
from typing import Any

__all__ = ["TRACER", "Tracer"]


class Tracer:
    """Targets by file; the hits of the current phase."""

    def __init__(self) -> None:
        self.by_file: dict[str, list[tuple[int, int, str]]] = {}
        self._seen: dict[CodeType, str | None] = {}
        self._lock = threading.Lock()
        self.phase = ""  # "" = the import phase, else the running test's node id
        self.hits: set[str] = set()

    def configure(self, path: str, root: str = "") -> None:
        """Read ``targets.json`` (relative paths resolved against ``root``, default the cwd)."""
        self.by_file = {}
        self._seen = {}
        if not path:
            return
        try:
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except (OSError, ValueError):
            return
        base = root or os.getcwd()
        for t in raw if isinstance(raw, list) else []:
            try:
                f = os.path.realpath(os.path.join(base, str(t["path"])))
                entry = (int(t["first"]), int(t["last"]), str(t["name"]))
            except (KeyError, TypeError, ValueError):
                continue
            self.by_file.setdefault(f, []).append(entry)

    def name_of(self, code: CodeType, module: str = "") -> str | None:
        """The target whose own code object ``code`` is, else None (cached per code object).
        A nested def's target is named as the client names it (``f.<locals>.g``) or without the
        ``<locals>``; a long name arrives hashed (``sha256:`` as ``patchgate.symbols.wire_name``
        makes it), matched against ``module`` (the frame's ``__name__``) and the qualname."""
        try:
            return self._seen[code]
        except KeyError:
            pass
        name = None
        ranges = self.by_file.get(os.path.realpath(code.co_filename))
        if ranges:
            qual = getattr(code, "co_qualname", code.co_name)
            forms = {"." + qual, "." + qual.replace(".<locals>", "")}
            hashed = {_wire_name(f"{module}{form}") for form in forms} if module else set()
            for first, last, target in ranges:
                if not first <= code.co_firstlineno <= last:
                    continue
                if any(target.endswith(form) for form in forms) or target in hashed:
                    name = target
                    break
        self._seen[code] = name
        return name

    def profile(self, frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            code = frame.f_code
            name = self._seen[code] if code in self._seen else self.name_of(code, _module(frame))
            if name is not None and name not in self.hits:
                with self._lock:
                    self.hits.add(name)

    def start(self) -> None:
        if self.by_file:
            sys.setprofile(self.profile)
            threading.setprofile(self.profile)

    def _take(self) -> list[str]:
        with self._lock:
            got, self.hits = sorted(self.hits), set()
        return got

    def begin(self, nodeid: str) -> list[dict[str, Any]]:
        """A test's setup begins: what ran since the last test (the import phase) is reported."""
        got = self._take()
        self.phase = nodeid
        return [_record("import", "", got)] if got else []

    def end(self, nodeid: str) -> list[dict[str, Any]]:
        """The test's teardown ended: what ran during it."""
        got = self._take() if self.phase == nodeid else []
        self.phase = ""
        return [_record("test", nodeid, got)]

    def stop(self) -> list[dict[str, Any]]:
        """The end of the run: anything still unreported (as the import phase)."""
        sys.setprofile(None)
        threading.setprofile(None)
        got = self._take()
        if self.phase:
            return [_record("test", self.phase, got)]
        return [_record("import", "", got)] if got else []


def _module(frame: FrameType) -> str:
    name = frame.f_globals.get("__name__")
    return name if type(name) is str else ""


def _wire_name(name: str) -> str:
    """``patchgate.symbols.wire_name``: a name over 64 characters as ``sha256:`` + 40 hex."""
    if len(name) <= _WIRE_NAME_CHARS:
        return name
    return "sha256:" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:40]


_WIRE_NAME_CHARS = 64


def _record(phase: str, nodeid: str, targets: list[str]) -> dict[str, Any]:
    return {"kind": "executed", "phase": phase, "nodeid": nodeid, "targets": targets}


TRACER = Tracer()
