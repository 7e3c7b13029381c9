"""What the subject prints, logs and warns while it runs production code goes to the judge.

Standard library only; loaded by the subject by file path. ``install`` replaces ``sys.stdout``
and ``sys.stderr`` with writers that send each write as an ``out`` message, adds a root log
handler that sends each record as ``log`` (the root logger at level 1: the judge's own levels
decide, as caplog sets them) and makes every warning a ``warn`` message (filter ``always``: the
judge's filters decide). The judge replays them (``judgelink``), so capsys, caplog and
pytest.warns see them.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import warnings
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from executord.inside import wire
else:
    wire = sys.modules["_patchgate_wire"]  # loaded by the subject before this module

__all__ = ["Sink", "install"]


class Sink(Protocol):
    """Where forwarded effects go (``subject.Server``)."""

    def event(self, message: dict[str, Any]) -> None: ...


class _Forward(io.TextIOBase):
    """sys.stdout/sys.stderr of the subject: every write goes to the judge."""

    def __init__(self, server: Sink, stream: str) -> None:
        self._server, self._stream = server, stream

    encoding = "utf-8"  # what production code may ask of a stream

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            self._server.event({"k": "out", "stream": self._stream, "text": str(text)})
        return len(text)


class _LogForward(logging.Handler):
    def __init__(self, server: Sink) -> None:
        super().__init__(level=1)
        self._server = server

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            msg = record.getMessage()
            self._server.event(
                {"k": "log", "name": record.name, "level": record.levelno, "msg": msg}
            )


def _showwarning(server: Sink) -> Any:
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             *_rest: object) -> None:  # fmt: skip
        server.event(
            {
                "k": "warn",
                "category": getattr(server, "exc_ref", wire.type_ref)(category),
                "message": str(message),
                "filename": str(filename),
                "lineno": int(lineno),
            }
        )

    return show


def install(server: Sink) -> None:
    """Route the subject's output, log records and warnings to the judge."""
    sys.stdout = _Forward(server, "stdout")
    sys.stderr = _Forward(server, "stderr")
    root = logging.getLogger()
    root.addHandler(_LogForward(server))
    root.setLevel(1)
    warnings.simplefilter("always")
    warnings.showwarning = _showwarning(server)
