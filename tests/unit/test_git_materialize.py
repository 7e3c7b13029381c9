"""patchgate.git: a revision is written from its blobs (exact bytes, modes, in-tree symlinks), and a
tree that could escape or smuggle a repository is a clean UnsafeTreeError naming the path."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from patchgate import git
from patchgate.errors import UnsafeTreeError

BILLING = Path(__file__).resolve().parents[2] / "examples" / "billing"
_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, input=stdin, env=_ENV
    ).stdout.decode()


def _blob(repo: Path, data: bytes) -> str:
    return _git(repo, "hash-object", "-w", "--stdin", stdin=data).strip()


def _commit(repo: Path, entries: list[tuple[str, str, str]]) -> str:
    """A commit whose root tree is ``(mode, oid, name)`` entries (``mktree``: any name)."""
    lines = "".join(
        f"{mode} {'tree' if mode == '040000' else 'blob'} {oid}\t{name}\0"
        for mode, oid, name in entries
    )
    tree = _git(repo, "mktree", "-z", "--missing", stdin=lines.encode()).strip()
    return _git(
        repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit-tree", tree, "-m", "x"
    ).strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    _git(r, "init", "-q")
    return r


def test_tree_is_the_commits_bytes_modes_and_links(repo: Path, tmp_path: Path) -> None:
    """CRLF bytes stay CRLF, an export-ignored file is present, the exec bit and an in-tree link
    are kept: the commit's tree, not what ``git archive`` would make of it."""
    (repo / "pkg").mkdir()
    (repo / "pkg" / "a.py").write_bytes(b"x = 1\r\n")
    (repo / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(repo / "run.sh", 0o755)  # noqa: S103 - an executable of the tree
    (repo / "secret.txt").write_bytes(b"$Format:%H$\n")
    (repo / "id.txt").write_bytes(b"$Id$\n")
    (repo / ".gitattributes").write_text("secret.txt export-ignore export-subst\nid.txt ident\n")
    os.symlink("pkg/a.py", repo / "link.py")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    dest = tmp_path / "out"
    git.materialize_tree(repo, git.resolve_commit(repo, "HEAD") or "", dest)
    assert (dest / "pkg" / "a.py").read_bytes() == b"x = 1\r\n"
    assert (dest / "secret.txt").read_bytes() == b"$Format:%H$\n"
    assert (dest / "id.txt").read_bytes() == b"$Id$\n"
    assert os.stat(dest / "run.sh").st_mode & 0o777 == 0o755
    assert os.stat(dest / "pkg" / "a.py").st_mode & 0o777 == 0o644
    assert os.readlink(dest / "link.py") == "pkg/a.py"


@pytest.mark.parametrize(
    ("links", "named"),
    [
        ([("abs", "/etc/passwd")], "abs"),
        ([("up", "../outside")], "up"),
        ([("self", "."), ("chain", "self/..")], "chain"),  # each inside alone, together out
    ],
)
def test_links_that_leave_the_tree_are_refused(
    repo: Path, tmp_path: Path, links: list[tuple[str, str]], named: str
) -> None:
    commit = _commit(repo, [("120000", _blob(repo, t.encode()), n) for n, t in links])
    with pytest.raises(UnsafeTreeError) as err:
        git.materialize_tree(repo, commit, tmp_path / "out")
    assert err.value.path == named
    assert repr(named) in str(err.value)


@pytest.mark.parametrize("name", [".git", ".GIT", "..", "."])
def test_names_a_checkout_could_not_hold_are_refused(repo: Path, tmp_path: Path, name: str) -> None:
    """A crafted tree naming ``.git`` would make the temp tree a repository for ``git apply``."""
    config = _blob(repo, b"[core]\n")
    inner = _git(repo, "mktree", stdin=f"100644 blob {config}\tconfig\n".encode()).strip()
    try:
        commit = _commit(repo, [("040000", inner, name)])
    except subprocess.CalledProcessError:
        pytest.skip(f"this git refuses to build a tree naming {name!r}")
    with pytest.raises(UnsafeTreeError):
        git.materialize_tree(repo, commit, tmp_path / "out")


def test_read_blob_applies_no_filter_and_says_missing(repo: Path) -> None:
    (repo / "f.txt").write_bytes(b"$Id$\n")
    (repo / ".gitattributes").write_text("* ident\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    assert git.read_blob(repo, "HEAD", "f.txt", limit=100) == b"$Id$\n"
    assert git.read_blob(repo, "HEAD", "absent.txt", limit=100) is None


def test_caller_git_environment_does_not_leak(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GIT_DIR`` of the caller would make every call answer about another repository."""
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    (repo / "f").write_text("x")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", f"touch {tmp_path}/ran")
    assert git.resolve_commit(repo, "HEAD") is not None
    assert git.run(None, "version").stdout.startswith(b"git version")
    assert not (tmp_path / "ran").exists()


def test_an_absolute_symlink_in_the_base_is_exit_78_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pin check --rev`` and ``check`` on such a base: a clean 78, never a traceback."""
    from client.cli import main  # noqa: PLC0415 - the CLI only for this test

    shutil.copytree(BILLING, tmp_path / "b", ignore=shutil.ignore_patterns("patches"))
    repo = tmp_path / "b"
    os.symlink("/etc/passwd", repo / "src_link")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    assert main(["pin", "check", "--repo", str(repo), "--rev", "HEAD"]) == 78
    patch = tmp_path / "p.diff"
    patch.write_bytes((BILLING / "patches" / "prorate_refactor.patch").read_bytes())
    code = main([
        "check", "--repo", str(repo), "--base", "HEAD", "--patch", str(patch),
        "--draft-id", "d", "--drafter", "human", "--signer", "unix:/nonexistent/s",
        "--executor", "unix:/nonexistent/e", "--out", str(tmp_path / "out"),
    ])  # fmt: skip
    assert code == 78
    err = capsys.readouterr()
    assert "'src_link'" in err.err + err.out
    assert "Traceback" not in err.err + err.out
