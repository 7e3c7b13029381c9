"""Issue 17, the source rules still open, each through ``patchgate check`` with a real signer, a
real executor and Docker on the billing example: freeze citations (R3 only as the only signal; a
skip quarantine on a valid flake is a citation), the remote lane confirms a green local lane, second
pins (a copy refused, other bytes run and compared), overrides recorded and never applied,
provenance's stated fields, and unique ledger stamps.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.fixtures_gate import BillingRepo, Gate

pytestmark = [pytest.mark.integration, pytest.mark.docker]

QUARANTINED = "billing.checkout.drains_in_order"
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def _git(repo: BillingRepo, *args: str) -> str:
    who = ["-c", "user.name=p", "-c", "user.email=p@e"]
    return subprocess.run(
        ["git", "-C", str(repo.path), *who, *args], check=True, capture_output=True, text=True
    ).stdout


def _commit(repo: BillingRepo, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)


def _patch_of(repo: BillingRepo, path: str, old: str, new: str, out: Path) -> Path:
    """A patch (as an agent would send it) that replaces ``old`` with ``new`` in ``path``."""
    source = repo.path / path
    base = source.read_text()
    assert old in base
    source.write_text(base.replace(old, new))
    out.write_text(_git(repo, "diff"))
    source.write_text(base)
    return out


def _pin_property(repo: BillingRepo, entry: dict[str, object]) -> None:
    pins = repo.path / "pins" / "properties.json"
    doc = json.loads(pins.read_text())
    doc["properties"].append(entry)
    pins.write_text(json.dumps(doc, indent=2))


# -- freeze citations -----------------------------------------------------------------------------


def test_a_skip_quarantined_property_on_a_valid_flake_is_a_citation_not_a_miss(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """The example pins a property whose test is skipped citing FLK-1044 (valid at the clock):
    listed in freeze_citations and admission's skipped, never run, no credit, no error."""
    run = gate.check(billing_repo, "prorate_refactor.patch")
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert (r["posture"], r["admit"], r["rejection_codes"]) == ("human_review", True, [])
    assert r["freeze_citations"] == ["FLK-1044"]
    skipped = {s["property_id"]: s["reason"] for s in run.file("admission.json")["skipped"]}
    assert "FLK-1044 until 2026-10-16" in skipped[QUARANTINED]
    assert QUARANTINED not in run.file("property_ledger.json")["status_by_id"]


def test_an_expired_quarantine_runs_and_is_r4(gate: Gate, billing_repo: BillingRepo) -> None:
    """Once FLK-1044 expired the skip quarantines nothing: the citation is R4 and the skipped
    test is an error in both runs (a property miss) until a person acts."""
    run = gate.check(billing_repo, "prorate_refactor.patch", clock="2026-10-16T00:00:00Z")
    r = run.receipt
    assert run.code == 1
    assert "R4" in r["rejection_codes"]
    assert r["posture"] == "reject_property_miss"
    assert run.file("property_ledger.json")["status_by_id"][QUARANTINED] == "error"


