"""``verify-receipt --recompute`` on a real check's ledgers (issue 43).

One real check (signer and executor daemons, real sandboxes, the mutation stage on) of the
example's ``prorate_refactor.patch``, admitted; then the merge policy's command on its ``--out``
directory: 0 untouched, and 1 — the reason named — for each tampered copy: the receipt's
``admit``, credits or codes edited, a run result's outcome edited (its signature no longer
holds), a result signed by a key not in the keyring, a result bound to another patch, a result
of a request that ran another test under a property's id, a missing mutation statement, an extra
statement. One check serves every case (sandboxed runs are the
slow part; the recomputation reaches no daemon).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from patchgate.envelope import sign_envelope
from patchgate.keys import Keyring, Signer
from tests.conftest import KeyPair
from tests.integration.fixtures_executor import ExecutorProc, start_executor
from tests.integration.fixtures_gate import PATCHES, PATCHGATE, BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PATCH = PATCHES / "prorate_refactor.patch"
OTHER = PATCHES / "prorate_regression.patch"


@pytest.fixture
def pinned_executor(
    docker_engine: None, tmp_path: Path, operator_key: KeyPair, executor_key: KeyPair
) -> Iterator[ExecutorProc]:
    """An executor signing with a key the merge policy's keyring names (role executor)."""
    daemon = start_executor(
        tmp_path, operator_key.keyring_path, "--key", str(executor_key.key_path)
    )
    yield daemon
    daemon.stop()


@pytest.fixture
def policy_keyring(tmp_path: Path, operator_key: KeyPair, executor_key: KeyPair) -> Path:
    """One keyring: the operator key and the executor key by role."""
    ring = Keyring([operator_key.signer.keyring_entry(), executor_key.signer.keyring_entry()])
    path = tmp_path / "policy-keyring.json"
    ring.write(path)
    return path


