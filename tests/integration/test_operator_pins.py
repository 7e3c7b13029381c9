"""Pins made by the operator commands drive a real check: a generated ``src/``-layout library is
put under patchgate with ``init`` and ``pin properties --from-pytest`` only, and ``patchgate
check`` (real signer, real executor, real sandbox) runs its marked tests by their node ids —
the ``patchgate`` marker registered in the sandbox, the ``covers`` names matching the changed
symbol, no unknown covers entry — and admits a patch its property covers and can fail on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.fixtures_gate import BillingRepo, Gate
from tests.unit._pinning_helpers import git, make_library

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PATCHGATE = str(Path(sys.executable).parent / "patchgate")
PATCH_LINES = [
    "diff --git a/src/textkit/core.py b/src/textkit/core.py",
    "--- a/src/textkit/core.py",
    "+++ b/src/textkit/core.py",
    "@@ -1,5 +1,5 @@",
    " def slugify(text):",
    '-    return "-".join(words(text))',
    '+    return "-".join(w for w in words(text))',
    " ",
    " ",
    " def words(text):",
]


def _pg(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PATCHGATE, *argv], capture_output=True, text=True, check=False, timeout=300
    )


def test_pins_made_by_commands_run_in_a_real_check(gate: Gate, tmp_path: Path) -> None:
    lib = make_library(tmp_path / "textkit")
    for argv in (["init"], ["pin", "properties", "--from-pytest"], ["pin", "check"]):
        done = _pg(*argv, "--repo", str(lib))
        assert done.returncode == 0, done.stdout + done.stderr
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "base: pins made by commands")
    assert _pg("pin", "check", "--repo", str(lib), "--rev", "HEAD").returncode == 0
    patch = tmp_path / "slugify.patch"
    patch.write_text("\n".join(PATCH_LINES) + "\n")

    run = gate.check(BillingRepo(lib), patch)
    assert run.code == 0, run.stdout + run.stderr
    receipt = run.receipt
    assert (receipt["admit"], receipt["coverage"], receipt["rejection_codes"]) == (True, 1.0, [])
    assert receipt["changed_symbols"] == ["textkit.core.slugify"]
    assert run.file("admission.json").get("unknown_covers", []) == []
    evidence = receipt["evidence"]["textkit.core.slugify"]["textkit.slugify.idempotent"]
    assert evidence["runs"] == ["pass", "pass"]
    ledger = run.file("property_ledger.json")
    assert ledger["status_by_id"] == {
        "textkit.slugify.idempotent": "pass",
        "tests.test_core.test_count": "pass",
    }


PARAMETRIZED = """\
import pytest
from textkit.core import slugify


@pytest.mark.patchgate(kind="pure_fn", covers=["textkit.core.slugify"], id="textkit.slugify.lower")
@pytest.mark.parametrize("text,want", [("A b", "a-b"), ("C", "c")])
def test_slugify_lowers(text, want):
    assert slugify(text) == want
"""
#: slugify leaves a one-word text as it is: the case "A b" still passes, "C" fails.
BREAK_ONE_CASE = [
    "diff --git a/src/textkit/core.py b/src/textkit/core.py",
    "--- a/src/textkit/core.py",
    "+++ b/src/textkit/core.py",
    "@@ -1,5 +1,5 @@",
    " def slugify(text):",
    '-    return "-".join(words(text))',
    '+    return "-".join(words(text)) if " " in text else text',
    " ",
    " ",
    " def words(text):",
]


def test_a_parametrized_property_is_all_its_cases(gate: Gate, tmp_path: Path) -> None:
    """Issue 24, with the real daemons and sandbox: a parametrized test is pinned by the commands
    as one property naming the function (``pin check`` accepts it); a patch that breaks one of its
    two cases fails the property in both runs (a property miss), and each case's outcome is in the
    property ledger and in the JUnit report."""
    lib = make_library(tmp_path / "textkit")
    (lib / "tests" / "test_lower.py").write_text(PARAMETRIZED)
    for argv in (["init"], ["pin", "properties", "--from-pytest"], ["pin", "check"]):
        done = _pg(*argv, "--repo", str(lib))
        assert done.returncode == 0, done.stdout + done.stderr
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "base: a parametrized property")
    assert _pg("pin", "check", "--repo", str(lib), "--rev", "HEAD").returncode == 0
    patch = tmp_path / "one-case.patch"
    patch.write_text("\n".join(BREAK_ONE_CASE) + "\n")
    junit = tmp_path / "junit.xml"

    run = gate.check(BillingRepo(lib), patch, "--junit", str(junit))
    assert run.code == 1, run.stdout + run.stderr
    assert run.receipt["posture"] == "reject_property_miss"
    ledger = run.file("property_ledger.json")
    assert ledger["status_by_id"]["textkit.slugify.lower"] == "fail"
    node = "tests/test_lower.py::test_slugify_lowers"
    runs = [r for r in ledger["runs"] if r["property_id"] == "textkit.slugify.lower"]
    assert [r["cases"] for r in runs] == [{f"{node}[A b-a-b]": "pass", f"{node}[C-c]": "fail"}] * 2
    assert "C-c" in runs[0]["failure_signature"]
    assert "A b-a-b" not in runs[0]["failure_signature"]
    report = junit.read_text()
    assert f'name="run 1 case {node}[C-c]" value="fail"' in report
    assert f'name="run 2 case {node}[A b-a-b]" value="pass"' in report
