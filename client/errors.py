"""Errors of the client and the exit codes they become (DESIGN §8).

Hierarchy::

    patchgate.errors.PatchgateError       (shared library; see its docstring)
    └── CommandRefused                    a command refused on purpose; carries its exit code
                                          (dual-pin drift and flake-observe refusals exit 3)

``exit_code_for`` is the one place an error becomes an exit code: ``main()`` calls it once.
"""

from __future__ import annotations

from patchgate.errors import FixtureScanError, PatchgateError, TransportError, UsageError

__all__ = [
    "EXIT_DRIFT",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_SCAN",
    "EXIT_TRANSPORT",
    "EXIT_USAGE",
    "CommandRefused",
    "exit_code_for",
]

EXIT_OK = 0
EXIT_ERROR = 1  # rejected, or any other error
EXIT_SCAN = 2  # refused to score: fixture files missing / extra / unsafe / mismatched
EXIT_DRIFT = 3  # fixture drift between two pins (dual-pin)
EXIT_REFUSED = 3  # flake-observe refused: a precondition does not hold
EXIT_TRANSPORT = 4  # transport / infrastructure failure, nothing scored
EXIT_USAGE = 64  # bad flags or arguments (sysexits EX_USAGE)


class CommandRefused(PatchgateError):
    """A command refused on purpose: ``reason`` is one readable line, ``exit_code`` documented."""

    def __init__(self, reason: str, exit_code: int = EXIT_REFUSED) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code


def exit_code_for(exc: BaseException) -> int:
    """The documented exit code of an error: UsageError 64, FixtureScanError 2, TransportError 4,
    CommandRefused its own code, any other error 1."""
    if isinstance(exc, CommandRefused):
        return exc.exit_code
    if isinstance(exc, UsageError):
        return EXIT_USAGE
    if isinstance(exc, FixtureScanError):
        return EXIT_SCAN
    if isinstance(exc, TransportError):
        return EXIT_TRANSPORT
    return EXIT_ERROR
