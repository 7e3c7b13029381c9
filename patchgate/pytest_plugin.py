"""The ``patchgate`` pytest marker: a test that is a pinned property, and what it claims.

Loaded wherever patchgate is installed (the ``pytest11`` entry point ``patchgate``), it only
registers the marker, so a suite run with ``--strict-markers`` accepts::

    @pytest.mark.patchgate(claim="slugify is idempotent", kind="pure_fn",
                           covers=["textkit.slugify"], id="textkit.slugify.idempotent")
    def test_slugify_idempotent(): ...

``patchgate pin properties --from-pytest`` turns the marked tests into ``pins/properties.json``
(see :mod:`patchgate.pytest_collect`). The marker changes nothing about how a test runs. The
executor's sandbox, where patchgate is not installed, registers the same marker through its own
reporter plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

__all__ = ["MARKER", "MARKER_LINE", "pytest_configure"]

MARKER = "patchgate"
MARKER_LINE = (
    "patchgate(claim, kind, covers, id): a property pinned by "
    "'patchgate pin properties --from-pytest' (kind: pure_fn, idempotent_io, bounded_time or "
    "external_probe; covers: qualified symbol names; id: optional property id)"
)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``patchgate`` marker."""
    config.addinivalue_line("markers", MARKER_LINE)
