"""structlog set-up, done once in each entry point: console on a TTY, JSON lines otherwise."""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["configure_logging"]


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is *now*, not the stream in place at configure time.

    A process (or a test harness) may replace ``sys.stderr`` after logging is configured; binding
    the original object would write into a closed stream later.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(level: str = "info", json_lines: bool | None = None) -> None:
    """Configure structlog for a process. Logs go to stderr; per-RPC context via contextvars."""
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
