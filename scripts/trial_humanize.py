"""A real library under patchgate, with the README's commands only: humanize 4.17.0 from its sdist.

Opt-in (it needs the package index, for the sdist and the suite's wheels), not part of
``scripts/test.sh``::

    .venv/bin/python scripts/trial_humanize.py                # the verdicts
    .venv/bin/python scripts/trial_humanize.py --whole-suite  # every test, judge on and off

What it does, as a new user would (docs/real-repository.md tells the story and the results):
download the sdist, ``git init`` it, mark seven of its tests (five of them parametrized) as
properties, write the tests' lock, ``patchgate init --requirements``, ``pin properties
--from-pytest``, ``pin fixtures --skip-untracked`` (the locale catalogs; the compiled ``.mo`` files
are git-ignored), ``pin check --rev HEAD``, ``env build``, ``up`` on a lane of its own, then
``check --self-test`` and three checks: an honest refactor of ``ordinal`` (admitted), a
regression that drops the minus sign of ``intcomma`` (rejected: a property miss), and an edit of a
catalog (refused: R2). It exits 1 when a verdict is not the expected one, and stops the lane it
started (``patchgate down``, by pid) whatever happens.

``--whole-suite`` pins every test function of humanize's suite (each with all its cases) and runs
the self-test under ``--judge on`` and ``--judge off`` (the base allows both), then prints how many
properties passed in each mode and why the others did not: the compatibility measure of the
judge on a suite nobody here wrote.

Needs a Docker engine (``scripts/docker.sh start``) and ``scripts/setup.sh`` done.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = ROOT / ".venv" / "bin" / "python"
PATCHGATE = ROOT / ".venv" / "bin" / "patchgate"
VERSION = "4.17.0"

# The suite's lock: humanize's test extra needs freezegun and pytest>=9 (pytest-benchmark,
# pytest-codspeed and pytest-cov are for its benchmarks and coverage, not for these tests).
LOCK = """\
babel==2.18.0
freezegun==1.5.5
iniconfig==2.3.1
packaging==26.4
pluggy==1.7.0
Pygments==2.21.0
pytest==9.2.0
python-dateutil==4.0.0
tzdata==2026.6
"""

# The catalogs are committed as .po files (the fixtures); the .mo files gettext reads are built
# from them by the environment's build step, in a sandbox with no network, with Babel (locked).
BUILD = """
[tool.patchgate.environment.build]
command = ["python", "-c", "import sys; from babel.messages.frontend import main; sys.exit(main())",
           "compile", "-d", "src/humanize/locale", "-D", "humanize"]
