"""``patchgate digest``: the DESIGN vector end to end, refusals with exit 2 and no file."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from client.cli import main

VECTOR = "6ea8f3fe7ff21bd234d472a92daa33697534e140f1426d7981174b0181b87302"
FILES = {"fixtures/b.txt": b"hello", "fixtures/a.json": b'{"x": 1}\n'}


def _write_repo(
    root: Path, files: dict[str, bytes], pinned: dict[str, bytes] | None = None
) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    pin = {
        "pin_id": "fixpin-vector",
        "algorithm": "sha256",
        "files": {p: hashlib.sha256(d).hexdigest() for p, d in (pinned or files).items()},
        "seed": 7,
        "clock_bound_ms": 30000,
        "allowed_commands": [
            ["python", "-m", "pytest", "-q"],
            ["python", "-m", "pytest", "-q", "-k", "prorate"],
        ],
    }
    (root / "pins").mkdir(exist_ok=True)
    (root / "pins" / "fixtures.json").write_text(json.dumps(pin))
    return root / "pins" / "fixtures.json"


def _digest(pin: Path, root: Path, out: Path, *extra: str) -> int:
    return main(["digest", "--pin", str(pin), "--root", str(root), "--out", str(out), *extra])


def test_reproduces_design_vector(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The two DESIGN files and commands give the DESIGN digest, printed and in the ledger."""
    pin = _write_repo(tmp_path / "repo", FILES)
    out = tmp_path / "out" / "fixture_ledger.json"
    assert _digest(pin, tmp_path / "repo", out) == 0
    assert capsys.readouterr().out.strip() == VECTOR
    ledger = json.loads(out.read_text())
    assert ledger["kind"] == "fixture"
    assert ledger["digest"] == VECTOR
    assert ledger["pin_id"] == "fixpin-vector"
    assert ledger["status"] == "match"
    assert ledger["files"]["fixtures/b.txt"] == {
        "sha256": hashlib.sha256(b"hello").hexdigest(),
        "size": 5,
    }
    assert ledger["recorded_at"].endswith("Z")


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints the ledger object."""
    pin = _write_repo(tmp_path / "repo", FILES)
    assert _digest(pin, tmp_path / "repo", tmp_path / "l.json", "--json") == 0
    assert json.loads(capsys.readouterr().out)["digest"] == VECTOR


def test_out_directory_gets_default_name(tmp_path: Path) -> None:
    """An existing directory as --out receives fixture_ledger.json."""
    pin = _write_repo(tmp_path / "repo", FILES)
    (tmp_path / "ledgers").mkdir()
    assert _digest(pin, tmp_path / "repo", tmp_path / "ledgers") == 0
    assert (tmp_path / "ledgers" / "fixture_ledger.json").is_file()


@pytest.mark.parametrize(
    ("mutate", "listed"),
    [
        (lambda r: (r / "fixtures/b.txt").unlink(), "missing: fixtures/b.txt"),
        (lambda r: (r / "fixtures/c.txt").write_text("c"), "unpinned (extra): fixtures/c.txt"),
        (lambda r: os.symlink("/etc/hostname", r / "fixtures/s"), "unsafe: fixtures/s"),
        (lambda r: (r / "fixtures/b.txt").write_bytes(b"hellO"), "hash mismatch: fixtures/b.txt"),
    ],
    ids=["missing", "extra", "unsafe", "mismatch"],
)
def test_refusal_exit_2_and_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate: object, listed: str
) -> None:
    """Missing, extra, unsafe or mismatched files: exit 2, the file listed, no ledger written."""
    root = tmp_path / "repo"
    pin = _write_repo(root, FILES)
    mutate(root)  # type: ignore[operator]
    out = tmp_path / "fixture_ledger.json"
    assert _digest(pin, root, out) == 2
    err = capsys.readouterr().err
    assert listed in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_refusal_leaves_previous_ledger_untouched(tmp_path: Path) -> None:
    """A refused run does not replace an earlier ledger at --out."""
    root = tmp_path / "repo"
    pin = _write_repo(root, FILES)
    out = tmp_path / "fixture_ledger.json"
    out.write_text("earlier")
    (root / "fixtures/b.txt").write_bytes(b"changed")
    assert _digest(pin, root, out) == 2
    assert out.read_text() == "earlier"


@pytest.mark.parametrize("where", ["pins/fixture_ledger.json", "pins", "fixtures/ledger.json"])
def test_never_writes_into_pins_or_fixtures(tmp_path: Path, where: str) -> None:
    """--out inside the pins directory (or the fixture tree) is a usage error (64), no file."""
    root = tmp_path / "repo"
    pin = _write_repo(root, FILES)
    before = sorted(p.name for p in (root / "pins").iterdir())
    assert _digest(pin, root, root / where) == 64
    assert sorted(p.name for p in (root / "pins").iterdir()) == before
    assert not (root / "fixtures" / "ledger.json").exists()


def test_pins_dir_of_pin_file_is_protected(tmp_path: Path) -> None:
    """The directory holding --pin is the pins directory even when it is not ROOT/pins."""
    root = tmp_path / "repo"
    _write_repo(root, FILES)
    elsewhere = tmp_path / "base-pins"
    elsewhere.mkdir()
    (elsewhere / "fixtures.json").write_bytes((root / "pins/fixtures.json").read_bytes())
    assert _digest(elsewhere / "fixtures.json", root, elsewhere / "out.json") == 64
    assert not (elsewhere / "out.json").exists()


def test_malformed_pin_is_error_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pin that is not valid JSON: exit 1, one line naming the file."""
    root = tmp_path / "repo"
    pin = _write_repo(root, FILES)
    pin.write_text("{not json")
    assert _digest(pin, root, tmp_path / "o.json") == 1
    assert "fixtures.json" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def test_missing_flag_is_usage_64(tmp_path: Path) -> None:
    """A missing required flag exits 64."""
    assert main(["digest", "--root", str(tmp_path)]) == 64


