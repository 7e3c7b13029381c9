"""client.analysis.patch.diffparse: git-style and plain unified diffs; malformed ones refused."""

from __future__ import annotations

import pytest

from client.analysis.patch.diffparse import (
    FilePatch,
    PatchParseError,
    parse_unified_diff,
    touched_paths,
)
from patchgate.errors import PatchgateError

GIT_DIFF = b"""\
diff --git a/added.py b/added.py
new file mode 100644
index 0000000..47643d4
--- /dev/null
+++ b/added.py
@@ -0,0 +1 @@
+y = 2
diff --git a/del.txt b/del.txt
deleted file mode 100644
index 286c5f5..0000000
--- a/del.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/img.bin b/img.bin
index bdc955b..8835708 100644
Binary files a/img.bin and b/img.bin differ
diff --git a/old.py b/new.py
similarity index 100%
rename from old.py
rename to new.py
diff --git a/pkg/mod.py b/pkg/mod.py
index 025ec86..b46ac30 100644
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,5 +1,5 @@
 def a():
-    return 1
+    return 10
\x20
\x20
 def b():
"""


def by_path(patches: tuple[FilePatch, ...]) -> dict[str, FilePatch]:
    return {(p.new_path or p.old_path or ""): p for p in patches}


def test_git_diff_statuses() -> None:
    patches = by_path(parse_unified_diff(GIT_DIFF))
    assert {k: v.status for k, v in patches.items()} == {
        "added.py": "added",
        "del.txt": "deleted",
        "img.bin": "modified",
        "new.py": "renamed",
        "pkg/mod.py": "modified",
    }


def test_added_and_deleted_have_one_missing_side() -> None:
    patches = by_path(parse_unified_diff(GIT_DIFF))
    assert (patches["added.py"].old_path, patches["added.py"].new_path) == (None, "added.py")
    assert (patches["del.txt"].old_path, patches["del.txt"].new_path) == ("del.txt", None)


def test_rename_keeps_both_names() -> None:
    renamed = by_path(parse_unified_diff(GIT_DIFF))["new.py"]
    assert (renamed.old_path, renamed.new_path, renamed.hunks) == ("old.py", "new.py", ())


def test_binary_patch_is_flagged_without_hunks() -> None:
    binary = by_path(parse_unified_diff(GIT_DIFF))["img.bin"]
    assert binary.is_binary
    assert binary.hunks == ()


def test_hunk_numbers_and_lines() -> None:
    hunk = by_path(parse_unified_diff(GIT_DIFF))["pkg/mod.py"].hunks[0]
    assert (hunk.old_start, hunk.old_len, hunk.new_start, hunk.new_len) == (1, 5, 1, 5)
    assert hunk.lines[1:3] == ("-    return 1", "+    return 10")


def test_touched_paths_has_old_and_new_names() -> None:
    assert touched_paths(parse_unified_diff(GIT_DIFF)) == {
        "added.py",
        "del.txt",
        "img.bin",
        "old.py",
        "new.py",
        "pkg/mod.py",
    }


def test_plain_unified_diff_with_timestamps() -> None:
    data = (
        b"--- a/billing/__init__.py\t2026-01-01 00:00:00\n"
        b"+++ b/billing/__init__.py\t2026-01-02 00:00:00\n"
        b"@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
    )
    (patch,) = parse_unified_diff(data)
    assert (patch.old_path, patch.new_path, patch.status) == (
        "billing/__init__.py",
        "billing/__init__.py",
        "modified",
    )


def test_plain_diff_dev_null_is_added() -> None:
    data = b"--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"
    (patch,) = parse_unified_diff(data)
    assert (patch.old_path, patch.new_path, patch.status) == (None, "n.py", "added")


def test_preamble_and_trailer_are_skipped() -> None:
    data = b"From abc Mon Sep 17\nSubject: x\n\n---\n" + GIT_DIFF + b"-- \n2.43.0\n"
    assert len(parse_unified_diff(data)) == 5


def test_no_newline_marker_is_kept() -> None:
    data = b"--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n"
    (patch,) = parse_unified_diff(data)
    assert patch.hunks[0].lines == ("-a", "\\ No newline at end of file", "+b")


def test_quoted_git_paths_are_unquoted() -> None:
    data = (
        b'diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\n'
        b'--- "a/caf\\303\\251.py"\n+++ "b/caf\\303\\251.py"\n@@ -1 +1 @@\n-a\n+b\n'
    )
    (patch,) = parse_unified_diff(data)
    assert patch.new_path == "caf\u00e9.py"


