"""Parsing unified diffs (git-style and plain) into file patches.

The gate never applies a patch with this module, and what a patch touched is read from the trees
``git apply -p1`` produced (:mod:`client.analysis.patch.treediff`), never from here. This parser
says only what the trees cannot: whether the bytes are a well-formed diff at all (anything else
raises :class:`PatchParseError`, a ``PatchgateError``, never a bare exception: an unparsable patch
is a provenance refusal) and which file patch renamed or copied what. It reads names exactly as
``git apply -p1`` does, and a unit test holds that both agree on every patch of the attack corpus
(``tests/attacks/``).

Rules (documented in ``docs/gate-analysis.md``):

* Lines before the first file header and between file patches are ignored, as ``git apply`` does
  (mail preambles, ``-- `` signatures), but a data set with no file patch at all is junk.
* Paths lose one leading component (``a/``, ``b/``), like ``git apply -p1``; a name with no
  component to lose is refused, as git refuses it; every path must then be a safe relative POSIX
  path (``patchgate.digest.validate_path``).
* A ``---``/``+++`` name ends at a tab, or before a trailing timestamp (``2026-01-01 10:00:00``,
  fraction and zone optional) after a tab or spaces, as git reads it. In a plain patch, the
  ``---`` name wins when it is a proper prefix of the ``+++`` name (``x.py`` / ``x.py.orig``), the
  ``+++`` name otherwise; an epoch timestamp (GNU diff's mark) on one side makes the file added
  or deleted.
* After ``GIT binary patch`` come one or two ``literal``/``delta`` blocks, each ending at an empty
  line; parsing goes on right after them (a plain file patch may follow without a header).
* A hunk's line counts must match its header exactly; hunks of one file must not overlap.
* A copy (``copy from``/``copy to``) is reported as an added file: the source is untouched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from patchgate.digest import validate_path
from patchgate.errors import PatchgateError, UnsafePathError

__all__ = [
    "GITLINK_MODE",
    "STATUSES",
    "FilePatch",
    "Hunk",
    "PatchParseError",
    "gitlinks",
    "parse_unified_diff",
    "touched_paths",
]

GITLINK_MODE = "160000"

STATUSES = ("added", "deleted", "modified", "renamed")

# git's diff_timestamp_len: a date (YYYY-MM-DD or YY-MM-DD), an optional " HH:MM:SS[.frac]" and an
# optional " +HHMM"/" +HH:MM" at the very end, after exactly one tab or after spaces (all taken).
_TIMESTAMP = re.compile(
    r"(?:\t| +)(?:\d\d)?\d\d-\d\d-\d\d(?: \d\d:\d\d:\d\d(?:\.\d+)?)?(?: [+-]\d\d:?\d\d)?$"
)
# git's has_epoch_timestamp: after the last tab, the epoch in any zone (GNU diff: created, deleted)
_EPOCH = re.compile(
    r"(1969-12-31|1970-01-01) ([0-2]\d):([0-5]\d):00(?:\.0+)? ([-+])([0-2]\d):?([0-5]\d)"
)
_NAME_END = re.compile(r"[\t\n\v\f\r]")  # C isspace() but the space: where git ends a name
_BINARY_BLOCK = re.compile(r"^(?:literal|delta) \d+$")
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?:[ \r].*)?$")
_DEV_NULL = "/dev/null"
_GIT_META_PREFIXES = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "similarity index ",
    "dissimilarity index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
    "index ",
)
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class PatchParseError(PatchgateError):
    """The bytes are not a well-formed unified diff."""


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` hunk: header numbers and body lines (each keeps its ``' '``/-/+/\\ prefix)."""

    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class FilePatch:
    """The change to one file: ``old_path`` is None if added, ``new_path`` is None if deleted."""

    old_path: str | None
    new_path: str | None
    status: str
    hunks: tuple[Hunk, ...]
    is_binary: bool
    #: the modes its git header names (``old mode``, ``new mode``, ``new file mode``,
    #: ``deleted file mode``, the mode after ``index a..b``)
    modes: frozenset[str] = frozenset()


