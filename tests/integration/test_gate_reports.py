"""What a person and a CI system read after a check (issue 16, items 2-4), through the real CLI
with a real signer, executor and Docker: --self-test, the first line, the run logs, --quiet,
--version, each --format, --junit and the PATCHGATE_* environment."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.integration.fixtures_gate import (
    CLOCK,
    PATCHES,
    PATCHGATE,
    BillingRepo,
    Gate,
    GateRun,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PROPERTIES = {
    "billing.prorate.non_negative",
    "billing.prorate.bounded",
    "billing.invoice_total.matches_fixture",
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=p", "-c", "user.email=p@e", *args],
        check=True, capture_output=True,
    )  # fmt: skip


def _run(gate: Gate, argv: list[str], out: Path, env: dict[str, str] | None = None) -> GateRun:
    proc = subprocess.run(
        [PATCHGATE, *argv], capture_output=True, text=True, cwd=gate.tmp, timeout=600,
        check=False, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
    )  # fmt: skip
    return GateRun(code=proc.returncode, stdout=proc.stdout, stderr=proc.stderr, out=out)


def _self_test(gate: Gate, repo: BillingRepo, *extra: str) -> GateRun:
    out = gate.tmp / f"self-test-{len(list(gate.tmp.iterdir()))}"
    argv = [
        "check", "--self-test", "--repo", str(repo.path), "--base", "HEAD",
        "--signer", gate.signer, "--executor", gate.executor,
        "--operator-keyring", str(gate.keyring), "--out", str(out), "--clock", CLOCK, *extra,
    ]  # fmt: skip
    return _run(gate, argv, out)


def _break_the_base(repo: BillingRepo) -> None:
    """A root conftest.py that cannot import: every pytest run of the base fails to start."""
    (repo.path / "conftest.py").write_text("import patchgate_no_such_module_xyz\n")
    _git(repo.path, "add", "conftest.py")
    _git(repo.path, "commit", "-qm", "a harness that cannot import")


def _property_ids(run: GateRun) -> set[str]:
    return set(run.file("property_ledger.json")["status_by_id"])


def test_self_test_of_a_working_base_passes(gate: Gate, billing_repo: BillingRepo) -> None:
    run = _self_test(gate, billing_repo)
    assert run.code == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[0] == "SELF-TEST PASSED"
    assert not (run.out / "receipt.json").exists()  # a self-test judges no patch
    assert (run.out / "runs" / "billing.prorate.bounded" / "2.log").is_file()


def test_a_base_whose_harness_cannot_import_fails_the_self_test_with_the_error(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    _break_the_base(billing_repo)
    run = _self_test(gate, billing_repo)
    assert run.code == 78, run.stdout + run.stderr
    assert run.stdout.startswith("SELF-TEST FAILED: ")
    assert "patchgate_no_such_module_xyz" in run.stdout  # the ImportError text, from the log
    assert "ModuleNotFoundError" in run.stdout or "ImportError" in run.stdout
    log = run.out / "runs" / "billing.prorate.bounded" / "1.log"
    assert "patchgate_no_such_module_xyz" in log.read_text()

    # The ordinary check on that base: every property errors alike -> the hint, same verdict.
    check = gate.check(billing_repo, "prorate_refactor.patch")
    assert check.code == 1, check.stdout + check.stderr
    assert check.receipt["posture"] == "reject_property_miss"
    assert "every property errored the same way" in check.stdout
    assert "--self-test" in check.stdout


def test_an_admitted_check_says_so_first_and_writes_logs_and_junit(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    junit = gate.tmp / "report.xml"
    run = gate.check(billing_repo, "prorate_refactor.patch", "--junit", str(junit))
    assert run.code == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "ADMITTED"
    assert lines[1].split()[-3:] == ["exec", "killed", "credit"]
    for pid in _property_ids(run):
        for n in (1, 2):
            assert (run.out / "runs" / pid / f"{n}.log").is_file(), pid
    assert "verify envelope" not in run.stderr  # executor events only with --verbose
    root = ET.parse(junit).getroot()  # noqa: S314 - our own output
    cases = list(root.iter("testcase"))
    assert {c.get("name") for c in cases} == _property_ids(run)
    assert all("run 1: pass" in (c.findtext("system-out") or "") for c in cases)
    assert all("run 2: pass" in (c.findtext("system-out") or "") for c in cases)


def test_a_rejected_check_names_its_posture_and_prints_the_failure(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "prorate_regression.patch", "--verbose")
    assert run.code == 1, run.stdout + run.stderr
    assert run.stdout.splitlines()[0] == "REJECTED: a suite property failed both runs"
    assert "failures" in run.stdout.splitlines()
    assert "billing.prorate.non_negative run 1:" in run.stdout
    assert "assert Decimal(" in run.stdout  # the failure text under the table
    assert "verify envelope" in run.stderr  # --verbose shows the executor's events


def test_uncredited_symbols_and_codes_are_explained(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "worked_example.patch")
    assert run.code == 1, run.stdout + run.stderr
    assert run.stdout.splitlines()[0] == "REJECTED: the suite passed but credit is short"
    assert "uncredited billing.invoice_total: fixture equality only (R5)" in run.stdout
    assert "code       R1 missing property: a changed symbol earned no credit" in run.stdout
    assert "code       R5 fixture equality as check: " in run.stdout


def test_quiet_prints_the_first_line_alone(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "prorate_regression.patch", "--quiet")
    assert run.code == 1
    assert run.stdout == "REJECTED: a suite property failed both runs\n"
    assert run.stderr == ""


def test_markdown_format(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "worked_example.patch", "--format", "markdown")
    assert run.code == 1
    assert run.stdout.startswith("## patchgate: REJECTED: ")
    for heading in ("### Uncredited symbols", "### Codes", "### Details"):
        assert f"\n{heading}\n" in run.stdout
    assert "| billing.invoice_total | billing.invoice_total.matches_fixture |" in run.stdout
    assert "- **R5** fixture equality as check: " in run.stdout


def test_github_format_annotates_an_uncredited_symbol_at_its_definition(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "worked_example.patch", "--format", "github")
    assert run.code == 1
    lines = run.stdout.splitlines()
    assert all(line.startswith("::") for line in lines), run.stdout
    symbol = [line for line in lines if "billing.invoice_total earned no credit" in line]
    assert symbol, run.stdout
    patched = gate.tmp / "patched"
    shutil.copytree(billing_repo.path, patched)
    _git(patched, "apply", str(PATCHES / "worked_example.patch"))
    source = (patched / "billing" / "__init__.py").read_text().splitlines()
    m = re.match(r"::error file=billing/__init__\.py,line=(\d+),", symbol[0])
    assert m, symbol[0]
    assert source[int(m.group(1)) - 1].startswith("def invoice_total(")


def test_github_format_annotates_a_failed_property_where_it_failed(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "prorate_regression.patch", "--format", "github")
    assert run.code == 1
    failed = [
        line for line in run.stdout.splitlines() if "property billing.prorate.non_negative" in line
    ]
    assert failed, run.stdout
    m = re.match(r"::error file=properties/test_billing\.py,line=(\d+),", failed[0])
    assert m, failed[0]
    tests = (billing_repo.path / "properties" / "test_billing.py").read_text().splitlines()
    assert "assert" in tests[int(m.group(1)) - 1]  # the failing line, not just the test's def


def test_json_is_the_receipt(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch", "--format", "json")
    assert run.code == 0
    assert run.stdout.startswith("{")
    assert '"posture": "human_review"' in run.stdout


def test_the_environment_gives_the_settings_and_flags_win(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    out = gate.tmp / "from-env"
    env = {
        "PATCHGATE_SIGNER": "unix:/nonexistent/signer.sock",  # the flag below wins
        "PATCHGATE_EXECUTOR": f" {gate.executor} ,",
        "PATCHGATE_OPERATOR_KEYRING": str(gate.keyring),
        "PATCHGATE_OUT": str(out),
    }
    argv = [
        "check", "--repo", str(billing_repo.path), "--base", "HEAD",
        "--patch", str(PATCHES / "prorate_refactor.patch"),
        "--draft-id", "d-env", "--drafter", "human", "--clock", CLOCK,
        "--signer", gate.signer, "--quiet",
    ]  # fmt: skip
    run = _run(gate, argv, out, env)
    assert run.code == 0, run.stdout + run.stderr
    assert run.stdout == "ADMITTED\n"
    assert "operator keyring from" in str(run.file("admission.json"))
    assert (out / "receipt.json").is_file()


def test_version_exits_0() -> None:
    got = subprocess.run([PATCHGATE, "--version"], capture_output=True, text=True, check=False)
    assert got.returncode == 0
    assert re.fullmatch(r"patchgate \S+\n", got.stdout)
