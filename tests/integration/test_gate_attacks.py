"""The attack corpus (tests/attacks/) through ``patchgate check`` with a real signer, a real
executor and real containers (issue 13): no attack is admitted, each is rejected with the codes
its manifest entry names, and the receipt names every path the patch changed. The controls (benign
patches) must be admitted, so this test can fail.

One daemon pair serves the whole module; each entry gets a fresh copy of its target repository.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.attacks.repos import CORPUS, REPOS, Entry, build, entries
from tests.conftest import make_key
from tests.integration.fixtures_executor import start_executor
from tests.integration.fixtures_gate import BillingRepo, Gate
from tests.integration.fixtures_signer import start_signer

pytestmark = [pytest.mark.integration, pytest.mark.docker]


@pytest.fixture(scope="module")
def attack_gate(docker_engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gate]:
    """One signer and one executor of one operator key for every entry of the corpus."""
    tmp = tmp_path_factory.mktemp("attacks")
    key = make_key(tmp / "operator", "operator")
    signer = start_signer([key.key_path], workdir=tmp)
    executor = None
    try:  # the signer is stopped even when the executor does not start
        executor = start_executor(tmp, key.keyring_path)
        work = tmp / "gate"
        work.mkdir()
        yield Gate(
            signer=signer.address, executor=executor.address, keyring=key.keyring_path, tmp=work
        )
    finally:
        if executor is not None:
            executor.stop()
        signer.stop()
        shutil.rmtree(signer.socket_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("attack-bases")
    return {name: build(name, root / name) for name in REPOS}


def _changed_paths(base: Path, patch: Path, tmp: Path) -> list[str]:
    """What ``git apply -p1`` changes, asked of git directly (not of the gate): [] if refused."""
    work = tmp / "applied"
    shutil.copytree(base, work, symlinks=True)
    proc = subprocess.run(
        ["git", "apply", "-p1", str(patch)], cwd=work, capture_output=True, check=False
    )
    if proc.returncode != 0:
        return []
    subprocess.run(["git", "add", "-A"], cwd=work, check=True, capture_output=True)
    out = subprocess.run(
        ["git", "diff", "--cached", "--name-only", "--no-renames", "-z"],
        cwd=work, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return sorted(p for p in out.split("\0") if p)


def _named(receipt: dict[str, Any], path: str) -> bool:
    """``path`` is an excluded path of the receipt or the file of one of its changed symbols."""
    if path in receipt["excluded_paths"]:
        return True
    stem = path.removesuffix(".py").removesuffix("/__init__")
    parts = stem.split("/")
    candidates = {".".join(parts[i:]) for i in range(len(parts))}  # a module from any root
    return any(
        s.removeprefix("module:") in candidates or any(s.startswith(m + ".") for m in candidates)
        for s in receipt["changed_symbols"]
    )


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.id)
def test_attack_corpus_entry(
    entry: Entry, attack_gate: Gate, bases: dict[str, Path], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(bases[str(entry["repo"])], repo, symlinks=True)
    run = attack_gate.check(BillingRepo(repo), entry.patch)
    receipt = run.receipt
    where = f"{entry.id}: exit {run.code}\n{run.stdout}\n{run.stderr}"
    assert run.code == entry["exit"], where
    if entry.get("control"):
        assert receipt["admit"] is True, where
    else:
        assert receipt["admit"] is False, where
    for key in ("decision", "posture"):
        if key in entry:
            assert receipt[key] == entry[key], where
    assert set(entry["codes"]) <= set(receipt["rejection_codes"]), where  # type: ignore[arg-type]
    assert set(entry.get("symbols", [])) <= set(receipt["changed_symbols"]), where  # type: ignore[arg-type]
    for symbol, why in dict(entry.get("uncredited", {})).items():  # type: ignore[call-overload]
        assert why in receipt["uncredited"].get(symbol, ""), where
    if "reason_in" in entry:
        assert str(entry["reason_in"]) in run.stdout + run.stderr, where
    if "reason" in entry:
        assert any(str(entry["reason"]) in r for r in run.file("admission.json")["reasons"]), where
    if "refused" in entry:  # one admission.json shows every property of the batch refused
        reasons = " ".join(run.file("admission.json")["reasons"])
        for pid in entry["refused"]:  # type: ignore[attr-defined]
            assert f"{pid} covers billing.prorate but its assertions are tautological" in reasons
    changed = _changed_paths(repo, entry.patch, tmp_path)
    assert [p for p in changed if not _named(receipt, p)] == [], where


def test_a_covers_entry_naming_nothing_is_a_configuration_error(
    attack_gate: Gate, bases: dict[str, Path], tmp_path: Path
) -> None:
    """``check`` and ``pin check`` both exit 78 and name the entry and the nearest name (issue
    22, item 1): it used to be a warning, and covered a function a patch added under that name."""
    repo = tmp_path / "repo"
    shutil.copytree(bases["textkit"], repo, symlinks=True)
    props = repo / "pins" / "properties.json"
    props.write_text(props.read_text().replace('"textkit"\n', '"textkit.sub.word"\n', 1))
    subprocess.run(
        ["git", "-c", "user.name=p", "-c", "user.email=p@e", "commit", "-qam", "typo"],
        cwd=repo, check=True,
    )  # fmt: skip
    run = attack_gate.check(
        BillingRepo(repo), CORPUS / "patches" / "control_textkit_refactor.patch"
    )
    assert run.code == 78, run.stdout + run.stderr
    assert "covers entry 'textkit.sub.word' names no symbol of the base tree" in run.stderr
    assert "did you mean textkit.sub.words?" in run.stderr
    assert "receipt.json" not in run.files()  # nothing scored
    pin = subprocess.run(
        [str(Path(sys.executable).parent / "patchgate"), "pin", "check", "--repo", str(repo),
         "--rev", "HEAD"],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert pin.returncode == 78, pin.stdout + pin.stderr
    assert "'textkit.sub.word' names no symbol" in pin.stdout + pin.stderr


def test_a_base_whose_attributes_change_scored_bytes_is_a_configuration_error(
    attack_gate: Gate, bases: dict[str, Path], tmp_path: Path
) -> None:
    """A base ``.gitattributes`` with ``export-subst`` on production code: checkout and export of
    the merged commit differ from the blobs the gate scores, so ``check`` exits 78 naming the file
    and the attribute (issue 22, item 4); plain ``text eol=lf`` is fine (the control)."""
    repo = tmp_path / "repo"
    shutil.copytree(bases["textkit"], repo, symlinks=True)
    attrs = repo / ".gitattributes"
    attrs.write_text("* text eol=lf\nsrc/textkit/core.py export-subst\n", encoding="utf-8")
    subprocess.run(["git", "add", ".gitattributes"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=p", "-c", "user.email=p@e", "commit", "-qm", "attrs"],
        cwd=repo, check=True,
    )  # fmt: skip
    patch = CORPUS / "patches" / "control_textkit_refactor.patch"
    run = attack_gate.check(BillingRepo(repo), patch)
    assert run.code == 78, run.stdout + run.stderr
    assert "src/textkit/core.py: the base's .gitattributes (line 2) gives it export-subst" in (
        run.stderr
    )
    attrs.write_text("* text eol=lf\n", encoding="utf-8")
    subprocess.run(
        ["git", "-c", "user.name=p", "-c", "user.email=p@e", "commit", "-qam", "lf only"],
        cwd=repo, check=True,
    )  # fmt: skip
    control = attack_gate.check(BillingRepo(repo), patch)
    assert control.code == 0, control.stdout + control.stderr
