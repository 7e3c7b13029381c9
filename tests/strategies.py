"""Hypothesis strategies for patchgate's pure code (manifests, paths, payloads, junk input)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from patchgate.digest import FileEntry, Manifest

__all__ = [
    "argvs",
    "file_entries",
    "json_values",
    "junk_json_bytes",
    "manifests",
    "safe_paths",
    "sha256_hex",
]

_SEGMENT_CHARS = st.characters(
    blacklist_categories=("Cs", "Cc"),
    blacklist_characters="/\\\x00\n",
)
_segments = st.text(_SEGMENT_CHARS, min_size=1, max_size=12).filter(lambda s: s not in (".", ".."))

safe_paths = st.lists(_segments, min_size=1, max_size=4).map("/".join)
sha256_hex = st.binary(min_size=32, max_size=32).map(bytes.hex)
file_entries = st.builds(FileEntry, sha256=sha256_hex, size=st.integers(0, 2**40))
argvs = st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=5).map(tuple)


@st.composite
def manifests(draw: st.DrawFn, min_files: int = 0) -> Manifest:
    """A valid manifest: safe paths, any seed and bound, distinct commands."""
    files = draw(st.dictionaries(safe_paths, file_entries, min_size=min_files, max_size=6))
    commands = draw(st.lists(argvs, max_size=4, unique=True))
    return Manifest(
        pin_id=draw(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,20}", fullmatch=True)),
        files=files,
        seed=draw(st.integers(0, 2**32 - 1)),
        clock_bound_ms=draw(st.integers(1, 24 * 3600 * 1000)),
        allowed_commands=tuple(commands),
    )


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)

junk_json_bytes = json_values.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=200)
