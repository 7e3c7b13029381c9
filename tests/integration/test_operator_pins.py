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
