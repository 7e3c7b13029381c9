"""What ``patchgate check`` prints and writes besides the ledgers: the report in one of four
formats, a JUnit file, progress on stderr, and the ``PATCHGATE_*`` environment settings.

* stdout: ``--format text`` (default; ``--quiet`` prints its first line alone), ``json`` (the
  receipt; ``--json`` is an alias), ``markdown`` or ``github`` (workflow annotations).
* ``--junit FILE``: one test case per property, both runs in it, whatever the format.
* stderr: one progress line per finished property (a live line with done/total and elapsed time
  on a terminal, plain lines otherwise); the executors' own events only with ``--verbose``;
  nothing but errors with ``--quiet``.
* ``PATCHGATE_SIGNER``, ``PATCHGATE_EXECUTOR`` (comma-separated), ``PATCHGATE_OPERATOR_KEYRING``
  and ``PATCHGATE_OUT`` sit between the flags and the lane or ``[check]`` defaults.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from client.commands._util import print_json
from client.gate.pipeline import CheckResult
from client.gate.selftest import SelfTestResult
from client.gate.settings import CheckSettings
from client.report.github import render_github
from client.report.junit import render_junit
from client.report.markdown import render_markdown
from client.report.model import Report, printable
from client.report.text import render_text
from patchgate.atomicfile import atomic_write_bytes
from patchgate.errors import UsageError

__all__ = [
    "ENVIRONMENT",
    "NO_PATCH",
    "Progress",
    "add_output_flags",
    "check_report_flags",
    "env_settings",
    "report_check",
    "report_self_test",
    "require_patch",
]

FORMATS = ("text", "json", "markdown", "github")
NO_PATCH = Path(os.devnull)  # --self-test: the settings' patch, never read
#: environment variable -> the [check] setting it gives (flags win; it wins over the defaults)
ENVIRONMENT = {
    "PATCHGATE_SIGNER": "signer",
    "PATCHGATE_EXECUTOR": "executor",
    "PATCHGATE_OPERATOR_KEYRING": "operator_keyring",
    "PATCHGATE_OUT": "out",
}
_LANE_LINE = re.compile(r"^\[(?P<lane>\S+) (?P<done>\d+)/(?P<total>\d+)\] (?P<text>.*)$")
# "<property>[ +N]: <property or ->#<run> <phase> <message>" (+N: the others of a batch)
_EVENT = re.compile(r"^\S+(?: \+\d+)?: \S*#\d+ ")


def add_output_flags(p: argparse.ArgumentParser) -> None:
    """``--self-test``, ``--format``, ``--json``, ``--junit``, ``--quiet``."""
    p.add_argument(
        "--self-test",
        action="store_true",
        help="run the suite on the base tree alone (no --patch, --draft-id or --drafter); the "
        "first line says what happened: 0 passed; 2 the base's fixtures do not match their pin, "
        "or an executor refused; 4 a daemon unreachable or a run without an outcome; 78 a "
        "property fails or errors on the base, or the operator signature does not verify",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="stdout: text (default), json (the receipt), markdown (a summary for "
        "$GITHUB_STEP_SUMMARY or a merge-request note), github (::error annotations)",
    )
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.add_argument(
        "--junit", type=Path, metavar="FILE", help="also write JUnit XML (one case per property)"
    )
    p.add_argument(
        "-q", "--quiet", action="store_true", help="print the verdict line and errors only"
    )


def env_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``[check]`` settings the environment gives (a blank variable gives nothing)."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for var, key in ENVIRONMENT.items():
        value = env.get(var, "").strip()
        if not value:
            continue
        if key == "executor":
            addresses = [a.strip() for a in value.split(",") if a.strip()]
            if addresses:
                out[key] = addresses
        else:
            out[key] = value
    return out


def require_patch(args: argparse.Namespace) -> None:
    """``--patch`` unless ``--self-test``; ``--self-test`` takes no patch. Usage errors (64)."""
    if getattr(args, "self_test", False):
        if args.patch is not None:
            raise UsageError("--self-test runs the base alone; drop --patch")
    elif args.patch is None:
        raise UsageError("--patch is required (or --self-test, to run the base alone)")


def _format(args: argparse.Namespace) -> str:
    if args.json and args.format not in (None, "json"):
        raise UsageError(f"--json and --format {args.format} disagree")
    return "json" if args.json else (args.format or "text")


class Progress:
    """The stderr side of a check: lane progress, warnings, executor events (``verbose``)."""

    def __init__(self, *, verbose: bool, quiet: bool, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.verbose, self.quiet = verbose, quiet
        self.live = not verbose and not quiet and self.stream.isatty()
        self.start = time.monotonic()
        self._open = False  # a live line is on screen

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        message = printable(message)  # an executor's event may quote what a run printed
        lane = _LANE_LINE.match(message)
        if lane is None and _EVENT.match(message) and not self.verbose:
            return
        if lane is not None and self.live:
            secs = int(time.monotonic() - self.start)
            line = f"[{lane['lane']} {lane['done']}/{lane['total']} {secs // 60}:{secs % 60:02d}]"
            self.stream.write(f"\r\x1b[K{line} {lane['text']}"[:200])
            self._open = True
        else:
            self.end()
            self.stream.write(message + "\n")
        self.stream.flush()

    def end(self) -> None:
        """Close a live line (before other output)."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


def _emit(args: argparse.Namespace, report: Report, receipt_json: dict[str, Any] | None) -> None:
    fmt = _format(args)
    if fmt == "json":
        print_json(receipt_json if receipt_json is not None else report.receipt.to_json())
    elif fmt == "markdown":
        sys.stdout.write(render_markdown(report))
    elif fmt == "github":
        sys.stdout.write(render_github(report))
    else:
        sys.stdout.write(render_text(report, quiet=args.quiet))
    if args.junit is not None:
        atomic_write_bytes(args.junit, render_junit(report).encode("utf-8"))


def check_report_flags(args: argparse.Namespace, settings: CheckSettings) -> None:
    """``--format``/``--json`` agree and ``--junit`` can be written: usage errors (64) before
    anything runs."""
    _format(args)
    if args.junit is not None and args.junit.is_dir():
        raise UsageError(f"--junit {args.junit}: is a directory")
    junit_dir = args.junit.absolute().parent if args.junit is not None else None
    # The --out directory is made by the check itself, so a report inside it is fine.
    if junit_dir is not None and not junit_dir.is_dir() and junit_dir != settings.out.absolute():
        raise UsageError(f"--junit {args.junit}: {junit_dir} is no directory")


def report_self_test(
    args: argparse.Namespace, settings: CheckSettings, tested: SelfTestResult
) -> int:
    """Print the self-test's report, write ``--junit``; its exit code."""
    report = Report(
        receipt=tested.receipt,
        reasons=tested.reasons,
        evidence=tested.evidence,
        out_dir=str(settings.out),
        self_test=True,
        self_test_verdict=tested.verdict,
        lane=settings.lane,
    )
    summary = {"self_test": True, "verdict": tested.verdict, **tested.receipt.to_json()}
    _emit(args, report, summary)
    return tested.exit_code


def report_check(args: argparse.Namespace, settings: CheckSettings, result: CheckResult) -> int:
    """Print the check's report, write ``--junit``; the verdict's exit code."""
    report = Report(
        receipt=result.receipt,
        rows=result.rows,
        reasons=result.reasons,
        evidence=result.evidence,
        out_dir=str(settings.out),
        lane=settings.lane,
    )
    _emit(args, report, None)
    return result.verdict.exit_code
