"""Freeze citations that hold: when a skip/xfail that cites a flake id is valid
(docs/reference/pins.md).

A citation is a test's skip/xfail marker or call whose reason names a flake id (``FLK-1044``).
It is read from every pinned property and from every test function of a file the patch touched.
Each flake id it cites is valid only when **all** of these hold, else the citation is ``R4``:

1. the id is a flake of the base's flake pin (``pins/flakes.json`` of the base revision);
2. the citing test (its pytest node id) is one the flake lists in ``tests``;
3. the citation matches the flake's signature: one of the citing test's skip/xfail reasons
   contains both the flake id and the flake's signature (each normalized as a run's failure is,
   :func:`patchgate.results.normalize_failure`) — a reason that only names the id says nothing
   about which failure it quarantines;
4. the review clock's UTC date lies in ``[opened_on, expires_on)`` and, when the flake has
   ``review_by``, before it.

An observed failure matches a flake when its normalized failure contains the normalized signature
(:mod:`client.verdict.flakes`); that is a flake observation, not a citation. Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from patchgate.pins import Flake
from patchgate.results import normalize_failure

__all__ = ["Citation", "check_citations", "citation_problems"]


@dataclass(frozen=True, kw_only=True)
class Citation:
    """The flake ids one test cites and the texts that cite them."""

    #: how a problem names the citer: a property id, or the node id of a touched test
    cited_by: str
    #: the citing test's pytest node id (``file.py::test`` or ``file.py::Class::test``)
    test_id: str
    ids: tuple[str, ...]
    texts: tuple[str, ...]


def _carries_signature(texts: Iterable[str], flake: Flake) -> bool:
    want = normalize_failure(flake.signature)
    return bool(want) and any(
        flake.id in text and want in normalize_failure(text) for text in texts
    )


def citation_problems(citation: Citation, flakes: Sequence[Flake], clock: dt.datetime) -> list[str]:
    """One line per cited id that does not hold (empty: every id is a valid citation)."""
    known = {f.id: f for f in flakes}
    today = clock.astimezone(dt.UTC).date()
    who, test = citation.cited_by, citation.test_id
    out: list[str] = []
    for fid in citation.ids:
        flake = known.get(fid)
        if flake is None:
            out.append(f"{who} cites {fid}, which is not in the base flake ledger")
        elif test not in flake.tests:
            out.append(f"{who} cites {fid} from {test}, a test {fid} does not list")
        elif not _carries_signature(citation.texts, flake):
            out.append(
                f"{who} cites {fid} without its signature {flake.signature!r}: the skip/xfail "
                "reason must name the id and the signature"
            )
        elif today < flake.opened_on:
            out.append(f"{who} cites {fid}, which opens on {flake.opened_on.isoformat()}")
        elif today >= flake.expires_on:
            out.append(f"{who} cites {fid}, which expired on {flake.expires_on.isoformat()}")
        elif flake.review_by is not None and today >= flake.review_by:
            out.append(
                f"{who} cites {fid}, which was due for review on {flake.review_by.isoformat()}"
            )
    return out


def check_citations(
    citations: Iterable[Citation], flakes: Sequence[Flake], clock: dt.datetime
) -> tuple[str, ...]:
    """Every R4 problem of ``citations``, in the order given (each citer once)."""
    return tuple(p for c in citations for p in citation_problems(c, flakes, clock))
