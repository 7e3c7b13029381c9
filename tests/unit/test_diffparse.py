"""client.analysis.diffparse: git-style and plain unified diffs, and refusals of malformed ones."""

from __future__ import annotations

import pytest

from client.analysis.diffparse import FilePatch, PatchParseError, parse_unified_diff, touched_paths
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
