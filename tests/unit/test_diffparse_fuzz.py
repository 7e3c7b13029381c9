"""client.analysis.patch.diffparse fed junk: every failure is a PatchParseError, never bare."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from client.analysis.patch.diffparse import PatchParseError, parse_unified_diff, touched_paths
from patchgate.digest import validate_path

_LINES = st.sampled_from(
    [
        "diff --git a/x.py b/x.py",
        'diff --git "a/q\\303.py" "b/q\\303.py"',
        "diff --git a/x b/y",
        "--- a/x.py",
        "+++ b/x.py",
        "--- /dev/null",
        "+++ /dev/null",
        "@@ -1 +1 @@",
        "@@ -1,2 +1,3 @@ def f():",
        "@@ -0,0 +1 @@",
        "@@ -a +b @@",
        "new file mode 100644",
        "deleted file mode 100644",
        "rename from x.py",
        "rename to y.py",
        "copy to z.py",
        "Binary files a/x and b/x differ",
        "\\ No newline at end of file",
        " context",
        "-removed",
        "+added",
        "",
        "garbage",
    ]
)


def _check(data: bytes) -> None:
    try:
        patches = parse_unified_diff(data)
    except PatchParseError:
        return
    assert patches
    for path in touched_paths(patches):
        validate_path(path)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise_a_bare_exception(data: bytes) -> None:
    _check(data)


@settings(max_examples=500, deadline=None)
@given(st.lists(_LINES | st.text(max_size=20), max_size=30))
def test_diff_shaped_junk_never_raises_a_bare_exception(lines: list[str]) -> None:
    _check("\n".join(lines).encode("utf-8", errors="surrogateescape"))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([" c", "-r", "+a"]), min_size=1, max_size=12),
    st.integers(min_value=1, max_value=50),
)
def test_well_formed_hunks_parse_with_their_counts(body: list[str], start: int) -> None:
    old_len = sum(1 for line in body if line[0] in " -")
    new_len = sum(1 for line in body if line[0] in " +")
    header = f"@@ -{start},{old_len} +{start},{new_len} @@"
    data = "\n".join(["--- a/m.py", "+++ b/m.py", header, *body, ""]).encode()
    (patch,) = parse_unified_diff(data)
    assert patch.hunks[0].lines == tuple(body)
