"""What a person reads after a check besides the receipt: each sandbox's log tail, each run's
failure text and where the named code is defined.

None of it is scored: outcomes come only from the executor's reporter. A :class:`SandboxLog` is
what one sandbox printed (the tail of stdout and stderr that the executor keeps in its signed
report); it names every property that sandbox ran, so one log serves several properties when runs
are batched. :class:`Evidence` is the read-only bundle a report renders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from patchgate.results import RunOutcome

__all__ = ["Evidence", "Location", "SandboxLog"]


class _RunLogMessage(Protocol):  # the fields of ``executor_pb2.RunLog`` read here
    property_id: str

    @property
    def property_ids(self) -> Sequence[str]: ...

    run_index: int
    stdout_tail: str
    stderr_tail: str
    stdout_bytes: int
    stderr_bytes: int


@dataclass(frozen=True, kw_only=True)
class SandboxLog:
    """The captured tail of one sandbox's stdout and stderr, for every property it ran."""

    properties: tuple[str, ...]
    run_index: int
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0

    @classmethod
    def from_proto(cls, msg: _RunLogMessage) -> SandboxLog:
        """From one ``RunLog`` of a signed report: every property its sandbox ran (a batch:
        several; an older executor names one in ``property_id``)."""
        return cls(
            properties=tuple(msg.property_ids) or (msg.property_id,),
            run_index=int(msg.run_index),
            stdout=msg.stdout_tail,
            stderr=msg.stderr_tail,
            stdout_bytes=int(msg.stdout_bytes),
            stderr_bytes=int(msg.stderr_bytes),
        )

    def text(self) -> str:
        """The log file's text: which properties the sandbox ran, then stdout, then stderr."""
        cut = {
            "stdout": self.stdout_bytes > len(self.stdout.encode()),
            "stderr": self.stderr_bytes > len(self.stderr.encode()),
        }
        parts = [f"# sandbox of run {self.run_index}: {', '.join(self.properties)}\n"]
        for name, body, total in (
            ("stdout", self.stdout, self.stdout_bytes),
            ("stderr", self.stderr, self.stderr_bytes),
        ):
            tail = " (last part only)" if cut[name] else ""
            parts.append(f"# {name}: {total} bytes{tail}\n{body}")
            if body and not body.endswith("\n"):
                parts.append("\n")
        return "".join(parts)


@dataclass(frozen=True)
class Location:
    """A file (relative to the repository) and a 1-based line."""

    path: str
    line: int


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """Outcomes and logs of the local lane, and where changed symbols and properties live."""

    outcomes: tuple[RunOutcome, ...] = ()
    logs: tuple[SandboxLog, ...] = ()
    #: changed symbol -> its definition in the patched tree
    symbols: Mapping[str, Location] = field(default_factory=dict)
    #: property id -> the definition of its (first) test function
    properties: Mapping[str, Location] = field(default_factory=dict)

    def failures(self) -> dict[str, list[RunOutcome]]:
        """Property id -> its runs that did not pass, in run order (only properties with one)."""
        out: dict[str, list[RunOutcome]] = {}
        for o in sorted(self.outcomes, key=lambda o: (o.property_id, o.run_index)):
            if o.outcome != "pass":
                out.setdefault(o.property_id, []).append(o)
        return out

    def log_of(self, property_id: str, run_index: int) -> SandboxLog | None:
        """The log of the sandbox that ran ``property_id``'s run ``run_index`` (None if none)."""
        for log in self.logs:
            if log.run_index == run_index and property_id in log.properties:
                return log
        return None
