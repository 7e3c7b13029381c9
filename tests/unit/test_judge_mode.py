"""The judge mode on the client side (issue 20): the reviewed allow_judge_off, the merge row, the
production names every Execute sends, the receipt's ``judge`` and its readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from client.gate.runs.judging import JudgeMode, production_names
from client.gate.runs.targets import TargetedClient
from client.verdict.posture import Facts, merge
from client.verdict.receipt import build_receipt, receipt_problems
from patchgate.errors import PinError
from patchgate.ledgers import Receipt
from patchgate.pins import DirSource, load_config

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
    assert names == ("billing", "helpers")
    assert production_names(tmp_path, ("src",), ()) == (("src",), ("textkit",))


def test_a_namespace_package_under_a_source_root_is_production(tmp_path: Path) -> None:
    """PEP 420: ``src/acme/tools/rates.py`` with no ``__init__.py`` on the way is production
    code; were ``acme`` not named, its imports would run in the judge. At the root a directory
    without ``__init__.py`` (``tests/``, ``docs/``) is not taken for one, and a directory of data
    only is no package."""
    for rel in ("src/acme/tools/rates.py", "src/plain/__init__.py", "src/data/notes.txt",
                "docs/conf.py", "tests/test_x.py"):  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    assert production_names(tmp_path, ("src",), ()) == (("src",), ("acme", "plain"))
    assert production_names(tmp_path, ("",), ("tests/",))[1] == ()


def test_every_execute_carries_the_judge_mode() -> None:
    seen: dict[str, object] = {}

    class Inner:
        address = "unix:/x"

        def execute(self, **kwargs: object) -> object:
            seen.update(kwargs)
            return None

        def close(self) -> None:
            return None

    mode = JudgeMode(judge="off", source_roots=("src",), production=("textkit",))
    TargetedClient(Inner(), (), mode).execute(runs=1)  # type: ignore[arg-type]
    assert (seen["judge"], seen["source_roots"], seen["production"]) == ("off", ("src",),
                                                                         ("textkit",))  # fmt: skip
    TargetedClient(Inner(), ()).execute(runs=1)  # type: ignore[arg-type]
    assert seen["judge"] == "on"


def test_the_receipt_says_which_mode_ran_and_old_receipts_still_read() -> None:
    body = build_receipt(review_clock="c", patch_sha256="p", decision="admit", posture="review",
                         admit=False, judge="on").to_json()  # fmt: skip
    assert body["judge"] == "on"
    old = {k: v for k, v in body.items() if k != "judge"}
    assert Receipt.from_json(old).judge == ""
    odd = Receipt.from_json({**body, "judge": "sometimes"})
    assert any("neither on nor off" in p for p in receipt_problems(odd))