inputs = ["src/humanize/locale/**/*.po"]
outputs = ["src/humanize/locale/**/*.mo"]
"""

# (file, test function, covered symbol, claim)
PROPERTIES = [
    ("tests/test_number.py", "test_ordinal", "humanize.number.ordinal",
     "ordinal names the suffix of an integer"),
    ("tests/test_number.py", "test_intcomma", "humanize.number.intcomma",
     "intcomma groups thousands"),
    ("tests/test_number.py", "test_intcomma_large_integer", "humanize.number.intcomma",
     "intcomma keeps the sign of a large integer"),
    ("tests/test_number.py", "test_intword", "humanize.number.intword",
     "intword names large numbers"),
    ("tests/test_filesize.py", "test_naturalsize", "humanize.filesize.naturalsize",
     "naturalsize formats byte counts"),
    ("tests/test_lists.py", "test_natural_list", "humanize.lists.natural_list",
     "natural_list joins items in prose"),
    ("tests/test_time.py", "test_naturaldelta", "humanize.time.naturaldelta",
     "naturaldelta names a timedelta, sign-blind"),
]  # fmt: skip

EXPECTED = {"self-test": 0, "honest": 0, "regression": 1, "fixture edit": 2}


def say(msg: str) -> None:
    print(f"trial: {msg}", file=sys.stderr, flush=True)


def run(
    argv: list[str | Path], cwd: Path, *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(a) for a in argv],
        check=False,
        cwd=cwd,
        text=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    if check and proc.returncode != 0:
        raise SystemExit(
            f"trial: {' '.join(str(a) for a in argv)} exited {proc.returncode}:\n"
            f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        )
    return proc


def git(repo: Path, *args: str) -> None:
    run(["git", "-c", "user.name=trial", "-c", "user.email=trial@example.invalid", *args], repo)


def fetch_sdist(work: Path) -> Path:
    """The sdist of humanize VERSION from the index, unpacked; its files as the upstream commit."""
    say(f"downloading the sdist of humanize {VERSION}")
    run([PY, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         f"humanize=={VERSION}", "-d", work], work)  # fmt: skip
    with tarfile.open(work / f"humanize-{VERSION}.tar.gz") as tar:
        tar.extractall(work, filter="data")
    repo = work / "humanize"
    (work / f"humanize-{VERSION}").rename(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"humanize {VERSION} (sdist)")
    return repo


def marker(pid: str, covers: str, claim: str) -> str:
    return (f'@pytest.mark.patchgate(\n    claim="{claim}",\n    kind="pure_fn",\n'
            f'    covers=["{covers}"],\n    id="{pid}",\n)\n')  # fmt: skip


def mark(repo: Path, whole: bool) -> int:
    """Put the markers on: the seven properties, or every test function of the suite."""
    chosen: dict[str, list[tuple[str, str, str]]] = {}
    if whole:
        for f in sorted((repo / "tests").glob("test_*.py")):
            for name in re.findall(r"^def (test_\w+)\(", f.read_text(), flags=re.M):
                chosen.setdefault(f"tests/{f.name}", []).append((name, "humanize", name))
    else:
        for rel, name, covers, claim in PROPERTIES:
            chosen.setdefault(rel, []).append((name, covers, claim))
    n = 0
    for rel, items in chosen.items():
        path = repo / rel
        text = path.read_text()
        for name, covers, claim in items:
            pid = f"humanize.{Path(rel).stem.removeprefix('test_')}.{name.removeprefix('test_')}"
            text, k = re.subn(rf"^def {name}\(", marker(pid, covers, claim) + f"def {name}(",
                              text, count=1, flags=re.M)  # fmt: skip
            n += k
        path.write_text(text)
    return n


def put_under_patchgate(repo: Path, whole: bool) -> None:
    n = mark(repo, whole)
    say(f"marked {n} tests as properties")
    (repo / "requirements-test.txt").write_text(LOCK)
    run([PATCHGATE, "init", "--requirements", "requirements-test.txt",
         "--fixture-root", "src/humanize/locale", "--skip-untracked"], repo)  # fmt: skip
    with (repo / "pyproject.toml").open("a") as fh:
        fh.write(BUILD)
    if whole:  # the comparison needs both modes; a reviewed base says so
        toml = repo / "pyproject.toml"
        toml.write_text(toml.read_text().replace(
            "[tool.patchgate]\n", "[tool.patchgate]\nallow_judge_off = true\n", 1))  # fmt: skip
    run([PATCHGATE, "pin", "properties", "--from-pytest"], repo)
    # hatch-vcs generates src/humanize/_version.py and .gitignore ignores it: the committed tree
    # the sandbox runs on would have no humanize._version (the self-test's hint names it).
    git(repo, "add", "-A")
    git(repo, "add", "-f", "src/humanize/_version.py")
    git(repo, "commit", "-qm", "patchgate: pins, the tests' lock, the generated version file")
    run([PATCHGATE, "pin", "check", "--rev", "HEAD"], repo)


def build_environment(repo: Path, lane: Path) -> None:
    """``env build``: the locked packages here, the catalogs on the lane's executor."""
    done = run([PATCHGATE, "env", "build", "--rev", "HEAD", "--lane", lane, "--json"], repo)
    built = json.loads(done.stdout)
    say(f"environment {built['digest'][:16]}: {built['files']} files, "
        f"{built['build_outputs']} compiled catalogs")  # fmt: skip


def patch(repo: Path, name: str, path: str, old: str, new: str) -> Path:
    """A one-commit patch on main's head, as ``git format-patch`` writes it; main unchanged."""
    git(repo, "checkout", "-q", "-b", name)
    f = repo / path
    text = f.read_text()
    if old not in text:
        raise SystemExit(f"trial: {path}: the text to patch is not there (humanize changed?)")
    f.write_text(text.replace(old, new, 1))
    git(repo, "commit", "-qam", name)
    out = repo.parent / f"{name}.patch"
    out.write_text(run(["git", "format-patch", "-1", "--stdout"], repo).stdout)
    git(repo, "checkout", "-q", "main")
    return out


