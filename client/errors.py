"""Errors of the client and the exit codes they become (docs/reference/exit-codes.md).

Hierarchy::

    patchgate.errors.PatchgateError       (shared library; see its docstring)
    ├── CommandRefused                    a command refused on purpose; carries its exit code
    │                                     (dual-pin drift and flake-observe refusals exit 3)
    └── ConfigError                       the base revision's pins or ``[tool.patchgate]`` are
                                          invalid: the gate cannot even start (exit 78); carries
                                          every problem found, one line each

``exit_code_for`` is the one place an error becomes an exit code: ``main()`` calls it once.

:class:`Interrupted` is no error: it is the ``KeyboardInterrupt`` that SIGINT or SIGTERM raises in
the main thread (``signum`` says which), so that a command unwinds and cleans up; ``main()`` exits
128 + ``signum``.
"""

from __future__ import annotations

from collections.abc import Sequence

from patchgate.errors import (
    EnvironmentBuildError,
    FixtureScanError,
    PatchgateError,
    TransportError,
    UnsafeTreeError,
    UsageError,
)

__all__ = [
    "EXIT_CONFIG",
    "EXIT_DRIFT",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_SCAN",
    "EXIT_TRANSPORT",
    "EXIT_USAGE",
    "CommandRefused",
    "ConfigError",
    "Interrupted",
    "exit_code_for",
]

EXIT_OK = 0
EXIT_ERROR = 1  # check: a rejected patch; other commands: any other error
EXIT_SCAN = 2  # refused to score: fixture files missing / extra / unsafe / mismatched
EXIT_DRIFT = 3  # fixture drift between two pins (dual-pin)
EXIT_REFUSED = 3  # flake-observe refused: a precondition does not hold
EXIT_TRANSPORT = 4  # transport / infrastructure failure, nothing scored
EXIT_USAGE = 64  # bad flags or arguments, an unknown --base (sysexits EX_USAGE)
EXIT_CONFIG = 78  # invalid pins or [tool.patchgate] in the base revision (sysexits EX_CONFIG)


class CommandRefused(PatchgateError):
    """A command refused on purpose: ``reason`` is one readable line, ``exit_code`` documented."""

    def __init__(self, reason: str, exit_code: int = EXIT_REFUSED) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code


class ConfigError(PatchgateError):
    """The base revision's configuration cannot run the gate; ``problems``: one line each."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems) or ("invalid configuration",)
        super().__init__("; ".join(self.problems))


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: unwind, clean up, exit 128 + ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_code_for(exc: BaseException) -> int:
    """The documented exit code of an error: UsageError 64, ConfigError 78, FixtureScanError 2,
    TransportError 4, CommandRefused its own code, any other error 1."""
    if isinstance(exc, CommandRefused):
        return exc.exit_code
    if isinstance(exc, ConfigError | EnvironmentBuildError | UnsafeTreeError):
        return EXIT_CONFIG
    if isinstance(exc, UsageError):
        return EXIT_USAGE
    if isinstance(exc, FixtureScanError):
        return EXIT_SCAN
    if isinstance(exc, TransportError):
        return EXIT_TRANSPORT
    return EXIT_ERROR
