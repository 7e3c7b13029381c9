"""client.gate.workspace: base and patched trees from git, never touching the user's checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from client.gate.workspace import PatchApplyError, materialize, resolve_rev
from patchgate.errors import UsageError

PATCH = b"""\
diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,2 +1,2 @@
 def f():
-    return 1
+    return 2
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    (r / "pkg").mkdir(parents=True)
    (r / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    _git(r, "init", "-q")
    _git(r, "add", ".")
    _git(r, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    return r


def test_patched_tree_has_the_patch_and_base_tree_does_not(repo: Path) -> None:
    with materialize(repo, "HEAD", PATCH) as ws:
        base, patched = ws.read_pair(["pkg/mod.py"])
    assert base["pkg/mod.py"] == b"def f():\n    return 1\n"
    assert patched["pkg/mod.py"] == b"def f():\n    return 2\n"


def test_users_checkout_is_untouched(repo: Path) -> None:
    with materialize(repo, "HEAD", PATCH):
        pass
    assert (repo / "pkg" / "mod.py").read_text() == "def f():\n    return 1\n"


def test_base_is_the_committed_tree_not_the_dirty_checkout(repo: Path) -> None:
    (repo / "pkg" / "mod.py").write_text("def f():\n    return 99\n")
    with materialize(repo, "HEAD", PATCH) as ws:
        assert ws.read_pair(["pkg/mod.py"])[1]["pkg/mod.py"] == b"def f():\n    return 2\n"


def test_patch_that_does_not_apply_is_refused(repo: Path) -> None:
    with (
        pytest.raises(PatchApplyError),
        materialize(repo, "HEAD", PATCH.replace(b"return 1", b"return 7")),
    ):
        pass


def test_temp_dir_is_removed(repo: Path) -> None:
    with materialize(repo, "HEAD", PATCH) as ws:
        root = ws.base_dir.parent
    assert not root.exists()


def test_unknown_base_rev_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(UsageError):
        resolve_rev(repo, "no-such-branch")


def test_option_like_rev_is_refused(repo: Path) -> None:
    with pytest.raises(UsageError):
        resolve_rev(repo, "--output=/tmp/x")


def test_added_and_deleted_files_read_as_absent_on_the_other_side(repo: Path) -> None:
    patch = b"""\
diff --git a/pkg/new.py b/pkg/new.py
new file mode 100644
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1 @@
+X = 1
diff --git a/pkg/mod.py b/pkg/mod.py
deleted file mode 100644
--- a/pkg/mod.py
+++ /dev/null
@@ -1,2 +0,0 @@
-def f():
-    return 1
"""
    with materialize(repo, "HEAD", patch) as ws:
        base, patched = ws.read_pair(["pkg/new.py", "pkg/mod.py"])
    assert base["pkg/new.py"] is None
    assert patched["pkg/mod.py"] is None
    assert patched["pkg/new.py"] == b"X = 1\n"


def test_git_config_cannot_loosen_how_the_patch_applies(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No fuzz, whitespace exact, whatever ``apply.ignoreWhitespace`` the user's config sets."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[apply]\n\tignoreWhitespace = change\n\twhitespace = fix\n")
    monkeypatch.setenv("HOME", str(home))
    loose = PATCH.replace(b" def f():", b" def  f():")  # context whose whitespace differs
    with pytest.raises(PatchApplyError), materialize(repo, "HEAD", loose):
        pass
    trailing = PATCH.replace(b"+    return 2", b"+    return 2   ")
    with materialize(repo, "HEAD", trailing) as ws:  # applied as written, never "fixed"
        assert ws.read_patched("pkg/mod.py") == b"def f():\n    return 2   \n"


def test_changes_are_read_from_the_trees(repo: Path) -> None:
    patch = (
        PATCH
        + b"diff --git a/run.sh b/run.sh\nnew file mode 100755\n"
        + b"--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1 @@\n+echo\n"
    )
    with materialize(repo, "HEAD", patch) as ws:
        changes = {c.path: (c.status, c.after.mode if c.after else "") for c in ws.changes()}
    assert changes == {"pkg/mod.py": ("modified", "100644"), "run.sh": ("added", "100755")}
