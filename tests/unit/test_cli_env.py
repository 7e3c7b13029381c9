"""``init --requirements``, ``env build`` and the client's side of the environment: refusals
(each one line, nothing written) and the self-test's hint for an import error."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from client.cli import main
from client.gate.selftest import import_hint
from patchgate import executor_client
from patchgate.environment import EnvironmentConfig
from patchgate.errors import RefusedError
from patchgate.pins import ProjectConfig
from tests.unit._pinning_helpers import git, make_library, write


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def test_init_requirements_writes_the_environment_table(tmp_path: Path) -> None:
    lib = make_library(tmp_path / "textkit")
    write(lib, {"req.txt": "pytest==8.0\n"})
    assert main(["init", "--repo", str(lib), "--requirements", "req.txt"]) == 0
    text = (lib / "pyproject.toml").read_text()
    assert '[tool.patchgate.environment]\nrequirements = "req.txt"\n' in text
    assert main(["pin", "check", "--repo", str(lib)]) == 0


@pytest.mark.parametrize(
    ("lock", "arg", "code", "why"),
    [
        (None, "req.txt", 64, "not a file"),
        ("pytest==8.0\n", "../req.txt", 64, "--requirements"),
        ("pytest\n", "req.txt", 78, "name==version"),
        ("pluggy==1.0\n", "req.txt", 78, "pytest is not among"),
    ],
)
def test_init_refuses_a_lock_check_would_refuse_and_writes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    lock: str | None,
    arg: str,
    code: int,
    why: str,
) -> None:
    lib = make_library(tmp_path / "textkit")
    if lock is not None:
        write(lib, {"req.txt": lock})
    before = _snapshot(lib)
    assert main(["init", "--repo", str(lib), "--requirements", arg]) == code
    assert why in capsys.readouterr().err
    assert _snapshot(lib) == before


def test_env_build_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = make_library(tmp_path / "textkit")
    assert main(["init", "--repo", str(lib)]) == 0
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "base")
    capsys.readouterr()
    argv = ["env", "build", "--repo", str(lib), "--rev", "HEAD", "--cache", str(tmp_path / "c")]
    assert main(argv) == 78
    assert "is not configured" in capsys.readouterr().err
    assert main([*argv, "--out", str(lib)]) == 64  # an existing directory
    assert main([*argv, "--find-links", str(tmp_path / "none")]) == 64
    assert main(["env", "build", "--repo", str(lib), "--rev", "nope"]) == 64
    assert main(["env", "build", "--help"]) == 0
    assert not (tmp_path / "c").exists()
    capsys.readouterr()
    assert main([*argv, "--if-configured"]) == 0  # a CI recipe serving either kind of repository
    assert "configures no environment: nothing built" in capsys.readouterr().out
    assert not (tmp_path / "c").exists()


def test_the_client_refuses_an_environment_it_does_not_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not in the cache, or its bytes changed there: refused before anything is uploaded."""
    monkeypatch.setenv("PATCHGATE_CACHE_DIR", str(tmp_path))
    digest = hashlib.sha256(b"x").hexdigest()
    with pytest.raises(RefusedError, match="not in the local cache"):
        executor_client._environment(digest)
    write(tmp_path / "env" / digest, {"a.py": "x = 1\n"})
    with pytest.raises(RefusedError, match="changed on disk"):
        executor_client._environment(digest)
    assert executor_client._environment(None) == {}


def test_an_import_error_in_a_self_test_names_the_likely_cause() -> None:
    text = ["E   ModuleNotFoundError: No module named 'freezegun.api'"]
    plain = import_hint(text, ProjectConfig(), has_src=True)
    assert plain is not None
    assert "'freezegun'" in plain
    assert "configures no environment" in plain
    assert "source_roots (src)" in plain
    env = ProjectConfig(environment=EnvironmentConfig(requirements="req.txt"))
    hint = import_hint(text, env, has_src=False)
    assert hint is not None
    assert "neither in the environment's lock (req.txt) nor under the source roots (.)" in hint
    assert import_hint(["AssertionError: 1 != 2"], env, has_src=False) is None


def test_an_import_error_of_a_module_the_revision_lacks_names_the_file(tmp_path: Path) -> None:
    """humanize's sdist: ``src/humanize/_version.py`` is generated and git-ignored, so the
    committed tree the sandbox runs on has no ``humanize._version``."""
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "src" / "pkg" / "__init__.py").write_text("from ._version import v\n")
    (repo / ".gitignore").write_text("_version.py\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "base"], check=True)  # fmt: skip
    (repo / "src" / "pkg" / "_version.py").write_text("v = 1\n")
    (repo / "src" / "pkg" / "extra.py").write_text("x = 1\n")
    text = ["E   ModuleNotFoundError: No module named 'pkg._version'"]
    env = ProjectConfig(environment=EnvironmentConfig(requirements="req.txt"))
    hint = import_hint(text, env, has_src=True, repo=repo, rev="HEAD")
    assert hint is not None
    assert "src/pkg/_version.py (git ignores it) is in the working tree but not in HEAD" in hint
    untracked = import_hint(["No module named 'pkg.extra'"], env, has_src=True, repo=repo,
                            rev="HEAD")  # fmt: skip
    assert untracked is not None
    assert "src/pkg/extra.py (never committed)" in untracked
    # absent everywhere: the package is committed, or it is not the project's at all
    gone = import_hint(["No module named 'pkg.gone'"], env, has_src=True, repo=repo, rev="HEAD")
    assert gone is not None
    assert "the package pkg is in src/pkg but HEAD has no module pkg.gone" in gone
    general = import_hint(["No module named 'other.x'"], env, has_src=True, repo=repo, rev="HEAD")
    assert general is not None
    assert "neither in the environment's lock" in general
