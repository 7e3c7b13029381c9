"""The ``patchgate`` command line: one registry of command modules, one error boundary.

Each module named in ``_COMMANDS`` has ``register(subparsers)``, which adds its parser with
``set_defaults(func=run)``, and ``run(args) -> int``, which returns the exit code. ``main`` catches
:class:`patchgate.errors.PatchgateError` once, prints one readable line to stderr and exits with
:func:`client.errors.exit_code_for`; ``--verbose`` (accepted before or after the command name) also
prints the traceback. Usage errors exit 64; a configuration error (the base's pins) exits 78 with
one line per problem. Any other ``OSError`` that reaches ``main`` (a permission, a full disk) is
one line too and exits 4, an infrastructure failure. SIGINT and SIGTERM raise
:class:`client.errors.Interrupted` in the main thread (once: a second signal does not cut the
clean-up short); whatever is running unwinds — a check cancels its queued and running properties
and removes its temp workspace — and the exit code is 128 + the signal number (130, 143).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import NoReturn

from client.errors import (
    EXIT_TRANSPORT,
    EXIT_USAGE,
    CommandRefused,
    ConfigError,
    Interrupted,
    exit_code_for,
)
from patchgate.errors import PatchgateError

__all__ = ["build_parser", "main"]

# Module names, in the order their commands are listed in --help. Adding a command = one line here.
_COMMANDS: tuple[str, ...] = (
    "client.commands.ledgers.digest",
    "client.commands.ledgers.dualpin",
    "client.commands.ledgers.flake",
    "client.commands.check",
    "client.commands.properties",
    "client.commands.verify",
    "client.commands.explain",
    "client.commands.demo",
    "client.commands.up",
    "client.commands.operator.init",
    "client.commands.operator.pin",
    "client.commands.operator.env",
)
# Command name -> its module, so that running one command imports only its module (``digest``
# needs neither grpc nor docker). --help, or an unknown command, imports them all.
_MODULE_OF: dict[str, str] = {
    "digest": "client.commands.ledgers.digest",
    "dual-pin": "client.commands.ledgers.dualpin",
    "flake-observe": "client.commands.ledgers.flake",
    "check": "client.commands.check",
    "properties": "client.commands.properties",
    "verify-receipt": "client.commands.verify",
    "explain": "client.commands.explain",
    "demo": "client.commands.demo",
    "up": "client.commands.up",
    "env": "client.commands.operator.env",
    "down": "client.commands.up",
    "init": "client.commands.operator.init",
    "pin": "client.commands.operator.pin",
}
# Commands that log nothing: they skip structlog's import and set-up (start-up time of ``digest``).
_NO_LOGGING = frozenset(
    {
        "client.commands.ledgers.digest",
        "client.commands.ledgers.dualpin",
        "client.commands.explain",
        "client.commands.ledgers.flake",
        "client.commands.operator.init",
        "client.commands.operator.pin",
    }
)

_DESCRIPTION = """\
patchgate decides whether an agent-written patch may be scored and merged. It keeps three signals
apart: fixture bytes (signed, worth no credit), property outcomes (the only credit) and flake
observations (never credit). Anything missing fails closed.
"""

_EPILOG = """\
exit codes:
  0   success (admitted / written / pins agree)
  1   check: the patch was rejected; other commands: an error (bad pin, bad ledger, stale receipt)
  2   refused to score: fixture files missing, unpinned (extra), unsafe or mismatched
  3   fixture drift between two pins (dual-pin), or flake-observe refused (a missing or
      unreadable input ledger included)
  4   transport or infrastructure failure; nothing was scored
  64  usage error (an unknown --base included)
  78  configuration error: invalid pins or [tool.patchgate] in the base revision (every
      problem is printed, one line each)

Run 'patchgate COMMAND --help' for a command's flags, 'patchgate explain CODE' for what a
rejection code (R1-R9), admission decision or posture means and what to do next.
"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors exit 64 and which accepts ``--verbose`` anywhere."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # SUPPRESS: a subcommand's parser only sets it when given, never resets the global value
        self.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            default=argparse.SUPPRESS,
            help="on error, also print the traceback; log at debug level",
        )

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: usage error: {message}\n")


def _version() -> str:
    """The installed package's version (its metadata), or "unknown" outside an install."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - --version only

    try:
        return version("patchgate")
    except PackageNotFoundError:
        return "unknown"


def _command_of(argv: Sequence[str]) -> str | None:
    """The module of the command named in ``argv`` (its first non-option word), if known."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return _MODULE_OF.get(word) if word is not None else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser with every registered command (or only the module ``only``)."""
    parser = _Parser(prog="patchgate", description=_DESCRIPTION, epilog=_EPILOG)
    parser.add_argument("--version", action="version", version=f"patchgate {_version()}")
    subparsers = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", parser_class=_Parser
    )
    for name in _COMMANDS if only is None else (only,):
        importlib.import_module(name).register(subparsers)
    return parser


def _error_lines(exc: PatchgateError) -> str:
    """One line per problem (a ConfigError has several), whatever the error's text carries."""
    problems: tuple[str, ...] = (str(exc),)
    label = "refused" if isinstance(exc, CommandRefused) else "error"
    if isinstance(exc, ConfigError):
        label, problems = "configuration error", exc.problems
    return "".join(f"patchgate: {label}: {' '.join(p.split())}\n" for p in problems)


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """SIGINT/SIGTERM raise :class:`Interrupted` in the main thread, the first one only; the
    previous handlers come back on exit. Elsewhere than the main thread: nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        if not fired:  # a second signal must not interrupt the clean-up of the first
            fired.append(signum)
            raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _traceback(verbose: bool) -> None:
    if verbose:
        import traceback  # noqa: PLC0415 - only --verbose pays for it

        traceback.print_exc(file=sys.stderr)


def _os_error_line(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"patchgate: error: {where}{exc.strerror or exc}\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``patchgate`` console script. Returns the exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(words))
    try:
        args = parser.parse_args(words)
    except SystemExit as exc:  # --help (0) or a usage error (64)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    verbose = bool(getattr(args, "verbose", False))
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if _command_of(words) not in _NO_LOGGING:
        from patchgate.logs import configure_logging  # noqa: PLC0415 - structlog costs ~50 ms

        configure_logging("debug" if verbose else "info")
    try:
        with _interruptible():
            code: int = args.func(args)
    except PatchgateError as exc:
        _traceback(verbose)
        sys.stderr.write(_error_lines(exc))
        return exit_code_for(exc)
    except OSError as exc:
        _traceback(verbose)
        sys.stderr.write(" ".join(_os_error_line(exc).split()) + "\n")
        return EXIT_TRANSPORT
    except KeyboardInterrupt as exc:  # Interrupted, or a SIGINT outside the main thread's handler
        _traceback(verbose)
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        sys.stderr.write(f"patchgate: interrupted ({signal.Signals(signum).name})\n")
        return 128 + signum
    return code


if __name__ == "__main__":
    sys.exit(main())
