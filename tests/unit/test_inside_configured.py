"""The judge's zygote configures pytest once (``executord/inside/zygote.py``): the initial
conftests run there once, no production code runs there, and the forked judges share no capture
file — checked with the real supervisor, zygotes and pairs, unprivileged (switch_users false)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from executord.runs.records import RecordLog
from executord.runs.variants import variant_outcomes
from tests.unit._inside_helpers import INSIDE, run_supervisor, supervisor_config, write_tree

SHOP = """\
def price():
    return 10

def mode():
    return "ok"
"""
MUTANT = SHOP.replace("return 10", "return 11", 1)
HANGS = SHOP.replace('return "ok"', 'return "hang"', 1)
COUNTING_CONFTEST = """\
import os

with open(os.path.join(os.path.dirname(__file__), "..", "log", "configures"), "a") as fh:
    fh.write(f"{os.getpid()}\\n")
"""
CAPTURE_CONFTEST = """\
import os

def pytest_runtestloop(session):
    capman = session.config.pluginmanager.getplugin("capturemanager")
    tmpfile = capman._global_capturing.out.tmpfile  # the run's captured stdout, before any test
    seen = os.pread(tmpfile.fileno(), 4096, 0)
    with open(os.path.join(os.path.dirname(__file__), "..", "log", "seen"), "ab") as fh:
        fh.write(seen + b"|\\n")
"""
TESTS = """\
import os
import signal

import pgshop

def test_price():
    assert pgshop.price() == 10

def test_capture_starts_empty():
    os.write(1, b"LEFT-BY-AN-EARLIER-RUN")  # into this run's global capture of stdout
    if pgshop.mode() == "hang":  # stuck past the alarm: the supervisor kills this judge
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        while True:
            pass
"""
NODES = ["tests/test_c.py::test_price", "tests/test_c.py::test_capture_starts_empty"]


def _run(
    tmp_path: Path,
    sources: list[str],
    conftest: str,
    *,
    zygotes: bool = True,
    tests: str = TESTS,
    **over: Any,
) -> tuple[int, list[dict[str, Any]], str]:
    write_tree(tmp_path, {"src/pgshop/__init__.py": SHOP, "tests/test_c.py": tests,
                          "tests/conftest.py": conftest})  # fmt: skip
    (tmp_path / "log").mkdir()
    (tmp_path / "scratch").mkdir()
    (tmp_path / "variants.bin").write_bytes("".join(sources).encode())
    path, index, offset = str(tmp_path / "src/pgshop/__init__.py"), [], 0
    for s in sources:
        index.append({"path": path, "offset": offset, "size": len(s.encode())})
        offset += len(s.encode())
    cfg = supervisor_config(
        tmp_path, ["tests/test_c.py"], variants_file=str(tmp_path / "variants.bin"),
        variants=index, zygotes=zygotes, reset_dirs=[str(tmp_path / "scratch")], **over,
    )  # fmt: skip
    return run_supervisor(cfg)


def _verdicts(records: list[dict[str, Any]], count: int) -> dict[tuple[int, str], str]:
    log = RecordLog(nonce="n0nce", judged=True)
    for rec in records:
        log.feed(json.dumps(rec).encode())
    members = [(n.rsplit("::", 1)[1], [n]) for n in NODES]
    outs = variant_outcomes(log, members, count, plugin=str(INSIDE / "patchgate_reporter.py"))
    return {(o.variant, o.property_id): f"{o.outcome}/{o.failure_kind}" for o in outs}


EXPECTED = {
    (1, "test_price"): "fail/assertion",
    (2, "test_price"): "pass/",
    (3, "test_price"): "fail/assertion",
    **{(n, "test_capture_starts_empty"): "pass/" for n in (1, 2, 3)},
}


@pytest.mark.parametrize("zygotes", [False, True], ids=["fresh", "zygotes"])
def test_the_initial_conftests_run_once_in_a_configured_zygote_and_verdicts_are_alike(
    tmp_path: Path, zygotes: bool
) -> None:
    """Three variants: forked from a zygote that configured pytest, the initial conftest ran
    once (in the zygote), started fresh three times; the verdicts are the same either way."""
    code, records, err = _run(tmp_path, [MUTANT, SHOP, MUTANT], COUNTING_CONFTEST, zygotes=zygotes)
    assert code == 0, err
    assert _verdicts(records, 3) == EXPECTED, err
    configures = (tmp_path / "log" / "configures").read_text().split()
    assert len(configures) == (1 if zygotes else 3), err
    assert ("configured pytest and started its session once" in err) is zygotes, err
    assert [r["kind"] for r in records].count("start") == 3  # each run's own reporter


@pytest.mark.parametrize(
    ("conftest", "why"),
    [
        (
            "import pgshop\n\nPRICE = pgshop.price()\n",
            "Unfit: pytest could not be configured once: ConftestImportFailure: ImportError: "
            "production module 'pgshop' imported while the judge's zygote configures pytest",
        ),
        (
            "def pytest_sessionstart(session):\n    import pgshop\n\n    pgshop.price()\n",
            "pytest's session did not start in the zygote",
        ),
    ],
    ids=["at-import", "at-sessionstart"],
)
def test_a_conftest_that_imports_production_code_makes_the_judge_zygote_unfit(
    tmp_path: Path, conftest: str, why: str
) -> None:
    """Production code never runs in the judge's zygote: an initial conftest that imports it,
    at its own import or in ``pytest_sessionstart``, fails there (the finder has no subject in
    the zygote), the zygote is not used, and every variant runs fresh, where the conftest's
    import is the subject's, with the same verdicts."""
    code, records, err = _run(tmp_path, [MUTANT, SHOP, MUTANT], conftest)
    assert code == 0, err
    assert f"zygote not used: judge: unfit: {why}" in err, err
    assert "configured pytest and started its session once" not in err
    assert _verdicts(records, 3) == EXPECTED, err


