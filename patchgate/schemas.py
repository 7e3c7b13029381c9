"""The JSON Schemas (draft 2020-12) of the pin files and of receipt v2, shipped with the package.

The files live in ``patchgate/schema/`` (package data, so an installed patchgate has them); the
reference pages under ``docs/reference/`` link them there. ``patchgate pin check`` enforces the pin
schemas; the parser in :mod:`patchgate.pins` checks the rules a schema cannot express.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["SCHEMA_KINDS", "load_schema"]

SCHEMA_KINDS = ("fixtures", "properties", "flakes", "receipt")


def load_schema(kind: str) -> dict[str, Any]:
    """The schema of ``kind`` (one of :data:`SCHEMA_KINDS`) as a JSON object."""
    if kind not in SCHEMA_KINDS:
        raise ValueError(f"unknown schema {kind!r}; one of {SCHEMA_KINDS}")
    text = resources.files("patchgate").joinpath("schema", f"{kind}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