def check(repo: Path, lane: Path, extra: list[str], label: str) -> tuple[int, str]:
    t0 = time.monotonic()
    proc = run([PATCHGATE, "check", "--repo", ".", "--base", "HEAD", "--lane", lane, "--json",
                *extra], repo, check=False)  # fmt: skip
    took = time.monotonic() - t0
    try:
        receipt = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc.returncode, f"no JSON: {proc.stderr.strip()[-400:]}"
    what = receipt.get("posture") or receipt.get("decision") or "?"
    say(f"{label}: exit {proc.returncode}, {what} ({took:.0f} s)")
    return proc.returncode, str(what)


def verdicts(repo: Path, lane: Path) -> int:
    honest = patch(
        repo,
        "honest",
        "src/humanize/number.py",
        "    digit = 0 if value % 100 in (11, 12, 13) else value % 10\n",
        "    tens = value % 100\n    digit = 0 if tens in (11, 12, 13) else value % 10\n",
    )
    regress = patch(
        repo,
        "regression",
        "src/humanize/number.py",
        '        result = f"{value:,}"\n',
        '        result = f"{abs(value):,}"\n',
    )
    catalog = "src/humanize/locale/de_DE/LC_MESSAGES/humanize.po"
    text = (repo / catalog).read_text()
    first = re.search(r'^msgstr "(.+)"$', text, flags=re.M)
    if first is None:
        raise SystemExit(f"trial: {catalog}: no translated message to edit")
    edit = patch(repo, "fixture-edit", catalog, first.group(0), f'msgstr "{first.group(1)}!"')
    prov = ["--draft-id", "trial", "--drafter", "model_lane"]
    got = {
        "self-test": check(repo, lane, ["--self-test"], "self-test"),
        "honest": check(repo, lane, ["--patch", str(honest), *prov], "honest refactor"),
        "regression": check(repo, lane, ["--patch", str(regress), *prov], "regression"),
        "fixture edit": check(repo, lane, ["--patch", str(edit), *prov], "fixture edit"),
    }
    bad = 0
    print(f"{'case':<14} {'exit':>4}  {'expected':>8}  what")
    for case, (code, what) in got.items():
        ok = code == EXPECTED[case]
        bad += not ok
        print(
            f"{case:<14} {code:>4}  {EXPECTED[case]:>8}  {what}{'' if ok else '   <- NOT EXPECTED'}"
        )
    return 1 if bad else 0


_PROGRESS = re.compile(r"^\[local \d+/\d+\] (\S+) on .*?: run 1 (\w+)(?: \((.*)\))?, run 2 (\w+)")


def whole_suite(repo: Path, lane: Path) -> int:
    """The self-test of every test, judge on and off: per mode, how many passed both runs; for
    each property that passed only with the judge off, what the judge said."""
    seen: dict[str, dict[str, tuple[str, str]]] = {}
    for mode in ("on", "off"):
        t0 = time.monotonic()
        proc = run([PATCHGATE, "check", "--repo", ".", "--base", "HEAD", "--lane", lane,
                    "--self-test", "--judge", mode], repo, check=False)  # fmt: skip
        rows = {}
        for line in proc.stderr.splitlines() + proc.stdout.splitlines():
            m = _PROGRESS.match(line)
            if m:
                pid, one, detail, two = m.groups()
                rows[pid] = ("pass" if one == two == "pass" else f"{one}/{two}", detail or "")
        seen[mode] = rows
        passed = sum(1 for st, _ in rows.values() if st == "pass")
        say(
            f"self-test --judge {mode}: exit {proc.returncode}, {passed}/{len(rows)} properties "
            f"passed both runs ({time.monotonic() - t0:.0f} s)"
        )
    print(f"{'property':<48} {'judge on':<12} {'judge off':<12} why (judge on)")
    for pid in sorted(seen["on"]):
        on, why = seen["on"][pid]
        off = seen["off"].get(pid, ("?", ""))[0]
        if on != "pass" or off != "pass":
            print(f"{pid:<48} {on:<12} {off:<12} {why[:200]}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--whole-suite", action="store_true", help="every test under the judge")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="patchgate-trial-"))
    lane = work / "lane"
    try:
        repo = fetch_sdist(work)
        put_under_patchgate(repo, args.whole_suite)
        say(run([PATCHGATE, "up", "--state", lane], work).stdout.strip().splitlines()[-1])
        build_environment(repo, lane)
        return whole_suite(repo, lane) if args.whole_suite else verdicts(repo, lane)
    finally:
        if (lane / "lane.json").exists():
            run([PATCHGATE, "down", "--state", lane], work, check=False)
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
