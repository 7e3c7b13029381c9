"""The judge mode on the client side (issue 20): the reviewed allow_judge_off, the merge row, the
production names every Execute sends, the receipt's ``judge`` and its readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from client.gate.runs.judging import JudgeMode, production_names
from client.gate.runs.targets import TargetedClient
from client.verdict.posture import Facts, merge
from client.verdict.receipt import ReceiptFacts, build_receipt, receipt_problems
from patchgate.errors import PinError
from patchgate.ledgers import Receipt
from patchgate.pins import DirSource, load_config
from patchgate.request import ExecuteRequest

PASSED = {"decision": "admit", "coverage": 1.0, "changed_symbols": 1, "suite_passed": True}


def test_allow_judge_off_is_a_reviewed_boolean(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.patchgate]\nallow_judge_off = true\n")
    assert load_config(DirSource(tmp_path)).allow_judge_off is True
    (tmp_path / "pyproject.toml").write_text("[tool.patchgate]\n")
    assert load_config(DirSource(tmp_path)).allow_judge_off is False
    (tmp_path / "pyproject.toml").write_text('[tool.patchgate]\nallow_judge_off = "yes"\n')
    with pytest.raises(PinError, match="allow_judge_off"):
        load_config(DirSource(tmp_path))


def test_a_check_run_without_the_judge_is_scored_but_not_admitted() -> None:
    assert merge(Facts(**PASSED)).admit  # type: ignore[arg-type]
    no = merge(Facts(**PASSED, unjudged=True))  # type: ignore[arg-type]
    assert (no.posture, no.row, no.admit, no.exit_code) == ("reject_credit", "credit", False, 1)


def test_production_names_come_from_the_source_roots_not_the_oracle(tmp_path: Path) -> None:
    for rel in ("billing/__init__.py", "billing/orders.py", "properties/__init__.py",
                "properties/test_billing.py", "conftest.py", "test_top.py", "helpers.py",
                "src/textkit/__init__.py", "notapkg/data.txt"):  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "linked").symlink_to(tmp_path / "billing")
    roots, names = production_names(tmp_path, ("",), ("tests/", "properties/", "pins/"))
    assert roots == (".",)
    assert names == ("billing", "helpers", "src")  # with root ".", src/ is importable from it too
    assert production_names(tmp_path, ("src",), ()) == (("src",), ("textkit",))
    # "." (as a caller may spell the root) is the root: the oracle paths still apply
    assert production_names(tmp_path, (".",), ("tests/", "properties/", "pins/")) == (roots, names)


def test_a_namespace_package_under_a_source_root_is_production(tmp_path: Path) -> None:
    """PEP 420: ``src/acme/tools/rates.py`` with no ``__init__.py`` on the way is production
    code; were ``acme`` not named, its imports would run in the judge. A directory of data only,
    or of test modules only, is no package."""
    for rel in ("src/acme/tools/rates.py", "src/plain/__init__.py", "src/data/notes.txt",
                "src/checks/test_only.py", "docs/conf.py", "tests/test_x.py"):  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    assert production_names(tmp_path, ("src",), ()) == (("src",), ("acme", "plain"))


def test_a_namespace_package_at_the_root_is_production(tmp_path: Path) -> None:
    """A flat layout (``source_roots = ["."]``): the judge's working directory is the root and on
    its ``sys.path``, so an unnamed ``acme/`` without ``__init__.py`` would be imported, and run,
    in the judge (the supervisor test beside this one shows it). Every root directory that holds
    a ``.py`` is named, but not an oracle path, a directory of tests only, or a directory named
    after a standard-library module (a namespace portion never shadows a regular module)."""
    for rel in ("acme/tools/rates.py", "docs/conf.py", "tests/test_x.py", "tests/helpers.py",
                "integration_only/test_i.py", "test/support.py", "email/parse.py",
                "data/notes.txt", "not-a-name/x.py"):  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "json").mkdir()
    (tmp_path / "json/__init__.py").write_text("")  # a regular package shadows: named
    # ("test" is not in sys.stdlib_module_names: Debian ships it apart; named, it is asked of
    # the subject, where a regular stdlib package wins just as it would here)
    assert production_names(tmp_path, ("",), ("tests/",))[1] == ("acme", "docs", "json", "test")


def test_what_pytest_puts_on_the_path_beside_a_test_module_is_production(tmp_path: Path) -> None:
    """pytest's ``prepend`` mode puts ``integration/`` (a test module, no ``__init__.py``) first
    on ``sys.path``: the patch's ``integration/helpers.py`` would run in the judge as
    ``helpers``. Named, it is asked of the subject (which has no such path: an ``error``, never a
    judge-side run). Under an oracle path, or in a package, nothing more is named."""
    for rel in ("integration/test_i.py", "integration/helpers.py", "integration/conftest.py",
                "integration/sub/test_j.py", "integration/sub/tools.py",
                "tests/test_x.py", "tests/shared.py",
                "pkg/__init__.py", "pkg/test_in_pkg.py", "pkg/util.py"):  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    names = production_names(tmp_path, ("",), ("tests/",))[1]
    assert names == ("helpers", "integration", "pkg", "sub", "tools")
    # under a src root, a test directory holding helpers is production code too
    for rel in ("src/lib/checks/test_k.py", "src/lib/checks/fakes.py", "src/lib/core.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    assert production_names(tmp_path, ("src",), ())[1] == ("fakes", "lib")


def test_every_execute_carries_the_judge_mode() -> None:
    seen: dict[str, object] = {}

    class Inner:
        address = "unix:/x"

        def execute(self, request: ExecuteRequest, on_progress: object = None) -> object:
            seen.update(vars(request))
            return None

        def close(self) -> None:
            return None

    mode = JudgeMode(judge="off", source_roots=("src",), production=("textkit",))
    request = ExecuteRequest(
        envelope=None, workspace=Path("."), fixture_root="", properties=(), runs=1
    )  # type: ignore[arg-type]
    TargetedClient(Inner(), (), mode).execute(request)  # type: ignore[arg-type]
    assert (seen["judge"], seen["source_roots"], seen["production"]) == ("off", ("src",),
                                                                         ("textkit",))  # fmt: skip
    TargetedClient(Inner(), ()).execute(request)  # type: ignore[arg-type]
    assert seen["judge"] == "on"


def test_the_receipt_says_which_mode_ran_and_old_receipts_still_read() -> None:
    body = build_receipt(
        ReceiptFacts(
            review_clock="c",
            patch_sha256="p",
            decision="admit",
            posture="review",
            admit=False,
            judge="on",
        )
    ).to_json()
    assert body["judge"] == "on"
    old = {k: v for k, v in body.items() if k != "judge"}
    assert Receipt.from_json(old).judge == ""
    odd = Receipt.from_json({**body, "judge": "sometimes"})
    assert any("neither on nor off" in p for p in receipt_problems(odd))
