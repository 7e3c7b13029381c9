"""``check --self-test`` tells the truth on its first line (issue 24): the cause, its documented
exit code, and nothing written into the repository. No daemon is needed for the causes found
before a run: the signer's address is a socket path nothing listens on."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from client.cli import main
from client.gate.selftest import CAUSES
from tests.unit._pinning_helpers import fixture_pin, git, make_library, write, write_pins


def _base(tmp_path: Path, *, pinned: bytes) -> Path:
    """A committed library whose pin holds ``pinned`` as the bytes of its one fixture."""
    lib = make_library(tmp_path / "lib")
    write(lib, {"pyproject.toml": "[tool.patchgate]\nsource_roots = ['src']\n"})
    write_pins(
        lib, [], fixtures=fixture_pin({"fixtures/words.json": hashlib.sha256(pinned).hexdigest()})
    )
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "base")
    return lib


def _self_test(lib: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str):  # type: ignore[no-untyped-def]
    dead = tmp_path / "nothing-listens.sock"
    code = main([
        "check", "--self-test", "--repo", str(lib), "--base", "HEAD",
        "--signer", f"unix:{dead}", "--executor", f"unix:{dead}",
        "--out", str(tmp_path / "out"), *extra,
    ])  # fmt: skip
    return code, capsys.readouterr()


def _untouched(lib: Path) -> None:
    status = subprocess.run(
        ["git", "-C", str(lib), "status", "--porcelain", "--ignored"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert status.stdout == ""


def test_fixtures_that_do_not_match_their_pin_fail_the_self_test_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The self-test said SELF-TEST PASSED and exited 2 here: no property had failed, because
    none ran. Its first line names the cause now, in every format."""
    lib = _base(tmp_path, pinned=b"other bytes")
    code, out = _self_test(lib, tmp_path, capsys)
    assert code == CAUSES["fixtures"][0] == 2
    assert out.out.splitlines()[0] == "SELF-TEST FAILED: fixtures do not match their pin"
    assert "PASSED" not in out.out
    _untouched(lib)
    code, out = _self_test(lib, tmp_path, capsys, "--json")
    assert code == 2
    summary = json.loads(out.out)
    assert summary["verdict"] == "SELF-TEST FAILED: fixtures do not match their pin"
    assert summary["admit"] is False
    code, out = _self_test(lib, tmp_path, capsys, "--format", "markdown")
    assert (
        out.out.splitlines()[0] == "## patchgate: SELF-TEST FAILED: fixtures do not match their pin"
    )


def test_an_unreachable_signer_fails_the_self_test_with_exit_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = _base(tmp_path, pinned=b'{"words": ["a", "b"]}\n')
    code, out = _self_test(lib, tmp_path, capsys)
    assert code == CAUSES["signer"][0] == 4
    assert out.out.splitlines()[0] == "SELF-TEST FAILED: the signer is unreachable"
    _untouched(lib)


def test_every_cause_has_a_documented_exit_code() -> None:
    """Each cause's words and code are on the exit-codes page, and only 0 is a pass."""
    page = (Path(__file__).parents[2] / "docs/reference/exit-codes.md").read_text(encoding="utf-8")
    for cause, (code, words) in CAUSES.items():
        assert (code == 0) == (cause == "passed")
        assert f"| `{code}` | `SELF-TEST {'PASSED' if code == 0 else 'FAILED: ' + words}" in page
