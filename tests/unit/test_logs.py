"""configure_logging writes to the stderr of the moment, not the one present at configure time."""

from __future__ import annotations

import io
import sys

import pytest
import structlog

from patchgate.logs import configure_logging


def test_logs_follow_a_replaced_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    """After stderr is swapped (and the old one closed), logging goes to the new stream."""
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("info", json_lines=True)
    first.close()
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    structlog.get_logger("t").info("hello", n=1)
    assert '"event": "hello"' in second.getvalue()