def _recompute(repo: BillingRepo, out: Path, keyring: Path, patch: Path = PATCH) -> tuple[int, str]:
    proc = subprocess.run(
        [PATCHGATE, "verify-receipt", "--recompute", "--repo", str(repo.path), "--base", "HEAD",
         "--patch", str(patch), str(out), "--operator-keyring", str(keyring)],
        capture_output=True, text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return proc.returncode, proc.stdout + proc.stderr


def _payload(path: Path) -> dict[str, Any]:
    env = json.loads(path.read_text())
    return json.loads(base64.b64decode(env["payload"]))  # type: ignore[no-any-return]


def _resign(path: Path, statement: dict[str, Any], signer: Signer) -> None:
    body = json.dumps(statement, separators=(",", ":"), sort_keys=True).encode()
    path.write_text(json.dumps(sign_envelope(body, signer).to_json()))


def _statements(out: Path, mutation: bool) -> list[Path]:
    paths = sorted((out / "signed_runs").glob("*.json"))
    return [p for p in paths if bool(_payload(p)["predicate"].get("binding", {}).get("variants"))
            == mutation]  # fmt: skip


def test_the_merge_policy_recomputes_the_verdict_and_refuses_every_tampered_set(
    signer_daemon: Any,
    pinned_executor: ExecutorProc,
    operator_key: KeyPair,
    executor_key: KeyPair,
    policy_keyring: Path,
    billing_repo: BillingRepo,
    tmp_path: Path,
) -> None:
    work = tmp_path / "gate"
    work.mkdir()
    gate = Gate(signer=signer_daemon.address, executor=pinned_executor.address,
                keyring=operator_key.keyring_path, tmp=work)  # fmt: skip
    run = gate.check(billing_repo, "prorate_refactor.patch",
                     executor_keyring=str(executor_key.keyring_path))  # fmt: skip
    assert run.code == 0, run.stdout + run.stderr
    assert run.receipt["admit"] is True
    assert _statements(run.out, mutation=False)
    assert _statements(run.out, mutation=True)

    code, text = _recompute(billing_repo, run.out, policy_keyring)
    assert code == 0, text
    assert "RECOMPUTED ADMIT" in text

    def tampered(name: str, change: Callable[[Path], None]) -> tuple[int, str]:
        copy = tmp_path / f"tampered-{name}"
        shutil.copytree(run.out, copy)
        change(copy)
        return _recompute(billing_repo, copy, policy_keyring)

    def edit_receipt(**fields: Any) -> Callable[[Path], None]:
        def change(out: Path) -> None:
            receipt = json.loads((out / "receipt.json").read_text())
            (out / "receipt.json").write_text(json.dumps({**receipt, **fields}))

        return change

    # a rejected verdict's receipt edited to admit is no better: the receipt of another check
    # of this repository would not match; here each field of an admitted one is edited
    code, text = tampered("admit", edit_receipt(admit=False))
    assert (code, "receipt admit" in text) == (1, True), text
    code, text = tampered("credits", edit_receipt(credits={"billing.prorate": 0}))
    assert (code, "receipt credits" in text) == (1, True), text
    code, text = tampered("codes", edit_receipt(rejection_codes=["R1"]))
    assert (code, "receipt rejection_codes" in text) == (1, True), text

    def edit_outcome(out: Path) -> None:
        path = _statements(out, mutation=False)[0]
        env = json.loads(path.read_text())
        statement = json.loads(base64.b64decode(env["payload"]))
        for o in statement["predicate"]["report"]["outcomes"]:
            o["outcome"] = "OUTCOME_FAIL"
        env["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
        path.write_text(json.dumps(env))

    code, text = tampered("outcome", edit_outcome)
    assert (code, "unsigned:" in text) == (1, True), text

    stranger = Signer.generate("executor")

    def foreign_key(out: Path) -> None:
        path = _statements(out, mutation=False)[0]
        _resign(path, _payload(path), stranger)

    code, text = tampered("foreign-key", foreign_key)
    assert (code, "unsigned:" in text) == (1, True), text

    code, text = _recompute(billing_repo, run.out, policy_keyring, patch=OTHER)
    assert code == 1, text
    assert "mis-bound:" in text, text
    assert "not this base and patch" in text, text
    assert "receipt patch_sha256" in text, text

    def other_command(out: Path) -> None:
        """Signed by the real executor key, but for a request whose property id named another
        test (what a stolen client identity could ask for)."""
        path = _statements(out, mutation=False)[0]
        statement = _payload(path)
        first = statement["predicate"]["binding"]["properties"][0]
        first[1] = [*first[1][:-1], "tests/test_other.py::test_always_passes"]
        _resign(path, statement, executor_key.signer)

    code, text = tampered("other-command", other_command)
    assert (code, "not its pinned command" in text) == (1, True), text

    def drop_mutation(out: Path) -> None:
        _statements(out, mutation=True)[0].unlink()

    code, text = tampered("missing-mutation", drop_mutation)
    assert (code, "missing: no signed outcome of mutant" in text) == (1, True), text

    # a smaller cap in the receipt would let a chosen sample stand for the stage: the signed
    # batches name the cap they ran
    mutation = {**run.receipt["mutation"], "k": 1}
    code, text = tampered("cap", edit_receipt(mutation=mutation))
    assert (code, "receipt mutation.k" in text) == (1, True), text

    def extra(out: Path) -> None:
        first = _statements(out, mutation=False)[0]
        shutil.copy(first, out / "signed_runs" / "0-copy.json")

    code, text = tampered("extra", extra)
    assert (code, "extra:" in text) == (1, True), text

    def nothing_kept(out: Path) -> None:
        shutil.rmtree(out / "signed_runs")

    code, text = tampered("nothing", nothing_kept)
    assert (code, "missing: no signed run result" in text) == (1, True), text


def test_recompute_without_its_inputs_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [PATCHGATE, "verify-receipt", "--recompute", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert "--base" in proc.stderr
    assert "--operator-keyring" in proc.stderr