@pytest.mark.parametrize("zygotes", [False, True], ids=["fresh", "zygotes"])
def test_a_judge_killed_mid_test_leaves_nothing_in_the_next_runs_capture(
    tmp_path: Path, zygotes: bool
) -> None:
    """Each forked judge opens capture files of its own: the first variant's judge writes to
    its captured stdout and is killed before pytest reads it back; the next variants' capture
    starts empty when their tests start (a capture file opened by the zygote would carry that
    text over)."""
    code, records, err = _run(
        tmp_path,
        [HANGS, SHOP, SHOP],
        CAPTURE_CONFTEST,
        zygotes=zygotes,
        bound_ms=1000,
        grace_ms=200,
    )
    assert code == 0, err
    assert ("configured pytest and started its session once" in err) is zygotes, err
    got = _verdicts(records, 3)
    assert got[(1, "test_capture_starts_empty")] in {"error/judge_error", "exceeded_bound/"}, got
    assert got[(2, "test_capture_starts_empty")] == got[(3, "test_capture_starts_empty")] == "pass/"
    seen = (tmp_path / "log" / "seen").read_bytes().split(b"|\n")[:-1]
    assert seen == [b"", b"", b""], seen


WORKDIR_AT_IMPORT = """\
import os
import tempfile

import pytest

WORK = tempfile.mkdtemp(dir=os.path.join(os.path.dirname(__file__), "..", "scratch"))

@pytest.fixture
def workdir():
    return WORK
"""
WORKDIR_AT_SESSIONSTART = """\
import os
import tempfile

import pytest

WORK = []

def pytest_sessionstart(session):
    WORK.append(tempfile.mkdtemp(dir=os.path.join(os.path.dirname(__file__), "..", "scratch")))

@pytest.fixture
def workdir():
    return WORK[0]
"""
WORKDIR_TESTS = """\
import os

import pgshop

def test_price(workdir):
    assert os.path.isdir(workdir)
    assert pgshop.price() == 10
"""


@pytest.mark.parametrize(
    ("conftest", "why"),
    [
        (
            WORKDIR_AT_IMPORT,
            "unfit: Unfit: pytest could not be configured once: RuntimeError: configuring left",
        ),
        (WORKDIR_AT_SESSIONSTART, "unfit: RuntimeError: starting pytest's session left"),
    ],
    ids=["at-import", "at-sessionstart"],
)
def test_a_conftest_that_leaves_files_where_the_reset_removes_them_makes_the_zygote_unfit(
    tmp_path: Path, conftest: str, why: str
) -> None:
    """An initial conftest makes a directory in a reset area, at its import or when the session
    starts: done once in the zygote, the first run's reset would remove it and every later run
    would fail for want of it. The judge's zygote is unfit instead, and every run makes (and
    loses) its own."""
    code, records, err = _run(tmp_path, [SHOP, MUTANT, SHOP], conftest, tests=WORKDIR_TESTS)
    assert code == 0, err
    assert f"zygote not used: judge: {why}" in err, err
    items = [(r["outcome"], r.get("failure_kind", "")) for r in records if r["kind"] == "item"]
    assert items == [("pass", ""), ("fail", "predicate"), ("pass", "")], err
    assert os.listdir(tmp_path / "scratch") == []


AT_COLLECTION_TESTS = """\
import pgshop

PRICE_AT_COLLECTION = pgshop.price()  # asked of the subject while the module is collected

def test_price_is_what_collection_saw():
    assert pgshop.price() == PRICE_AT_COLLECTION
"""


@pytest.mark.parametrize("zygotes", [False, True], ids=["fresh", "zygotes"])
def test_a_run_whose_subject_answers_the_collection_otherwise_is_collected_afresh(
    tmp_path: Path, zygotes: bool
) -> None:
    """The collecting zygote's test module asked its collection subject for ``price()`` (10);
    the mutant's subject answers 11 when the collection's messages are replayed to it, so that
    run's judge is a fresh pytest, whose collection sees 11: the mutant survives, as in a fresh
    run. (A judge that kept the zygote's collection would compare 11 with 10 and count a kill
    the predicate never made.)"""
    code, records, err = _run(
        tmp_path, [MUTANT, SHOP, MUTANT], COUNTING_CONFTEST, zygotes=zygotes,
        tests=AT_COLLECTION_TESTS,
    )  # fmt: skip
    assert code == 0, err
    items = [r["outcome"] for r in records if r["kind"] == "item"]
    assert items == ["pass", "pass", "pass"], err
    assert ("judges forked after collecting once: 3" in err) is zygotes, err


@pytest.mark.parametrize("zygotes", [False, True], ids=["fresh", "zygotes"])
def test_a_collection_that_fails_is_every_runs_own(tmp_path: Path, zygotes: bool) -> None:
    """A test module that cannot be collected makes the collecting zygote unfit: each run
    collects (and fails to) itself, and reports it, as a fresh run does."""
    broken = (
        'import pgshop\n\nraise RuntimeError("broken at import")\n\ndef test_price():\n    pass\n'
    )
    code, records, err = _run(tmp_path, [MUTANT, SHOP], "", zygotes=zygotes, tests=broken)
    assert code == 0, err
    collects = [r for r in records if r["kind"] == "collect"]
    assert len(collects) == 2, err
    assert all("broken at import" in r["failure"] for r in collects), err
    assert not [r for r in records if r["kind"] == "item"], err
    unfit = "zygote not used: judge collected: unfit: Unfit: the collection failed"
    assert (unfit in err) is zygotes, err