def test_mode_change_only_is_a_modification() -> None:
    data = b"diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    (patch,) = parse_unified_diff(data)
    assert (patch.new_path, patch.status, patch.hunks) == ("run.sh", "modified", ())


def test_empty_new_file_without_hunks() -> None:
    data = b"diff --git a/e.py b/e.py\nnew file mode 100644\nindex 0000000..e69de29\n"
    (patch,) = parse_unified_diff(data)
    assert (patch.old_path, patch.new_path, patch.status) == (None, "e.py", "added")


def test_copy_is_an_added_file() -> None:
    data = b"diff --git a/a.py b/b.py\nsimilarity index 100%\ncopy from a.py\ncopy to b.py\n"
    (patch,) = parse_unified_diff(data)
    assert (patch.old_path, patch.new_path, patch.status) == (None, "b.py", "added")


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "empty"),
        (b"hello world\n", "prose"),
        (b"--- a/f.py\n+++ b/f.py\n", "no hunks"),
        (b"--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n-a\n+b\n", "short hunk"),
        (b"--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n-b\n+c\n", "long hunk"),
        (b"--- a/f.py\n+++ b/f.py\n@@ -x +1 @@\n-a\n+b\n", "bad header"),
        (b"--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n?a\n+b\n", "bad line prefix"),
        (b"--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "dotdot"),
        (b"--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", "both null"),
        (b"diff --git a/x b/x\nindex 1..2\n", "git header only"),
        (b"diff --git a/x b/y\n--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", "rename w/o meta"),
        (b"diff --git a/x b/x\n--- a/x\n@@ -1 +1 @@\n-a\n+b\n", "--- without +++"),
        (
            b"--- a/f.py\n+++ b/f.py\n@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-c\n+d\n",
            "unordered hunks",
        ),
        (b"--- /dev/null\n+++ b/n.py\n@@ -1 +1 @@\n-a\n+b\n", "added with old lines"),
    ],
)
def test_malformed_patches_raise_patch_parse_error(data: bytes, why: str) -> None:
    with pytest.raises(PatchParseError):
        parse_unified_diff(data)


def test_patch_parse_error_is_a_patchgate_error() -> None:
    assert issubclass(PatchParseError, PatchgateError)


# -- issue 13: names read exactly as git apply -p1 reads them ------------------------------------

HUNK = b"@@ -1 +1 @@\n-a\n+b\n"


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        (b"a/x.py", b"b/x.py.orig", "x.py"),  # git takes the shorter when the other extends it
        (b"a/x.py.orig", b"b/x.py", "x.py"),
        (b"a/x.py", b"b/y.py", "y.py"),  # otherwise the +++ name
        (b"a/x.py 2026-11-30 10:00:00.000000000 +0000", b"b/x.py 2026-11-30 10:05:00", "x.py"),
        (b"a/x.py\t2026-11-30 10:00:00", b"b/x.py  2026-11-30 10:05:00.5 -0130", "x.py"),
        (b"a/my file.py", b"b/my file.py", "my file.py"),  # spaces in a name stay
        (b"a/x.py\tanything", b"b/x.py\tanything", "x.py"),
    ],
)
def test_plain_patch_names_as_git_reads_them(old: bytes, new: bytes, path: str) -> None:
    (patch,) = parse_unified_diff(b"--- " + old + b"\n+++ " + new + b"\n" + HUNK)
    assert (patch.old_path, patch.new_path, patch.status) == (path, path, "modified")


def test_epoch_timestamp_marks_a_created_or_deleted_file() -> None:
    created = b"--- a/n.py\t1970-01-01 00:00:00 +0000\n+++ b/n.py\t2026-01-01 00:00:00\n"
    (patch,) = parse_unified_diff(created + b"@@ -0,0 +1 @@\n+a\n")
    assert (patch.old_path, patch.new_path, patch.status) == (None, "n.py", "added")
    deleted = b"--- a/n.py\t2026-01-01 00:00:00\n+++ b/n.py\t1969-12-31 16:00:00 -0800\n"
    (patch,) = parse_unified_diff(deleted + b"@@ -1 +0,0 @@\n-a\n")
    assert (patch.old_path, patch.new_path, patch.status) == ("n.py", None, "deleted")
    emptied = deleted.replace(b"\t", b" ")  # git reads the epoch only after a tab: an empty file
    (patch,) = parse_unified_diff(emptied + b"@@ -1 +0,0 @@\n-a\n")
    assert (patch.old_path, patch.new_path, patch.status) == ("n.py", "n.py", "modified")