def test_a_credited_predicate_beside_a_freeze_citation_gets_no_r3(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """A person pins a second, skip-quarantined property on billing.prorate: the real predicates
    credit prorate; the citation is listed, and R3 does not fire beside them."""
    test = billing_repo.path / "properties" / "test_checkout.py"
    test.write_text(
        test.read_text()
        + '\n\n@pytest.mark.skip(reason="FLK-1044: TimeoutError: checkout_worker")\n'
        "def test_prorate_under_checkout_load():\n"
        "    from decimal import Decimal\n\n"
        "    from billing import prorate\n\n"
        '    assert prorate(Decimal("10.00"), 30, 30) == Decimal("10.00")\n'
    )
    _pin_property(
        billing_repo,
        {"id": "billing.prorate.checkout_load", "claim": "prorate under checkout load",
         "class": "pure_fn", "covers": ["billing.prorate"],
         "command": [*PYTEST, "properties/test_checkout.py::test_prorate_under_checkout_load"]},
    )  # fmt: skip
    # issue 23: a citation holds only from a test the flake lists
    flakes = billing_repo.path / "pins" / "flakes.json"
    doc = json.loads(flakes.read_text())
    doc["flakes"][0]["tests"].append(
        "properties/test_checkout.py::test_prorate_under_checkout_load"
    )
    flakes.write_text(json.dumps(doc, indent=2))
    _commit(billing_repo, "a quarantined prorate property (FLK-1044)")
    run = gate.check(billing_repo, "prorate_refactor.patch")
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert (r["credits"], r["rejection_codes"], r["admit"]) == ({"billing.prorate": 1}, [], True)
    assert r["freeze_citations"] == ["FLK-1044"]
    assert (
        r["evidence"]["billing.prorate"]["billing.prorate.checkout_load"]["assertion_class"]
        == "freeze_ref"
    )


def test_a_freeze_citation_as_the_only_signal_is_r3(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """A patch to billing.checkout.drain_worker, whose only property is the quarantined one."""
    patch = _patch_of(
        billing_repo, "billing/checkout.py", "        if len(taken) == limit:\n",
        "        if len(taken) >= limit:\n", tmp_path / "drain.patch",
    )  # fmt: skip
    run = gate.check(billing_repo, patch)
    r = run.receipt
    assert run.code == 1, run.stdout + run.stderr
    assert r["rejection_codes"] == ["R1", "R3"]
    assert r["uncredited"] == {"billing.checkout.drain_worker": "a freeze citation only (R3)"}


# -- the remote lane ------------------------------------------------------------------------------


def test_a_local_failure_leaves_the_remote_lane_not_run(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "prorate_regression.patch", remote_executor=gate.executor)
    r = run.receipt
    assert run.code == 1
    assert r["posture"] == "reject_property_miss"
    assert r["lanes"]["remote"]["status"] == "not_run"
    assert "local lane did not pass" in r["lanes"]["remote"]["reason"]
    assert "results" not in r["lanes"]["remote"]


def test_a_green_local_lane_is_confirmed_for_pure_fn_properties_only(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    run = gate.check(billing_repo, "prorate_refactor.patch", remote_executor=gate.executor)
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    remote = r["lanes"]["remote"]
    assert remote["status"] == "ran"
    assert set(remote["status_by_id"]) == {
        "billing.prorate.non_negative",
        "billing.prorate.bounded",
        "billing.invoice_total.matches_fixture",
        "billing.prorate.exact",
    }  # not the idempotent_io boundary property
    assert r["credits"] == {"billing.prorate": 1}


# -- second pins ----------------------------------------------------------------------------------


def test_a_second_pin_that_copies_the_first_is_refused(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """The base's own fixtures.json again: same digest, same pin id. It compares nothing."""
    copy = tmp_path / "copy.json"
    shutil.copyfile(billing_repo.path / "pins" / "fixtures.json", copy)
    run = gate.check(billing_repo, "prorate_refactor.patch", second_pin=str(copy))
    r = run.receipt
    assert run.code == 0, run.stdout + run.stderr
    assert (r["dual_pin"], r["posture"]) == ("refused", "human_review")  # never "review"
    assert "second pin refused" in run.stdout
    assert "copy of the first" in run.stdout
    assert "drift.json" not in run.files()


def test_a_second_pin_with_other_bytes_runs_and_its_drift_is_r9_exit_3(
    gate: Gate, billing_repo: BillingRepo, tmp_path: Path
) -> None:
    """--second-pin-tree: a fixture tree whose stored invoice differs, pinned by its own pin. The
    suite really runs on those bytes; the fixture-equality property fails there: R9, exit 3."""
    tree = tmp_path / "fixtures-b"
    shutil.copytree(billing_repo.path / "fixtures", tree)
    (tree / "invoice.json").write_text('"999.99"\n')
    pin = json.loads((billing_repo.path / "pins" / "fixtures.json").read_text())
    pin["pin_id"] = "fixpin-billing-b"
    pin["files"]["fixtures/invoice.json"] = hashlib.sha256(b'"999.99"\n').hexdigest()
    second = tmp_path / "pin-b.json"
    second.write_text(json.dumps(pin))
    run = gate.check(
        billing_repo, "prorate_refactor.patch", second_pin=str(second), second_pin_tree=str(tree)
    )
    r = run.receipt
    assert run.code == 3, run.stdout + run.stderr
    assert (r["dual_pin"], r["posture"]) == ("drift", "reject_fixture_drift")
    assert "R9" in r["rejection_codes"]
    drift = run.file("drift.json")
    assert drift["differing"] == ["billing.invoice_total.matches_fixture"]
    assert drift["right"]["status_by_id"]["billing.invoice_total.matches_fixture"] == "fail"
    assert drift["left"]["fixture_digest"] != drift["right"]["fixture_digest"]


# -- overrides, provenance, stamps ---------------------------------------------------------------


def test_an_override_is_recorded_and_the_verdict_is_unchanged(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    plain = gate.check(billing_repo, "worked_example.patch")
    run = gate.check(
        billing_repo, "worked_example.patch", override_by="alice",
        override_reason="invoice snapshot reviewed by hand", model="m-7", interface="lane-a",
    )  # fmt: skip
    r, p = run.receipt, plain.receipt
    assert run.code == plain.code == 1
    for key in ("credits", "coverage", "rejection_codes", "posture", "admit", "decision"):
        assert r[key] == p[key], key
    assert (r["override"]["by"], r["override"]["reason"]) == (
        "alice",
        "invoice snapshot reviewed by hand",
    )
    assert p["override"] == {}
    assert "override by alice: invoice snapshot reviewed by hand" in run.stdout
    prov = run.file("provenance.json")
    assert (prov["model"], prov["interface"]) == ("m-7", "lane-a")
    assert (plain.file("provenance.json")["model"], p["dual_pin"]) == ("", "not_run")
    stamps = [
        json.loads(f.read_text())["recorded_at"]
        for f in run.out.glob("*.json")
        if "recorded_at" in json.loads(f.read_text())
    ]
    assert len(stamps) >= 5
    assert len(set(stamps)) == len(stamps)  # no two ledgers of one check share a recorded_at


def test_override_flags_go_together(gate: Gate, billing_repo: BillingRepo) -> None:
    run = gate.check(billing_repo, "worked_example.patch", override_by="alice")
    assert run.code == 64
    assert "--override-reason" in run.stderr
    assert not run.out.exists() or "receipt.json" not in run.files()


# -- class meanings (item 1) ----------------------------------------------------------------------

ORDER_TESTS = """\
import os
from decimal import Decimal

from billing import prorate

MARKER = "/tmp/patchgate-order-marker"


def test_a_marks():
    open(MARKER, "w").close()
    assert prorate(Decimal("10.00"), 30, 30) == Decimal("10.00")


def test_b_before_a():
    assert prorate(Decimal("10.00"), 30, 30) == Decimal("10.00") and not os.path.exists(MARKER)


def test_leaves_another_file():
    out = os.environ["PATCHGATE_OUTPUT"]
    with open(os.path.join(out, f"apply-{os.urandom(4).hex()}"), "w") as fh:
        fh.write("applied")
    assert prorate(Decimal("10.00"), 15, 30) == Decimal("5.00")
"""


def _order_properties(repo: BillingRepo, b_class: str, tree_class: str | None = None) -> None:
    """A person's base commit: two properties in one batch whose run order decides ``b``
    (run 2 runs the batch in the reverse order of run 1), and optionally one that leaves another
    file in its output area on every apply."""
    (repo.path / "properties" / "test_order.py").write_text(ORDER_TESTS)
    node = "properties/test_order.py::"
    entries = [("order.a", "pure_fn", "test_a_marks"), ("order.b", b_class, "test_b_before_a")]
    if tree_class:
        entries.append(("order.tree", tree_class, "test_leaves_another_file"))
    for pid, klass, test in entries:
        _pin_property(
            repo,
            {"id": pid, "claim": pid, "class": klass, "covers": ["billing.orders.load_orders"],
             "command": [*PYTEST, node + test]},
        )  # fmt: skip
    _commit(repo, "order-dependent properties")


def test_an_idempotent_io_property_whose_second_apply_leaves_another_file_is_unstable(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    _order_properties(billing_repo, "pure_fn", tree_class="idempotent_io")
    run = gate.check(billing_repo, "prorate_refactor.patch")
    ledger = run.file("property_ledger.json")
    assert ledger["status_by_id"]["order.tree"] == "unstable", run.stdout + run.stderr
    trees = [x["tree_hash"] for x in ledger["runs"] if x["property_id"] == "order.tree"]
    assert len(trees) == 2
    assert all(trees)
    assert trees[0] != trees[1]
    assert "unstable: order.tree two applies left different trees" in run.stdout
    # a property that leaves nothing behind left the same (empty) tree twice
    same = [x["tree_hash"] for x in ledger["runs"] if x["property_id"] == "order.a"]
    assert same[0] == same[1] != ""
    assert (run.code, run.receipt["posture"]) == (1, "reject_credit")


def test_a_pure_fn_that_disagrees_with_itself_proposes_no_freeze(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """order.b passes in one run and fails in the other (the batch order decides): unstable. A
    pure function that disagrees with itself is a defect: no freeze proposal."""
    _order_properties(billing_repo, "pure_fn")
    run = gate.check(billing_repo, "prorate_refactor.patch")
    assert run.file("property_ledger.json")["status_by_id"]["order.b"] == "unstable"
    assert "freeze_proposal.json" not in run.files()
    assert run.code == 1


def test_an_idempotent_io_disagreement_on_the_same_tree_proposes_a_freeze(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    _order_properties(billing_repo, "idempotent_io")
    run = gate.check(billing_repo, "prorate_refactor.patch")
    ledger = run.file("property_ledger.json")
    assert ledger["status_by_id"]["order.b"] == "unstable"
    (proposal,) = run.file("freeze_proposal.json")["proposals"]
    assert proposal["property_id"] == "order.b"
    assert proposal["fixture_digest"] == run.receipt["fixture_digest"]
    runs = sorted((x for x in ledger["runs"] if x["property_id"] == "order.b"),
                  key=lambda x: x["run_index"])  # fmt: skip
    assert proposal["outcome_hashes"] == [x["outcome_hash"] for x in runs]
    assert run.code == 1


def test_a_second_pin_from_a_revision_runs_on_that_revisions_bytes(
    gate: Gate, billing_repo: BillingRepo
) -> None:
    """--second-pin-rev REV: the pin file and the fixture tree of another revision (here a branch
    whose stored invoice differs): run, compared, drift R9, exit 3."""
    base = _git(billing_repo, "rev-parse", "HEAD").strip()
    _git(billing_repo, "checkout", "-q", "-b", "pin-b")
    (billing_repo.path / "fixtures" / "invoice.json").write_text('"999.99"\n')
    pins = billing_repo.path / "pins" / "fixtures.json"
    pin = json.loads(pins.read_text())
    pin["pin_id"] = "fixpin-billing-b"
    pin["files"]["fixtures/invoice.json"] = hashlib.sha256(b'"999.99"\n').hexdigest()
    pins.write_text(json.dumps(pin, indent=2))
    _commit(billing_repo, "pin b: another stored invoice")
    _git(billing_repo, "checkout", "-q", base)
    run = gate.check(billing_repo, "prorate_refactor.patch", second_pin_rev="pin-b")
    r = run.receipt
    assert run.code == 3, run.stdout + run.stderr
    assert (r["dual_pin"], r["rejection_codes"]) == ("drift", ["R9"])
    drift = run.file("drift.json")
    assert drift["right"]["pin_id"] == "fixpin-billing-b"
    assert drift["differing"] == ["billing.invoice_total.matches_fixture"]