def touched_paths(patches: Iterable[FilePatch]) -> set[str]:
    """Every path a patch touches: old and new names of each file patch."""
    paths: set[str] = set()
    for patch in patches:
        paths.update(p for p in (patch.old_path, patch.new_path) if p is not None)
    return paths


def _modes(meta: dict[str, str]) -> set[str]:
    found = {
        meta[k].strip()
        for k in ("old mode", "new mode", "new file mode", "deleted file mode")
        if k in meta
    }
    index = meta.get("index", "").split()
    if len(index) >= 2:
        found.add(index[1])
    return found


def gitlinks(data: bytes) -> tuple[str, ...]:
    """Paths of the file patches whose git header names a gitlink mode (``160000``); () when the
    bytes do not parse (the gate refuses those as unparsable anyway). ``git apply`` without an
    index does not record a gitlink in the tree it writes, so the header is where it shows."""
    try:
        patches = parse_unified_diff(data)
    except PatchParseError:
        return ()
    return tuple(
        sorted(
            {
                p
                for fp in patches
                if GITLINK_MODE in fp.modes
                for p in (fp.old_path, fp.new_path)
                if p is not None
            }
        )
    )


def parse_unified_diff(data: bytes) -> tuple[FilePatch, ...]:
    """Parse ``data`` into file patches, or raise :class:`PatchParseError`."""
    if not isinstance(data, bytes | bytearray):
        raise PatchParseError("a patch must be bytes")
    text = bytes(data).decode("utf-8", errors="surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    parser = _Parser(lines)
    patches = parser.parse()
    if not patches:
        raise PatchParseError("no file patch found: not a unified diff")
    return patches


class _Parser:
    """A cursor over the lines of a diff."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self._pos = 0

    def _peek(self) -> str | None:
        return self._lines[self._pos] if self._pos < len(self._lines) else None

    def _at(self, offset: int) -> str | None:
        index = self._pos + offset
        return self._lines[index] if index < len(self._lines) else None

    def parse(self) -> tuple[FilePatch, ...]:
        patches: list[FilePatch] = []
        while (line := self._peek()) is not None:
            if line.startswith("diff --git "):
                patches.append(self._git_patch())
            elif (
                line.startswith("--- ")
                and (nxt := self._at(1)) is not None
                and nxt.startswith("+++ ")
            ):
                patches.append(self._plain_patch())
            else:
                self._pos += 1  # preamble or trailer garbage, as git apply skips it
        return tuple(patches)

    # -- git-style ---------------------------------------------------------------------------

    def _git_patch(self) -> FilePatch:
        header = self._lines[self._pos]
        self._pos += 1
        meta: dict[str, str] = {}
        is_binary = False
        old_name: str | None = None
        new_name: str | None = None
        while (line := self._peek()) is not None:
            prefix = next((p for p in _GIT_META_PREFIXES if line.startswith(p)), None)
            if prefix is not None:
                meta[prefix.strip()] = line[len(prefix) :]
                self._pos += 1
            elif line.startswith("Binary files "):
                is_binary = True
                self._pos += 1
                break
            elif line == "GIT binary patch":
                is_binary = True
                self._pos += 1
                self._binary_blocks(header)
                break
            elif line.startswith("--- "):
                nxt = self._at(1)
                if nxt is None or not nxt.startswith("+++ "):
                    raise PatchParseError(f"'---' line without '+++' after {header!r}")
                old_name, new_name = _git_name(line[4:]), _git_name(nxt[4:])
                self._pos += 2
                break
            else:
                break
        hunks = self._hunks()
        old_path, new_path, status = _git_paths(header, meta, old_name, new_name)
        if not hunks and not is_binary and not _has_structural_meta(meta):
            raise PatchParseError(f"file patch with no hunks and no metadata: {header!r}")
        modes = frozenset(_modes(meta))
        return _checked(FilePatch(old_path, new_path, status, hunks, is_binary, modes))

    def _binary_blocks(self, header: str) -> None:
        """The forward and optional reverse ``literal``/``delta`` blocks of a binary patch."""
        for index in range(2):
            line = self._peek()
            if line is None or not _BINARY_BLOCK.match(line):
                if index == 0:
                    raise PatchParseError(f"GIT binary patch without a literal/delta in {header!r}")
                return
            self._pos += 1
            while (line := self._peek()) is not None and line.rstrip("\r") != "":
                self._pos += 1
            if line is None:
                raise PatchParseError(f"binary patch data without an end in {header!r}")
            self._pos += 1  # the empty line that ends the block

    # -- plain unified -----------------------------------------------------------------------

    def _plain_patch(self) -> FilePatch:
        old_field, new_field = self._lines[self._pos][4:], self._lines[self._pos + 1][4:]
        old_name, new_name = _header_name(old_field), _header_name(new_field)
        self._pos += 2
        hunks = self._hunks()
        if not hunks:
            raise PatchParseError(f"no hunks for {new_name!r}")
        if old_name == _DEV_NULL and new_name == _DEV_NULL:
            raise PatchParseError("both sides of a file patch are /dev/null")
        if old_name == _DEV_NULL or (new_name != _DEV_NULL and _is_epoch(old_field)):
            return _checked(FilePatch(None, _strip(new_name), "added", hunks, False))
        if new_name == _DEV_NULL or _is_epoch(new_field):
            return _checked(FilePatch(_strip(old_name), None, "deleted", hunks, False))
        # git prefers the shorter name when the other is it with something tacked on (x.orig)
        old_path, new_path = _strip(old_name), _strip(new_name)
        shorter = len(old_path) < len(new_path) and new_path.startswith(old_path)
        path = old_path if shorter else new_path
        return _checked(FilePatch(path, path, "modified", hunks, False))

    # -- hunks -------------------------------------------------------------------------------

    def _hunks(self) -> tuple[Hunk, ...]:
        hunks: list[Hunk] = []
        while (line := self._peek()) is not None and line.startswith("@@"):
            hunks.append(self._hunk(line))
        return tuple(hunks)

    def _hunk(self, header: str) -> Hunk:
        match = _HUNK_HEADER.match(header)
        if match is None:
            raise PatchParseError(f"malformed hunk header {header!r}")
        old_start, new_start = int(match[1]), int(match[3])
        old_len = 1 if match[2] is None else int(match[2])
        new_len = 1 if match[4] is None else int(match[4])
        self._pos += 1
        body: list[str] = []
        old_seen = new_seen = 0
        while old_seen < old_len or new_seen < new_len:
            line = self._peek()
            if line is None:
                raise PatchParseError(f"hunk {header!r} ends before its counted lines")
            kind = line[:1]
            if kind in (" ", ""):
                old_seen, new_seen = old_seen + 1, new_seen + 1
            elif kind == "-":
                old_seen += 1
            elif kind == "+":
                new_seen += 1
            elif kind != "\\":
                raise PatchParseError(f"unexpected line {line[:40]!r} in hunk {header!r}")
            if old_seen > old_len or new_seen > new_len:
                raise PatchParseError(f"hunk {header!r} has more lines than its header counts")
            body.append(line if line else " ")
            self._pos += 1
        while (line := self._peek()) is not None and line.startswith("\\"):
            body.append(line)  # "\ No newline at end of file" after the last counted line
            self._pos += 1
        return Hunk(old_start, old_len, new_start, new_len, tuple(body))


def _has_structural_meta(meta: dict[str, str]) -> bool:
    keys = (
        "old mode",
        "new mode",
        "deleted file mode",
        "new file mode",
        "rename from",
        "copy from",
    )
    return any(key in meta for key in keys)


def _git_paths(
    header: str, meta: dict[str, str], old_name: str | None, new_name: str | None
) -> tuple[str | None, str | None, str]:
    """Old path, new path and status of a git file patch from its header, metadata and ---/+++.

    As git, the ``---``/``+++`` names must agree with the rename or copy lines; otherwise they
    win over the names of the ``diff --git`` line.
    """
    if "rename from" in meta or "rename to" in meta:
        if "rename from" not in meta or "rename to" not in meta:
            raise PatchParseError(f"incomplete rename metadata in {header!r}")
        source, target = _unquote(meta["rename from"]), _unquote(meta["rename to"])
        _agree(header, old_name, source, new_name, target)
        return source, target, "renamed"
    if "copy from" in meta or "copy to" in meta:
        if "copy from" not in meta or "copy to" not in meta:
            raise PatchParseError(f"incomplete copy metadata in {header!r}")
        _agree(header, old_name, _unquote(meta["copy from"]), new_name, _unquote(meta["copy to"]))
        return None, _unquote(meta["copy to"]), "added"
    # Otherwise the ---/+++ names win over the header, as in git (the header is the default).
    a_path, b_path = _git_header_paths(header)
    old = a_path if old_name is None else (None if old_name == _DEV_NULL else _strip(old_name))
    new = b_path if new_name is None else (None if new_name == _DEV_NULL else _strip(new_name))
    if "new file mode" in meta or (old is None and new is not None):
        return None, new if new is not None else b_path, "added"
    if "deleted file mode" in meta or (new is None and old is not None):
        return old if old is not None else a_path, None, "deleted"
    if old is None or new is None:
        raise PatchParseError(f"file patch names no file: {header!r}")
    if old != new:
        raise PatchParseError(f"paths differ without rename metadata: {header!r}")
    return old, new, "modified"


def _agree(header: str, old_name: str | None, old: str, new_name: str | None, new: str) -> None:
    """``---``/``+++`` names (when present and not /dev/null) equal the rename/copy names, as git
    checks ("inconsistent old/new filename")."""
    for name, path in ((old_name, old), (new_name, new)):
        if name is not None and name != _DEV_NULL and _strip(name) != path:
            raise PatchParseError(f"---/+++ name {name!r} does not match {header!r}")


def _git_header_paths(header: str) -> tuple[str, str]:
    """The ``a/`` and ``b/`` paths of ``diff --git a/X b/Y``; quoted or not, equal halves first."""
    rest = header[len("diff --git ") :]
    if rest.startswith('"'):
        first, rest = _split_quoted(rest)
        second = _unquote(rest.strip())
        return _strip(first), _strip(second)
    if rest.endswith('"'):
        start = rest.find(' "')
        if start < 0:
            raise PatchParseError(f"malformed diff header {header!r}")
        return _strip(rest[:start]), _strip(_unquote(rest[start + 1 :]))
    # Unquoted: the two names are the same length when the file is not renamed.
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[2:half] == rest[half + 3 :]:
        return _strip(rest[:half]), _strip(rest[half + 1 :])
    parts = rest.split(" ")
    if len(parts) != 2:
        raise PatchParseError(f"ambiguous diff header {header!r}")
    return _strip(parts[0]), _strip(parts[1])


def _split_quoted(text: str) -> tuple[str, str]:
    """Split a leading C-quoted string from ``text``: (unquoted, rest)."""
    index = 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == '"':
            return _unquote(text[: index + 1]), text[index + 1 :]
        index += 1
    raise PatchParseError(f"unterminated quoted path in {text!r}")


def _unquote(name: str) -> str:
    """Undo git's C-style quoting of a path (octal escapes are UTF-8 bytes)."""
    if not (len(name) >= 2 and name.startswith('"') and name.endswith('"')):
        return name
    out = bytearray()
    body = name[1:-1]
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out += char.encode("utf-8", errors="surrogateescape")
            index += 1
            continue
        esc = body[index + 1 : index + 2]
        if esc in _C_ESCAPES:
            out.append(_C_ESCAPES[esc])
            index += 2
        elif len(octal := body[index + 1 : index + 4]) == 3 and all(c in "01234567" for c in octal):
            out.append(int(octal, 8) & 0xFF)
            index += 4
        else:
            raise PatchParseError(f"bad escape in quoted path {name!r}")
    return out.decode("utf-8", errors="surrogateescape")


def _header_name(field: str) -> str:
    """The file name of a ``---``/``+++`` line, as git reads it: ``/dev/null`` when the field starts
    with it and whitespace follows; C-unquoted; else without a trailing timestamp; else up to the
    first whitespace that is not a space (a tab, a CR)."""
    if field.startswith(_DEV_NULL) and (len(field) == len(_DEV_NULL) or field[9].isspace()):
        return _DEV_NULL
    if field.startswith('"'):
        name, _ = _split_quoted(field)
        return name
    stamp = _TIMESTAMP.search(field)
    if stamp is not None:
        return field[: stamp.start()]
    end = _NAME_END.search(field)
    return field if end is None else field[: end.start()]


def _git_name(field: str) -> str:
    """A ``---``/``+++`` name of a git-style file patch: as :func:`_header_name` but without
    timestamps (git reads these names up to the first tab, CR or other non-space whitespace)."""
    if field.startswith(_DEV_NULL) and (len(field) == len(_DEV_NULL) or field[9].isspace()):
        return _DEV_NULL
    if field.startswith('"'):
        name, _ = _split_quoted(field)
        return name
    end = _NAME_END.search(field)
    return field if end is None else field[: end.start()]


def _is_epoch(field: str) -> bool:
    """Whether a ``---``/``+++`` field ends, after its last tab, in the epoch (GNU diff's mark of a
    created or deleted file), in any zone."""
    if "\t" not in field:
        return False
    stamp = _EPOCH.fullmatch(field.rsplit("\t", 1)[1])
    if stamp is None:
        return False
    day, hour, minute, sign, tz_h, tz_m = stamp.groups()
    offset = (1 if sign == "+" else -1) * (int(tz_h) * 60 + int(tz_m))
    epoch_minutes = (24 * 60 if day == "1969-12-31" else 0) + offset
    return int(hour) * 60 + int(minute) == epoch_minutes


def _strip(name: str) -> str:
    """Drop one leading path component (``-p1``); keep /dev/null. A name with no component to
    drop (a bare ``NOTES``) is refused, as ``git apply -p1`` refuses it."""
    if name == _DEV_NULL:
        return name
    head, sep, rest = name.partition("/")
    if not sep or not head or not rest:
        raise PatchParseError(f"name {name!r} has no leading directory to strip (-p1)")
    return rest


def _checked(patch: FilePatch) -> FilePatch:
    """Validate the paths and the status/hunk consistency of one file patch."""
    for path in (patch.old_path, patch.new_path):
        if path is None:
            continue
        try:
            validate_path(path)
        except UnsafePathError as exc:
            raise PatchParseError(f"unsafe path in patch: {exc}") from exc
    if patch.status == "added" and any(h.old_len or h.old_start for h in patch.hunks):
        raise PatchParseError(f"added file {patch.new_path!r} has hunks against old lines")
    if patch.status == "deleted" and any(h.new_len or h.new_start for h in patch.hunks):
        raise PatchParseError(f"deleted file {patch.old_path!r} has hunks producing new lines")
    end = 0
    for hunk in patch.hunks:
        if hunk.old_start < end:
            raise PatchParseError(f"overlapping or unordered hunks in {patch.new_path!r}")
        end = hunk.old_start + hunk.old_len
    return patch
