"""A pytest plugin that writes the tests marked ``@pytest.mark.patchgate`` to a JSON file.

``patchgate pin properties --from-pytest`` runs ``python -m pytest --collect-only -p
patchgate.pytest_collect`` in the target repository with ``PATCHGATE_COLLECT_OUT`` naming the file
to write. Nothing runs: after collection the plugin writes one record per marked item::

    {"nodeid": "tests/test_core.py::test_slugify", "parametrized": false, "args": 0,
     "function": "tests/test_core.py::test_slugify",
     "kwargs": {"claim": "...", "kind": "pure_fn", "covers": ["textkit.slugify"]}}

``function`` is the node id of the test function without a parametrization
(``tests/test_a.py::test_f`` for ``tests/test_a.py::test_f[1-2]``): the reader makes the cases of
one function one property. ``cases`` (beside ``items``) counts every collected case of each
parametrized function, marked or not, so that a function only some of whose cases are marked is
named.

``kwargs`` keeps only JSON values (tuples become lists); any other value is written as
``{"unsupported": "<type name>"}`` so that the reader can name it. The marker closest to the
test wins (a function's marker over its class's or module's). Without ``PATCHGATE_COLLECT_OUT``
the plugin only registers the marker. The reader, and every judgement of the records, is
``client.operator.collect``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from patchgate.pytest_plugin import MARKER, MARKER_LINE

if TYPE_CHECKING:
    import pytest

__all__ = ["OUT_ENV", "pytest_collection_finish", "pytest_configure"]

OUT_ENV = "PATCHGATE_COLLECT_OUT"


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker too: plugin autoloading may be disabled."""
    config.addinivalue_line("markers", MARKER_LINE)


def _plain(value: object) -> object:
    """``value`` as JSON: str, int, float, bool, None, lists and string-keyed dicts of those."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v) for k, v in value.items()}
    return {"unsupported": type(value).__name__}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Write the marked items to the file named by ``PATCHGATE_COLLECT_OUT``."""
    out = os.environ.get(OUT_ENV)
    if not out:
        return
    records = []
    cases: dict[str, int] = {}  # function node id -> how many cases were collected, marked or not
    for item in session.items:
        parametrized = hasattr(item, "callspec")
        parent = getattr(item, "parent", None)
        original = getattr(item, "originalname", "")
        function = item.nodeid
        if parametrized and parent is not None and original:
            function = f"{parent.nodeid}::{original}"
            cases[function] = cases.get(function, 0) + 1
        mark = item.get_closest_marker(MARKER)
        if mark is None:
            continue
        records.append(
            {
                "nodeid": item.nodeid,
                "function": function,
                "parametrized": parametrized,
                "args": len(mark.args),
                "kwargs": {str(k): _plain(v) for k, v in mark.kwargs.items()},
            }
        )
    Path(out).write_text(json.dumps({"items": records, "cases": cases}), encoding="utf-8")
