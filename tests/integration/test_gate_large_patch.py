"""A large patch is scored, never unscorable (issue 25, item 3): 300 changed symbols, one of them
named with more than 512 characters, used to make every Execute refuse (exit 2). Now the targets
go within the executor's bound (long names hashed on the wire and mapped back), and the check is
scored — rejected or admitted, exit 1 or 0, never 2. ``--mutants 0`` keeps it fast."""

from __future__ import annotations

from pathlib import Path

from tests.integration.fixtures_gate import BillingRepo, Gate

ORDERS = "billing/orders.py"


def _patch(repo: Path, tmp: Path) -> Path:
    """A diff adding 299 functions and one with a 600-character name to billing/orders.py."""
    old = (repo / ORDERS).read_text().splitlines()
    added = []
    for i in range(299):
        added += ["", "", f"def helper_{i:03d}(x: int) -> int:", f"    return x + {i}"]
    added += ["", "", f"def {'long_' * 120}name(x: int) -> int:", "    return x"]
    n = len(old)
    lines = [
        f"diff --git a/{ORDERS} b/{ORDERS}", f"--- a/{ORDERS}", f"+++ b/{ORDERS}",
        f"@@ -{n - 2},3 +{n - 2},{3 + len(added)} @@",
        *(f" {line}" for line in old[-3:]), *(f"+{line}" for line in added),
    ]  # fmt: skip
    path = tmp / "large.patch"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_300_symbol_patch_with_a_long_name_is_scored(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    run = gate.check(billing_repo, _patch(billing_repo.path, tmp_path), "--mutants", "0")
    assert run.code in (0, 1), run.stdout + run.stderr
    receipt = run.receipt
    assert len(receipt["changed_symbols"]) == 300, sorted(receipt)
