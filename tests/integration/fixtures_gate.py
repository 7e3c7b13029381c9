"""pytest fixtures (gate): ``patchgate check`` against real daemons over real sockets.

Loaded by tests/conftest.py. Provides:

- ``billing_repo``: a tmp git repository holding a copy of ``examples/billing`` (without its
  ``patches/``), base committed; ``.commit_patch(name)`` applies a sample patch as a person's
  commit.
- ``own_gate(tmp)``: a gate with a signer and an executor of its own under ``tmp`` (for a
  module-scoped fixture), both stopped at the end.
- ``gate``: runs the ``patchgate`` console script (``check`` / ``verify-receipt``) against
  ``signer_daemon`` and ``executor_daemon`` (both of ``operator_key``); returns a ``GateRun``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
BILLING = REPO / "examples" / "billing"
PATCHES = BILLING / "patches"
PATCHGATE = str(Path(sys.executable).parent / "patchgate")
CLOCK = "2026-09-10T12:00:00Z"  # FLK-1044 of the example is valid at this clock

__all__ = ["CLOCK", "PATCHES", "BillingRepo", "Gate", "GateRun", "own_gate"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=person", "-c", "user.email=p@example.org", *args],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


@dataclasses.dataclass(frozen=True)
class BillingRepo:
    """A git repository with the billing example committed as its base."""

    path: Path

    def commit_patch(self, name: str, message: str) -> str:
        """Apply ``examples/billing/patches/<name>`` and commit it (a person's base change)."""
        _git(self.path, "apply", str(PATCHES / name))
        _git(self.path, "add", "-A")
        _git(self.path, "commit", "-qm", message)
        return _git(self.path, "rev-parse", "HEAD").strip()


@pytest.fixture
def billing_repo(tmp_path: Path) -> BillingRepo:
    """A fresh repository with examples/billing as its first commit."""
    path = tmp_path / "billing"
    shutil.copytree(BILLING, path, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "base")
    return BillingRepo(path)


@dataclasses.dataclass(frozen=True)
class GateRun:
    """One finished ``patchgate`` command."""

    code: int
    stdout: str
    stderr: str
    out: Path

    def file(self, name: str) -> dict[str, Any]:
        """One JSON file of the ledger directory."""
        return json.loads((self.out / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    @property
    def receipt(self) -> dict[str, Any]:
        """receipt.json."""
        return self.file("receipt.json")

    def files(self) -> set[str]:
        """Names of the files written."""
        return {p.name for p in self.out.iterdir()} if self.out.exists() else set()


@dataclasses.dataclass
class Gate:
    """Runs ``patchgate check`` with the test's daemons and keyring."""

    signer: str
    executor: str
    keyring: Path
    tmp: Path
    runs: int = 0

    def check(self, repo: BillingRepo, patch: str | Path, *extra: str, **flags: str) -> GateRun:
        """``patchgate check`` of ``patch`` (a sample name or a path) on HEAD of ``repo``."""
        self.runs += 1
        out = self.tmp / f"ledgers-{self.runs}"
        path = patch if isinstance(patch, Path) else PATCHES / patch
        args = {
            "--repo": str(repo.path), "--base": "HEAD", "--patch": str(path),
            "--draft-id": f"draft-{self.runs}", "--drafter": "model_lane",
            "--signer": self.signer, "--executor": self.executor,
            "--operator-keyring": str(self.keyring), "--clock": CLOCK, "--out": str(out),
        }  # fmt: skip
        args.update({f"--{k.replace('_', '-')}": v for k, v in flags.items()})
        argv = [a for k, v in args.items() if v for a in (k, v)]  # a flag given as "" is dropped
        return self._run(["check", *argv, *extra], out)

    def verify(self, receipt: Path, repo: BillingRepo, *extra: str) -> GateRun:
        """``patchgate verify-receipt``."""
        argv = ["verify-receipt", str(receipt), "--repo", str(repo.path)]
        return self._run([*argv, "--operator-keyring", str(self.keyring), *extra], receipt.parent)

    def _run(self, argv: list[str], out: Path) -> GateRun:
        proc = subprocess.run(
            [PATCHGATE, *argv], capture_output=True, text=True, cwd=self.tmp, timeout=600,
            check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        return GateRun(code=proc.returncode, stdout=proc.stdout, stderr=proc.stderr, out=out)


@pytest.fixture
def gate(signer_daemon: Any, executor_daemon: Any, operator_key: Any, tmp_path: Path) -> Gate:
    """The gate wired to a real signer and a real executor (both of ``operator_key``)."""
    work = tmp_path / "gate"
    work.mkdir()
    return Gate(
        signer=signer_daemon.address,
        executor=executor_daemon.address,
        keyring=operator_key.keyring_path,
        tmp=work,
    )


@contextlib.contextmanager
def own_gate(tmp: Path) -> Iterator[Gate]:
    """A gate whose signer and executor (of a new operator key) are its own, under ``tmp``."""
    from tests.conftest import make_key  # noqa: PLC0415 - the fixture modules load one another
    from tests.integration.fixtures_executor import start_executor  # noqa: PLC0415
    from tests.integration.fixtures_signer import start_signer  # noqa: PLC0415

    key = make_key(tmp / "operator", "operator")
    signer = start_signer([key.key_path], workdir=tmp)
    executor = start_executor(tmp, key.keyring_path)
    try:
        work = tmp / "gate"
        work.mkdir()
        yield Gate(
            signer=signer.address, executor=executor.address, keyring=key.keyring_path, tmp=work
        )
    finally:
        executor.stop()
        signer.stop()
        shutil.rmtree(signer.socket_dir, ignore_errors=True)
