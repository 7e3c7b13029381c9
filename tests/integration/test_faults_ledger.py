"""Fault injection on ledger writes: fsync or rename fails (or the process is interrupted) half-way.

In-process (monkeypatched ``os.fsync`` / ``os.replace``), no daemons: the previous ledger must
survive byte for byte and no temp file may be left beside it. Also through ``patchgate digest``.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from client.cli import main as patchgate_main
from patchgate.errors import LedgerError
from patchgate.ledgers import PropertyLedger, read_record

pytestmark = pytest.mark.integration

BILLING = Path(__file__).resolve().parents[2] / "examples" / "billing"


def _ledger(status: str) -> PropertyLedger:
    return PropertyLedger(
        pin_id="fixpin-billing-a",
        fixture_digest="d" * 64,
        status_by_id={"billing.prorate.non_negative": status},
        runs=[{"property_id": "billing.prorate.non_negative", "run_index": 1, "outcome": status}],
    )


def _eio(*_args: object, **_kwargs: object) -> None:
    raise OSError(errno.EIO, "Input/output error (injected)")


def _interrupt(*_args: object, **_kwargs: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("target", "fault", "raised"),
    [
        ("fsync", _eio, LedgerError),
        ("replace", _eio, LedgerError),
        ("fsync", _interrupt, KeyboardInterrupt),
        ("replace", _interrupt, KeyboardInterrupt),
    ],
    ids=["fsync-EIO", "rename-EIO", "fsync-interrupted", "rename-interrupted"],
)
def test_failed_ledger_write_leaves_the_previous_file_intact(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    fault: Callable[..., None],
    raised: type[BaseException],
) -> None:
    """A second write that fails before its rename: old bytes intact, no temp file left."""
    path = tmp_path / "property_ledger.json"
    _ledger("pass").write(path)
    before = path.read_bytes()
    with monkeypatch.context() as m:
        m.setattr(os, target, fault)
        with pytest.raises(raised):
            _ledger("fail").write(path)
    assert path.read_bytes() == before
    assert read_record(PropertyLedger, path).status_by_id == {
        "billing.prorate.non_negative": "pass"
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["property_ledger.json"]


def test_digest_cli_with_failing_rename_keeps_the_previous_fixture_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``patchgate digest`` whose rename fails: exit 1 with one line, previous ledger intact."""
    root = tmp_path / "billing"
    shutil.copytree(BILLING, root, ignore=shutil.ignore_patterns("__pycache__", "patches"))
    out = tmp_path / "ledgers"
    out.mkdir()
    argv = ["digest", "--pin", str(root / "pins" / "fixtures.json"), "--root", str(root)]
    argv += ["--out", str(out)]
    assert patchgate_main(argv) == 0
    before = (out / "fixture_ledger.json").read_bytes()
    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(os, "replace", _eio)
        assert patchgate_main(argv) == 1
    err = capsys.readouterr().err
    assert "cannot write" in err
    assert len(err.strip().splitlines()) == 1
    assert (out / "fixture_ledger.json").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["fixture_ledger.json"]
