"""Issue 23 item 3: a freeze citation holds only when its id is in the base's flake pin, the
citing test is one the flake lists, a skip/xfail reason carries the id and the signature, and the
review clock lies in [opened_on, expires_on) and before review_by. Anything else is R4 — read
from every pinned property and every test function of a touched file.

The CLI tests run ``patchgate check`` on a git copy of examples/billing; each patch touches the
oracle (R7), so the check stops before any daemon is dialled and the receipt lists every static
code, R4 included.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from client.cli import main
from client.verdict.citations import Citation, citation_problems
from patchgate.pins import Flake

ROOT = Path(__file__).resolve().parents[2]
BILLING = ROOT / "examples" / "billing"
PROPERTY_TEST = "properties/test_checkout.py::test_worker_drains_in_arrival_order"
FLK = Flake(
    id="FLK-1044",
    signature="TimeoutError: checkout_worker",
    opened_on=dt.date(2026, 9, 2),
    expires_on=dt.date(2026, 10, 16),
    tests=("tests/test_checkout.py::test_worker_drain", PROPERTY_TEST),
    review_by=dt.date(2026, 10, 1),
)
GOOD = "FLK-1044: TimeoutError: checkout_worker under load"


def _at(day: str) -> dt.datetime:
    return dt.datetime.fromisoformat(f"{day}T12:00:00+00:00")


def _problems(
    *, ids: tuple[str, ...] = ("FLK-1044",), test: str = PROPERTY_TEST, text: str = GOOD,
    day: str = "2026-09-10",
) -> list[str]:  # fmt: skip
    cite = Citation(cited_by="p", test_id=test, ids=ids, texts=(text,))
    return citation_problems(cite, [FLK], _at(day))


def test_a_citation_that_holds_has_no_problem() -> None:
    assert _problems() == []
    # the signature is matched after normalization (whitespace), the id anywhere in the reason
    assert _problems(text="quarantined: FLK-1044  TimeoutError:   checkout_worker") == []


@pytest.mark.parametrize(
    ("form", "kwargs", "says"),
    [
        ("unknown id", {"ids": ("FLK-9999",), "text": "FLK-9999: x"}, "not in the base flake"),
        ("test not listed", {"test": "tests/test_orders.py::test_x"}, "does not list"),
        ("id only", {"text": "FLK-1044"}, "without its signature"),
        ("other signature", {"text": "FLK-1044: ValueError: rounding"}, "without its signature"),
        ("signature, no id", {"text": "see FLK-1045: TimeoutError: checkout_worker"},
         "without its signature"),
        ("not yet open", {"day": "2026-09-01"}, "opens on 2026-09-02"),
        ("expiry day", {"day": "2026-10-16"}, "expired on 2026-10-16"),
        ("review_by day", {"day": "2026-10-01"}, "due for review on 2026-10-01"),
    ],
)  # fmt: skip
def test_each_invalid_citation_form_is_a_problem(
    form: str, kwargs: dict[str, object], says: str
) -> None:
    problems = _problems(**kwargs)  # type: ignore[arg-type]
    assert len(problems) == 1, form
    assert says in problems[0]


# through the CLI ------------------------------------------------------------------------------

WHO = ["-c", "user.name=p", "-c", "user.email=p@e"]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return proc.stdout.decode()


@pytest.fixture
def billing(tmp_path: Path) -> Path:
    repo = tmp_path / "billing"
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    for args in (["init", "-q"], ["add", "-A"], [*WHO, "commit", "-qm", "base"]):
        _git(repo, *args)
    return repo


def _patch(repo: Path, tmp: Path, edits: dict[str, str]) -> Path:
    """The patch of ``edits`` (path -> new text) against HEAD; the work tree is restored."""
    for rel, text in edits.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    diff = _git(repo, "diff", "--cached", "HEAD")
    _git(repo, "reset", "-q", "--hard", "HEAD")
    patch = tmp / "p.diff"
    patch.write_text(diff)
    return patch


def _check(repo: Path, tmp: Path, patch: Path, clock: str = "2026-09-10T12:00:00Z") -> dict:  # type: ignore[type-arg]
    out = tmp / "out"
    shutil.rmtree(out, ignore_errors=True)
    code = main([
        "check", "--repo", str(repo), "--base", "HEAD", "--patch", str(patch),
        "--draft-id", "d-1", "--drafter", "model_lane", "--clock", clock, "--out", str(out),
        "--signer", f"unix:{tmp}/nobody.sock", "--executor", f"unix:{tmp}/nobody-either.sock",
        "--quiet",
    ])  # fmt: skip
    assert code == 1
    receipt: dict = json.loads((out / "receipt.json").read_text())  # type: ignore[type-arg]
    return receipt


TOUCHED_TEST = """\
import pytest


@pytest.mark.skip(reason="{reason}")
def test_new():
    assert 1 + 1 == 2
"""


def _property_test(reason: str) -> str:
    text = (BILLING / "properties" / "test_checkout.py").read_text()
    return text.replace(GOOD, reason)


def test_the_example_citation_holds(billing: Path, tmp_path: Path) -> None:
    """Control: a touched test that does not cite leaves only R7 (and R1): no R4."""
    patch = _patch(billing, tmp_path, {"tests/test_new.py": TOUCHED_TEST.format(reason="slow")})
    r = _check(billing, tmp_path, patch)
    assert "R4" not in r["rejection_codes"]
    assert "R7" in r["rejection_codes"]
    assert r["freeze_citations"] == ["FLK-1044"]


@pytest.mark.parametrize(
    ("form", "edits"),
    [
        ("unknown id cited from a touched test that is not a property",
         {"tests/test_new.py": TOUCHED_TEST.format(reason="FLK-9999: TimeoutError: x")}),
        ("a touched test FLK-1044 does not list",
         {"tests/test_new.py": TOUCHED_TEST.format(reason=GOOD)}),
        ("the property cites the id without the signature",
         {"properties/test_checkout.py": _property_test("FLK-1044: flaky under load")}),
        ("the property cites an unknown id",
         {"properties/test_checkout.py": _property_test("FLK-7: TimeoutError: checkout_worker")}),
    ],
)  # fmt: skip
def test_each_invalid_citation_in_a_patch_is_r4(
    billing: Path, tmp_path: Path, form: str, edits: dict[str, str]
) -> None:
    r = _check(billing, tmp_path, _patch(billing, tmp_path, edits))
    assert "R4" in r["rejection_codes"], form


@pytest.mark.parametrize(
    ("clock", "review_by"),
    [
        ("2026-09-01T12:00:00Z", None),  # before opened_on
        ("2026-10-16T00:00:00Z", None),  # the expiry day
        ("2026-09-20T12:00:00Z", "2026-09-20"),  # the review_by day
    ],
)
def test_a_citation_outside_its_window_is_r4(
    billing: Path, tmp_path: Path, clock: str, review_by: str | None
) -> None:
    """The pinned property's citation of the base, judged at the review clock."""
    if review_by is not None:
        pin = json.loads((billing / "pins" / "flakes.json").read_text())
        pin["flakes"][0]["review_by"] = review_by
        (billing / "pins" / "flakes.json").write_text(json.dumps(pin))
        _git(billing, "add", "-A")
        _git(billing, *WHO, "commit", "-qm", "review by")
    patch = _patch(billing, tmp_path, {"tests/test_new.py": TOUCHED_TEST.format(reason="slow")})
    assert "R4" in _check(billing, tmp_path, patch, clock)["rejection_codes"]