@pytest.mark.parametrize(
    ("field", "name"),
    [
        (b"b/x.py   2026-11-30 10:00:00.5 +01:00", "x.py"),  # all spaces taken
        (b"b/x.py\r", "x.py"),  # a CR ends a name
        (b"b/x.py 2026-11-30 10:00:00\r", "x.py 2026-11-30 10:00:00"),  # no stamp before a CR
        (b"b/x.py\t26-11-30", "x.py"),  # a two-digit year, no time
    ],
)
def test_new_file_names_as_git_reads_them(field: bytes, name: str) -> None:
    (patch,) = parse_unified_diff(
        b"--- /dev/null\t1970-01-01\n+++ " + field + b"\n@@ -0,0 +1 @@\n+a\n"
    )
    assert (patch.new_path, patch.status) == (name, "added")


def test_a_name_git_would_read_with_a_tab_is_refused() -> None:
    """git takes one tab before a timestamp, leaving ``odd name.py<TAB>``: a control character in
    a path, which the one path validator refuses (the patch is unparsable)."""
    with pytest.raises(PatchParseError, match="control"):
        parse_unified_diff(
            b"--- /dev/null\t1970-01-01\n+++ b/odd name.py\t\t2026-11-30 10:00:00 +0000\n"
            b"@@ -0,0 +1 @@\n+a\n"
        )


def test_a_bare_name_has_nothing_to_strip_and_is_refused() -> None:
    """git apply -p1 refuses it too; an unguided git apply would have guessed -p0 from it."""
    with pytest.raises(PatchParseError, match="-p1"):
        parse_unified_diff(b"--- /dev/null\n+++ NOTES\n@@ -0,0 +1 @@\n+a\n")


def test_a_plain_file_patch_after_a_binary_patch_is_read() -> None:
    """Issue 13: the parser used to skip to the next ``diff --git`` and never saw it."""
    data = (
        b"diff --git a/logo.bin b/logo.bin\nnew file mode 100644\nindex 0000000..1111111\n"
        b"GIT binary patch\nliteral 3\nKcmZQzWMTjS00RI3\n\nliteral 0\nHcmV?d00001\n\n"
        b"--- a/properties/test_x.py\n+++ b/properties/test_x.py\n" + HUNK
    )
    assert touched_paths(parse_unified_diff(data)) == {"logo.bin", "properties/test_x.py"}


@pytest.mark.parametrize(
    "tail",
    [b"literal 3\nKcmZQzWMTjS00RI3\n", b"nonsense\n", b""],
)
def test_a_binary_patch_without_a_complete_block_is_refused(tail: bytes) -> None:
    data = b"diff --git a/l.bin b/l.bin\nindex 0000000..1111111\nGIT binary patch\n" + tail
    with pytest.raises(PatchParseError):
        parse_unified_diff(data)


def test_git_style_names_end_at_a_tab_and_never_lose_a_timestamp() -> None:
    """In a git-style patch git reads ---/+++ names up to the first tab (no timestamp rule)."""
    data = (
        b"diff --git a/odd name.py b/odd name.py\nnew file mode 100644\n"
        b"--- /dev/null\n+++ b/odd name.py\t\t2026-11-30 10:00:00 +0000\n@@ -0,0 +1 @@\n+a\n"
    )
    (patch,) = parse_unified_diff(data)
    assert (patch.new_path, patch.status) == ("odd name.py", "added")


def test_git_style_names_win_over_the_header_as_in_git() -> None:
    """git applies ``--- a/y.py``/``+++ b/y.py`` under ``diff --git a/x.py b/x.py`` to y.py."""
    (patch,) = parse_unified_diff(b"diff --git a/x.py b/x.py\n--- a/y.py\n+++ b/y.py\n" + HUNK)
    assert (patch.old_path, patch.new_path) == ("y.py", "y.py")


def test_git_style_names_must_agree_with_a_rename() -> None:
    """git refuses 'inconsistent new filename' when ---/+++ contradict the rename lines."""
    data = (
        b"diff --git a/x.py b/z.py\nsimilarity index 90%\nrename from x.py\nrename to z.py\n"
        b"--- a/x.py\n+++ b/y.py\n" + HUNK
    )
    with pytest.raises(PatchParseError, match="does not match"):
        parse_unified_diff(data)
