"""``patchgate properties`` up to the signer (issue 23 item 5): every refusal before a daemon is
dialled, through the CLI, on a git copy of examples/billing. The run itself is
tests/integration/test_gate_properties.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from client.cli import main
from client.gate.properties import oracle_moved
from client.gate.workspace import Workspace, base_pins, tree_at

ROOT = Path(__file__).resolve().parents[2]
BILLING = ROOT / "examples" / "billing"
WHO = ["-c", "user.name=p", "-c", "user.email=p@e"]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return proc.stdout.decode().strip()


@pytest.fixture
def billing(tmp_path: Path) -> Path:
    repo = tmp_path / "billing"
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    for args in (["init", "-q"], ["add", "-A"], [*WHO, "commit", "-qm", "base"]):
        _git(repo, *args)
    return repo


def _digest(repo: Path, tmp: Path, capsys: pytest.CaptureFixture[str]) -> str:
    pin = repo / "pins" / "fixtures.json"
    assert main(["digest", "--pin", str(pin), "--root", str(repo), "--out", str(tmp / "fx")]) == 0
    return capsys.readouterr().out.strip()


def _properties(repo: Path, tmp: Path, digest: str, *extra: str) -> int:
    return main([
        "properties", "--repo", str(repo), "--base", "HEAD", "--expect-digest", digest,
        "--signer", f"unix:{tmp}/nobody.sock", "--executor", f"unix:{tmp}/nobody-either.sock",
        "--out", str(tmp / "out" / "property_ledger.json"), *extra,
    ])  # fmt: skip


def test_another_digest_is_refused_with_2_and_no_ledger(
    billing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live = _digest(billing, tmp_path, capsys)
    assert _properties(billing, tmp_path, "0" * 64) == 2
    assert f"the live digest {live} is not the expected" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_rev_whose_fixtures_changed_is_refused_on_the_bases_digest(
    billing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live = _digest(billing, tmp_path, capsys)
    (billing / "fixtures" / "invoice.json").write_text('{"total": "0.00"}\n')
    _git(billing, "add", "-A")
    _git(billing, *WHO, "commit", "-qm", "rewrite a fixture")
    assert _properties(billing, tmp_path, live, "--base", "HEAD~1", "--rev", "HEAD") == 2
    assert "fixtures/invoice.json" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_no_fixture_root_is_refused_with_2(
    billing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(billing / "fixtures")
    pin = json.loads((billing / "pins" / "fixtures.json").read_text())
    pin["files"] = {}
    (billing / "pins" / "fixtures.json").write_text(json.dumps(pin))
    _git(billing, "add", "-A")
    _git(billing, *WHO, "commit", "-qm", "no fixtures")
    assert _properties(billing, tmp_path, "0" * 64) == 2
    assert "no fixture root" in capsys.readouterr().err


def test_the_expected_digest_goes_on_to_the_signer(
    billing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The digest matches; the signer is unreachable: transport (4), still no ledger."""
    live = _digest(billing, tmp_path, capsys)
    assert _properties(billing, tmp_path, live) == 4
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--rev", "no-such-rev"), "no-such-rev"),
        (("--out", "pins/property_ledger.json"), "never writes where it reads"),
    ],
)
def test_usage_errors_are_64(
    billing: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    says: str,
) -> None:
    extra = tuple(str(billing / e) if e.startswith("pins/") else e for e in extra)
    assert _properties(billing, tmp_path, "a" * 64, *extra) == 64
    assert says in capsys.readouterr().err
    assert main(["properties", "--repo", str(billing), "--base", "HEAD", "--expect-digest",
                 "XYZ", "--out", str(tmp_path / "o")]) == 64  # fmt: skip


def test_oracle_moved_is_whether_the_oracle_differs_between_base_and_rev(billing: Path) -> None:
    base = _git(billing, "rev-parse", "HEAD")
    (billing / "billing" / "orders.py").write_text(
        (billing / "billing" / "orders.py").read_text() + "\n# production only\n"
    )
    _git(billing, "add", "-A")
    _git(billing, *WHO, "commit", "-qm", "production")
    source_only = _git(billing, "rev-parse", "HEAD")
    test = billing / "properties" / "test_billing.py"
    test.write_text(test.read_text().replace("for _ in range(500):", "for _ in range(499):"))
    _git(billing, "add", "-A")
    _git(billing, *WHO, "commit", "-qm", "a predicate edited")
    pins = base_pins(billing, base)

    def moved(rev: str) -> bool:
        with tree_at(billing, base) as b, tree_at(billing, rev) as r:
            return oracle_moved(
                Workspace(repo=billing, base_rev=base, base_dir=b, patched_dir=r), pins
            )

    assert moved(base) is False
    assert moved(source_only) is False
    assert moved("HEAD") is True


def test_only_a_citation_that_holds_holds_a_property_back(billing: Path) -> None:
    """As in a check: the example's checkout property is quarantined while FLK-1044 lists it;
    once the flake does not list the citing test, the citation is no quarantine and it runs."""
    import datetime as dt  # noqa: PLC0415

    from client.gate.properties import _suite  # noqa: PLC0415

    clock = dt.datetime(2026, 9, 10, 12, tzinfo=dt.UTC)
    checkout = "billing.checkout.drains_in_order"
    pins = base_pins(billing, "HEAD")
    with tree_at(billing, "HEAD") as root:
        suite, held = _suite(pins, root, clock)
    assert checkout not in {p.id for p in suite}
    assert any(line.startswith(checkout) for line in held)
    pin = json.loads((billing / "pins" / "flakes.json").read_text())
    pin["flakes"][0]["tests"] = ["tests/test_checkout.py::test_worker_drain"]
    (billing / "pins" / "flakes.json").write_text(json.dumps(pin))
    _git(billing, "add", "-A")
    _git(billing, *WHO, "commit", "-qm", "FLK-1044 lists only the worker drain")
    pins = base_pins(billing, "HEAD")
    with tree_at(billing, "HEAD") as root:
        suite, held = _suite(pins, root, clock)
    assert checkout in {p.id for p in suite}
    assert held == []