def test_fixture_root_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--fixture-root names another fixture directory; paths stay relative to ROOT."""
    root = tmp_path / "repo"
    files = {"data/b.txt": b"hello", "data/a.json": b'{"x": 1}\n'}
    pin = _write_repo(root, files)
    assert _digest(pin, root, tmp_path / "o.json", "--fixture-root", "data") == 0
    out = capsys.readouterr().out.strip()
    assert out != VECTOR  # paths are part of the digest
    assert json.loads((tmp_path / "o.json").read_text())["digest"] == out


def test_billing_example_matches_its_pin(tmp_path: Path) -> None:
    """examples/billing is consistent with its own fixture pin."""
    billing = Path(__file__).resolve().parents[2] / "examples" / "billing"
    assert _digest(billing / "pins" / "fixtures.json", billing, tmp_path / "fl.json") == 0


@pytest.mark.parametrize("pinned", [{}, {"fixtures/a.json": b"x"}])
def test_a_tree_with_no_fixture_root_is_refused_with_2_and_no_file(
    tmp_path: Path, pinned: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23: an empty pin on a tree without fixtures/ exited 0 with "status": "match" (a
    green digest of nothing); it is refused like any other scan problem."""
    repo = tmp_path / "repo"
    repo.mkdir()
    pin = _write_repo(repo, {}, pinned)
    out = tmp_path / "out" / "fixture_ledger.json"
    assert _digest(pin, repo, out) == 2
    assert "no fixture root fixtures/" in capsys.readouterr().err
    assert not out.exists()
    assert not out.parent.exists()


def test_an_empty_fixture_root_with_an_empty_pin_is_refused_with_2_and_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41 (stale row): an empty fixtures/ with an empty pin exited 0 with "status":
    "match" -- a digest of nothing, which DESIGN §7 never lets admit (not_applicable)."""
    repo = tmp_path / "repo"
    (repo / "fixtures").mkdir(parents=True)
    pin = _write_repo(repo, {}, {})
    out = tmp_path / "out" / "fixture_ledger.json"
    assert _digest(pin, repo, out) == 2
    assert "nothing to digest" in capsys.readouterr().err
    assert not out.exists()


def test_one_pinned_fixture_is_still_a_match(tmp_path: Path) -> None:
    """The honest shape: the smallest fixture root that can falsify a claim digests."""
    repo = tmp_path / "repo"
    repo.mkdir()
    pin = _write_repo(repo, {"fixtures/a.json": b"{}"})
    out = tmp_path / "out" / "fixture_ledger.json"
    assert _digest(pin, repo, out) == 0
    assert json.loads(out.read_text())["status"] == "match"
