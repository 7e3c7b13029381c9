"""``patchgate explain [NAME]``: what a rejection code, an admission decision or a posture means,
and what to do next — the words of the codes reference, shipped in the package
(:mod:`client.verdict.codes`), so an installed copy without the docs can say them.

``NAME``: ``R1`` … ``R9`` (any case), an admission decision (``reject_class``, ...) or a posture
(``reject_credit``, ...). Without a name, every one is listed with its short title. Exit 0; an
unknown name is a usage error (64) that lists the names it knows.
"""

from __future__ import annotations

import argparse
import textwrap

from client.commands._util import print_json
from client.verdict.codes import explain, known_names
from patchgate.errors import UsageError

__all__ = ["register", "run"]

_WIDTH = 100


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``explain`` command."""
    p = subparsers.add_parser(
        "explain",
        help="what a code (R1-R9), admission decision or posture means, and what to do next",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "name", nargs="?", metavar="NAME", help="R1..R9, a decision or a posture (default: all)"
    )
    p.add_argument("--json", action="store_true", help="print the explanation as JSON")
    p.set_defaults(func=run)


def _field(label: str, text: str) -> list[str]:
    return textwrap.wrap(
        text, _WIDTH, initial_indent=f"  {label:<15}", subsequent_indent=" " * 17
    ) or [f"  {label}"]


def _lines(entry: dict[str, object]) -> list[str]:
    lines = [f"{entry['name']} {entry['title']} ({entry['kind']})"]
    if "exit_code" in entry:
        lines += _field("exit code", str(entry["exit_code"]))
    lines += _field("what it means", str(entry["meaning"]))
    if entry.get("cause") not in (None, "", "—"):
        lines += _field("typical cause", str(entry["cause"]))
    lines += _field("what to do", str(entry["next"]))
    return lines


def run(args: argparse.Namespace) -> int:
    """Print one explanation, or the list of every name; exit 0 (64 for an unknown name)."""
    if args.name is None:
        entries = [e for n in known_names() if (e := explain(n)) is not None]
        if args.json:
            print_json({"names": entries})
        else:
            for e in entries:
                print(f"{e['name']:<22} {e['kind']:<19} {e['title']}")
        return 0
    entry = explain(args.name)
    if entry is None:
        raise UsageError(
            f"explain: {args.name!r} is not a code, decision or posture this version knows "
            f"(known: {', '.join(known_names())})"
        )
    if args.json:
        print_json(entry)
    else:
        print("\n".join(_lines(entry)))
    return 0
