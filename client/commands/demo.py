"""``patchgate demo``: the whole gate on examples/billing with local daemons, start to finish.

1. a temporary operator key; 2. ``patchgate-signerd`` and ``patchgate-executord`` as two separate
processes on unix sockets (the executor gets only the public keyring); 3. a Docker engine (started
with scripts/docker.sh only if none answers) and the local ``host`` sandbox image; 4. the billing
example committed as the base of a fresh git repository; 5. ``patchgate check`` on a passing patch
(expects admit, exit 0) and on the worked example (expects credits 1/0, coverage 0.5, R1 and R5,
fixtures ``match``, the freeze citation FLK-1044, exit 1), both at the example's review clock;
6. both daemons stopped, sockets and containers removed, the engine stopped if the demo started it.
Exit 0 when both verdicts are the expected ones.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client.lanes.daemons import console_script
from client.lanes.engine import ensure_engine, repo_root
from client.lanes.local import LaneSettings, lane_down, lane_up
from patchgate import git
from patchgate.errors import PatchgateError

__all__ = ["Expectation", "register", "run"]

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "patchgate demo",
    "GIT_AUTHOR_EMAIL": "demo@patchgate.invalid",
    "GIT_COMMITTER_NAME": "patchgate demo",
    "GIT_COMMITTER_EMAIL": "demo@patchgate.invalid",
}


@dataclass(frozen=True, kw_only=True)
class Expectation:
    """One demo case: a sample patch and the verdict it must get."""

    name: str
    patch: str
    exit_code: int
    admit: bool
    codes: tuple[str, ...] = ()
    credits: tuple[tuple[str, int], ...] = ()
    coverage: float | None = None
    fixture_status: str | None = None
    freeze_citations: tuple[str, ...] | None = None

    def problems(self, code: int, receipt: dict[str, Any]) -> list[str]:
        """What differs from the expected verdict (empty when it is the expected one)."""
        out = []
        if code != self.exit_code:
            out.append(f"exit {code}, expected {self.exit_code}")
        if receipt.get("admit") is not self.admit:
            out.append(f"admit {receipt.get('admit')}, expected {self.admit}")
        missing = set(self.codes) - set(receipt.get("rejection_codes", []))
        if missing:
            out.append(f"rejection codes {receipt.get('rejection_codes')} lack {sorted(missing)}")
        credits = receipt.get("credits", {})
        for symbol, points in self.credits:
            if credits.get(symbol) != points:
                out.append(f"credit of {symbol} is {credits.get(symbol)}, expected {points}")
        if self.coverage is not None and receipt.get("coverage") != self.coverage:
            out.append(f"coverage {receipt.get('coverage')}, expected {self.coverage}")
        for name in ("fixture_status", "freeze_citations"):
            want = getattr(self, name)
            got = receipt.get(name)
            if want is not None and (list(want) if isinstance(want, tuple) else want) != got:
                out.append(f"{name} {got!r}, expected {want!r}")
        return out


# The example's review clock: its flake FLK-1044 (which quarantines a property) is dated, so the
# demo reviews at the clock of the reference receipt, and reproduces it on any day.
REVIEW_CLOCK = "2026-10-01T12:00:00Z"

CASES = (
    Expectation(name="passing", patch="prorate_refactor.patch", exit_code=0, admit=True),
    Expectation(
        name="worked-example",
        patch="worked_example.patch",
        exit_code=1,
        admit=False,
        codes=("R1", "R5"),
        credits=(("billing.prorate", 1), ("billing.invoice_total", 0)),
        coverage=0.5,
        fixture_status="match",
        freeze_citations=("FLK-1044",),
    ),
)


def _say(msg: str) -> None:
    sys.stderr.write(f"demo: {msg}\n")
    sys.stderr.flush()


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``demo``."""
    p = subparsers.add_parser(
        "demo",
        help="run the whole gate on examples/billing with local daemons",
        description=__doc__,
    )
    p.add_argument(
        "--example", type=Path, metavar="DIR", help="example repository (default: examples/billing)"
    )
    p.add_argument(
        "--out", type=Path, default=Path("ledgers/demo"), metavar="DIR", help="ledger directory"
    )
    p.add_argument("--keep", action="store_true", help="keep the temporary state directory")
    p.set_defaults(func=run)


def _git(repo: Path, *args: str) -> str:
    proc = git.run(repo, *args, env=_GIT_ENV)
    if proc.returncode != 0:
        raise PatchgateError(f"git {args[0]}: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout.decode("utf-8", "replace").strip()


def _base_repo(example: Path, work: Path) -> tuple[Path, str]:
    repo = work / "billing"
    shutil.copytree(
        example, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "patches")
    )
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "billing example: base revision with human pins")
    return repo, _git(repo, "rev-parse", "HEAD")


def _check(
    case: Expectation, *, repo: Path, base: str, patches: Path, lane: Any, out: Path
) -> list[str]:
    ledgers = out / case.name
    argv = [
        *console_script("patchgate"),
        "check",
        "--repo", str(repo),
        "--base", base,
        "--patch", str(patches / case.patch),
        "--draft-id", f"demo-{case.name}",
        "--drafter", "model_lane",
        "--signer", lane.signer.address,
        "--executor", lane.executor.address,
        "--operator-keyring", lane.operator_keyring,
        "--clock", REVIEW_CLOCK,
        "--out", str(ledgers),
    ]  # fmt: skip
    sys.stdout.write(f"\n=== {case.name}: patchgate check --patch {case.patch} ===\n")
    sys.stdout.flush()
    code = subprocess.run(argv, check=False, stdin=subprocess.DEVNULL).returncode
    try:
        receipt = json.loads((ledgers / "receipt.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"no readable receipt.json in {ledgers}: {exc}"]
    problems = case.problems(code, receipt)
    verdict = "as expected" if not problems else "NOT as expected: " + "; ".join(problems)
    sys.stdout.write(f"--- {case.name}: exit {code}, ledgers in {ledgers}/ — {verdict}\n")
    return problems


def run(args: argparse.Namespace) -> int:
    """Run the demo; exit 0 when both verdicts are the expected ones, 1 otherwise."""
    example = (args.example or repo_root() / "examples" / "billing").resolve()
    patches = example / "patches"
    if not (example / "pins").is_dir() or not patches.is_dir():
        raise PatchgateError(f"{example}: not the billing example (needs pins/ and patches/)")
    out = args.out.resolve()
    work = Path(tempfile.mkdtemp(prefix="patchgate-demo-"))
    engine = ensure_engine(_say)
    lane = None
    failures: list[str] = []
    try:
        repo, base = _base_repo(example, work)
        _say(f"base repository {repo} at {base[:12]}")
        lane = lane_up(LaneSettings(state_dir=work / "state"), _say)
        for case in CASES:
            found = _check(case, repo=repo, base=base, patches=patches, lane=lane, out=out)
            failures += [f"{case.name}: {p}" for p in found]
    finally:
        if lane is not None:
            lane_down(work / "state", _say)
        engine.stop()
        if args.keep:
            _say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.stdout.write("\ndemo: FAILED\n" + "".join(f"  {f}\n" for f in failures))
        return 1
    sys.stdout.write(f"\ndemo: both verdicts as expected; ledgers in {out}/\n")
    return 0
