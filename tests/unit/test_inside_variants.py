"""Mutation v2 inside the sandbox, unprivileged (switch_users false): the supervisor runs one real
judge/subject pair per variant, each subject serving only its own variant from memory, the reset
between pairs, and the stream the daemon cuts per variant — each pair started fresh or forked by
the roles' zygotes (``zygote.py``), with the same records either way."""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import json
import linecache
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from executord.runs.records import RecordLog
from executord.runs.variants import variant_outcomes
from tests.unit import _inside_helpers
from tests.unit._inside_helpers import INSIDE, load, run_supervisor, write_tree

ON_DISK = """\
import os

def price():
    return 10

def own_file():
    with open(__file__, "rb") as fh:
        return fh.read()

def note(path):
    with open(path, "a") as fh:
        fh.write("noted\\n")

def litter(where):
    with open(os.path.join(where, "junk"), "w") as fh:
        fh.write("left by a variant")

def leaks():
    import sys
    finder = sys.meta_path[0]
    return {
        "finder": type(finder).__name__,
        "loader": type(__loader__).__name__,
        "file": __file__,
        "source_kept": getattr(finder, "_source", None) is not None,
        "fd_env": "PATCHGATE_SUBJECT_VARIANT_FD" in os.environ,
        "in_env": any("return 11" in v for v in os.environ.values()),
    }
"""
MUTANT = ON_DISK.replace("return 10", "return 11", 1)
RAISES = ON_DISK.replace("return 10", 'raise ValueError("boom")', 1)
TESTS = """\
import os
import pgshop

SCRATCH = os.path.join(os.path.dirname(__file__), "..", "scratch")

def test_price():
    assert pgshop.price() == 10

def test_reads_its_own_file_from_disk():
    assert b"return 10" in pgshop.own_file()

def test_starts_clean():
    assert os.listdir(SCRATCH) == []
    pgshop.litter(os.path.abspath(SCRATCH))

def test_nothing_leaks():
    got = pgshop.leaks()
    assert got == {"finder": "VariantFinder", "loader": "_VariantLoader",
                   "file": os.path.abspath("src/pgshop/__init__.py"), "source_kept": False,
                   "fd_env": False, "in_env": False}
"""
NODES = [
    "tests/test_v.py::test_price",
    "tests/test_v.py::test_reads_its_own_file_from_disk",
    "tests/test_v.py::test_starts_clean",
    "tests/test_v.py::test_nothing_leaks",
]


ZYGOTES = {"zygotes": False}


@pytest.fixture(params=[False, True], ids=["fresh", "zygotes"])
def zygotes(request: pytest.FixtureRequest) -> Any:
    """A test that runs the supervisor runs with pairs started fresh and with pairs forked by
    zygotes (the in-process tests need neither)."""
    ZYGOTES["zygotes"] = request.param
    yield request.param
    ZYGOTES["zygotes"] = False


@pytest.fixture
def forked() -> Any:
    """Pairs forked by zygotes only (a test of the zygotes themselves)."""
    ZYGOTES["zygotes"] = True
    yield True
    ZYGOTES["zygotes"] = False


def supervisor_config(tmp_path: Path, tests: list[str], **over: Any) -> Path:
    return _inside_helpers.supervisor_config(tmp_path, tests, **{**ZYGOTES, **over})


def _run(
    tmp_path: Path, sources: list[str], tests: tuple[str, ...] = ("tests/test_v.py",)
) -> tuple[int, list[dict[str, Any]], str]:
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, "tests/test_v.py": TESTS})
    (tmp_path / "scratch").mkdir()
    blob = b"".join(s.encode() for s in sources)
    (tmp_path / "variants.bin").write_bytes(blob)
    path = str(tmp_path / "src/pgshop/__init__.py")
    index, offset = [], 0
    for s in sources:
        index.append({"path": path, "offset": offset, "size": len(s.encode())})
        offset += len(s.encode())
    cfg = supervisor_config(
        tmp_path,
        list(tests),
        variants_file=str(tmp_path / "variants.bin"),
        variants=index,
        reset_dirs=[str(tmp_path / "scratch")],
    )
    return run_supervisor(cfg)


def _judged(records: list[dict[str, Any]], count: int) -> dict[tuple[int, str], tuple[str, str]]:
    log = RecordLog(nonce="n0nce", judged=True)
    for rec in records:
        log.feed(json.dumps(rec).encode())
    members = [(n.rsplit("::", 1)[1], [n]) for n in NODES]
    outs = variant_outcomes(log, members, count, plugin=str(INSIDE / "patchgate_reporter.py"))
    return {(o.variant, o.property_id): (o.outcome, o.failure_kind) for o in outs}


@pytest.mark.usefixtures("zygotes")
def test_each_variant_is_served_from_memory_to_its_own_subject(tmp_path: Path) -> None:
    """A mutant (price returns 11) is killed by the predicate; the control (the disk's bytes,
    through the same loader) passes; a variant that raises is the subject's error. Every pair
    reads the patched bytes from disk, starts with the reset area empty (the reset between
    variants removed what the last one left) and sees no trace of the variants."""
    code, records, err = _run(tmp_path, [MUTANT, ON_DISK, RAISES])
    assert code == 0, err
    kinds = [r["kind"] for r in records]
    assert [r["index"] for r in records if r["kind"] == "variant"] == [1, 2, 3]
    assert kinds[0] == "variant"
    assert kinds.count("judge") == kinds.count("start") == 3
    assert [r["seq"] for r in records] == list(range(len(records)))
    got = _judged(records, 3)
    own = ("pass", "")
    assert got == {
        (1, "test_price"): ("fail", "assertion"),
        (2, "test_price"): own,
        (3, "test_price"): ("error", "subject"),
        **{(n, "test_reads_its_own_file_from_disk"): own for n in (1, 2, 3)},
        **{(n, "test_starts_clean"): own for n in (1, 2, 3)},
        **{(n, "test_nothing_leaks"): own for n in (1, 2, 3)},
    }, err
    assert (tmp_path / "src/pgshop/__init__.py").read_text() == ON_DISK
    assert os.listdir(tmp_path / "scratch") == []  # the reset after the last variant too


@pytest.mark.usefixtures("zygotes")
def test_without_a_reset_the_next_variant_would_see_the_last_ones_litter(tmp_path: Path) -> None:
    """The reset test's control: with no reset dirs nothing is removed, so the second pair's
    ``test_starts_clean`` fails."""
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, "tests/test_v.py": TESTS})
    (tmp_path / "scratch").mkdir()
    (tmp_path / "variants.bin").write_bytes(ON_DISK.encode() * 2)
    size = len(ON_DISK.encode())
    path = str(tmp_path / "src/pgshop/__init__.py")
    cfg = supervisor_config(
        tmp_path,
        ["tests/test_v.py::test_starts_clean"],
        variants_file=str(tmp_path / "variants.bin"),
        variants=[{"path": path, "offset": i * size, "size": size} for i in range(2)],
    )
    _code, records, err = run_supervisor(cfg)
    items = [(r["outcome"]) for r in records if r["kind"] == "item"]
    assert items == ["pass", "fail"], err


@pytest.mark.usefixtures("zygotes")
def test_the_variant_bound_ends_a_hanging_variant_and_the_next_one_runs(tmp_path: Path) -> None:
    """The supervisor's clock with variants is min(bound_ms, variant_bound_ms): a variant whose
    code never answers is ``exceeded_bound`` (the subject's hang), the control after it passes."""
    hangs = ON_DISK.replace("return 10", "import time; time.sleep(3600)", 1)
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, "tests/test_v.py": TESTS})
    (tmp_path / "scratch").mkdir()
    (tmp_path / "variants.bin").write_bytes(hangs.encode() + ON_DISK.encode())
    path = str(tmp_path / "src/pgshop/__init__.py")
    cfg = supervisor_config(
        tmp_path,
        ["tests/test_v.py::test_price"],
        bound_ms=60_000,
        grace_ms=300,
        variant_bound_ms=500,
        variants_file=str(tmp_path / "variants.bin"),
        variants=[
            {"path": path, "offset": 0, "size": len(hangs.encode())},
            {"path": path, "offset": len(hangs.encode()), "size": len(ON_DISK.encode())},
        ],
    )
    code, records, err = run_supervisor(cfg)
    assert code == 0, err
    hang = [r for r in records if r["kind"] == "subject" and r["event"] == "hang"]
    assert len(hang) == 1
    assert "500 ms" in hang[0]["detail"]
    got = _judged(records, 2)
    assert (got[(1, "test_price")], got[(2, "test_price")]) == (
        ("exceeded_bound", "subject"),
        ("pass", ""),
    ), err


@pytest.mark.usefixtures("zygotes")
def test_a_missing_variants_file_ends_the_run_with_a_reset_failure(tmp_path: Path) -> None:
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, "tests/test_v.py": TESTS})
    cfg = supervisor_config(
        tmp_path,
        ["tests/test_v.py"],
        variants_file=str(tmp_path / "absent.bin"),
        variants=[{"path": "/x.py", "offset": 0, "size": 1}],
    )
    code, records, _err = run_supervisor(cfg)
    assert code == 1
    assert [r["kind"] for r in records] == ["reset"]
    assert "no variants file" in records[0]["detail"]


@pytest.mark.usefixtures("zygotes")
def test_a_malformed_variant_entry_is_a_config_error(tmp_path: Path) -> None:
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, "tests/test_v.py": TESTS})
    cfg = supervisor_config(tmp_path, ["tests/test_v.py"], variants=[{"path": "x"}])
    code, records, err = run_supervisor(cfg)
    assert (code, records) == (78, [])
    assert "malformed variant" in err


def test_the_finder_serves_only_its_file_and_compiles_once(tmp_path: Path) -> None:
    """In process: the variant's module comes from memory (its real path as filename), another
    module of the package from disk, a reload runs the same code; the source is dropped."""
    subject = load("subject")
    write_tree(tmp_path, {"vpkg/__init__.py": "X = 'disk'\n", "vpkg/other.py": "Y = 'disk'\n"})
    target = tmp_path / "vpkg/__init__.py"
    finder = subject.VariantFinder(str(target), b"X = 'memory'\n")
    sys.path.insert(0, str(tmp_path))
    sys.meta_path.insert(0, finder)
    try:
        pkg = importlib.import_module("vpkg")
        other = importlib.import_module("vpkg.other")
        assert (pkg.X, other.Y, pkg.__file__) == ("memory", "disk", str(target))
        assert finder._source is None
        pkg.X = "changed"
        assert importlib.reload(pkg).X == "memory"
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(tmp_path))
        for name in ("vpkg", "vpkg.other"):
            sys.modules.pop(name, None)


def test_read_variant_reads_the_fd_and_closes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    subject = load("subject")
    r, w = os.pipe()
    os.write(w, b'{"path": "/w/m.py"}\nsource\nmore')
    os.close(w)
    monkeypatch.setenv("PATCHGATE_SUBJECT_VARIANT_FD", str(r))
    assert subject.read_variant() == ("/w/m.py", b"source\nmore")
    assert "PATCHGATE_SUBJECT_VARIANT_FD" not in os.environ
    with pytest.raises(OSError):
        os.fstat(r)
    r, w = os.pipe()
    os.write(w, b"no header")
    os.close(w)
    monkeypatch.setenv("PATCHGATE_SUBJECT_VARIANT_FD", str(r))
    with pytest.raises(ValueError, match="malformed"):
        subject.read_variant()


# -- the reset helper ----------------------------------------------------------------------------


def test_the_reset_helper_removes_what_its_uid_owns(tmp_path: Path) -> None:
    d = tmp_path / "area"
    (d / "sub/deeper").mkdir(parents=True)
    (d / "sub/deeper/f").write_text("x")
    (d / "file").write_text("x")
    os.symlink("/etc/passwd", d / "link")
    os.chmod(d / "sub", 0o500)  # a directory its owner made unwritable
    done = subprocess.run(
        [sys.executable, "-I", str(INSIDE / "zygote.py"), "reset", str(d)],
        capture_output=True, check=False,
    )  # fmt: skip
    assert (done.returncode, os.listdir(d)) == (0, []), done.stderr
    assert os.path.exists("/etc/passwd")


_SYSV_UID = 54321  # a uid no one else on the machine uses


def _as_uid(uid: int, fn: Any) -> int:
    """Run ``fn`` in a forked child as ``uid`` (no exec: the test's interpreter may not be
    readable by it); the child's exit status (0: ``fn`` returned true)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            code = 0 if fn() else 1
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run as another uid")
def test_the_reset_helper_removes_the_sysv_ipc_objects_of_its_uid() -> None:
    """As a uid of its own: a shared memory segment, a semaphore set and a message queue it
    created are seen by ``ipc_objects`` and gone after ``remove_ipc``."""
    reset = load("reset")
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    private, creat = 0, 0o1000

    def make() -> bool:
        return (
            libc.shmget(private, 4096, creat | 0o600) >= 0
            and libc.semget(private, 1, creat | 0o600) >= 0
            and libc.msgget(private, creat | 0o600) >= 0
        )

    assert not reset.reset_needed([], _SYSV_UID, ipc=True)
    assert _as_uid(_SYSV_UID, make) == 0
    assert {t for t, _ in reset.ipc_objects(_SYSV_UID)} == {"shm", "sem", "msg"}
    assert reset.reset_needed([], _SYSV_UID, ipc=True)  # the supervisor starts the helper
    assert not reset.reset_needed([], _SYSV_UID, ipc=False)

    def clean() -> bool:
        reset.remove_ipc(os.geteuid())
        return not reset.leftovers([], os.geteuid(), ipc=True)

    assert _as_uid(_SYSV_UID, clean) == 0
    assert reset.ipc_objects(_SYSV_UID) == []
    assert not reset.reset_needed([], _SYSV_UID, ipc=True)


def test_a_reset_is_needed_unless_nothing_of_the_uid_can_be_there(tmp_path: Path) -> None:
    """``reset_needed``: False only when every directory was read and holds no entry of the
    uid (a link counts by its own owner, never followed); a directory that is not there holds
    nothing; anything unreadable or not a directory counts as something to remove."""
    reset = load("reset")
    me, other = os.geteuid(), _SYSV_UID
    d = tmp_path / "d"
    d.mkdir()
    assert not reset.reset_needed([str(d), str(tmp_path / "missing")], me, ipc=False)
    (d / "f").write_text("left")
    assert reset.reset_needed([str(d)], me, ipc=False)
    assert not reset.reset_needed([str(d)], other, ipc=False)  # another uid's entry stays
    (d / "f").unlink()
    (d / "link").symlink_to(tmp_path)  # the link is the uid's own entry, whatever it points at
    assert reset.reset_needed([str(d)], me, ipc=False)
    (d / "link").unlink()
    (tmp_path / "file").write_text("not a directory")
    assert reset.reset_needed([str(tmp_path / "file")], other, ipc=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tmpfs and switch uids")
def test_a_role_s_own_tmpfs_that_cannot_be_read_counts_as_empty_only_by_its_inodes() -> None:
    """A role's own ``mode=0700`` tmpfs (its HOME) cannot be listed by the supervisor (uid 0
    without ``CAP_DAC_*``, here another uid): it is proved empty by its inode count and its
    size, else the helper runs; a 0700 directory that is not a filesystem of its own can never
    be proved empty."""
    reset = load("reset")
    base = Path(tempfile.mkdtemp(prefix="pg-reset-", dir="/tmp"))  # searchable by every uid
    base.chmod(0o755)  # (pytest's own base is its uid's alone)
    home = base / "home"
    home.mkdir()
    opts = f"size=1m,uid={_SYSV_UID},gid={_SYSV_UID},mode=0700"
    if subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(home)],
                      check=False, capture_output=True).returncode != 0:  # fmt: skip
        shutil.rmtree(base)
        pytest.skip("cannot mount a tmpfs here")
    plain = base / "plain"
    plain.mkdir(mode=0o700)
    os.chown(plain, _SYSV_UID, _SYSV_UID)
    try:

        def needed(path: Path) -> Any:
            return lambda: not reset.reset_needed([str(path)], _SYSV_UID, ipc=False)

        def litter(name: str) -> Any:
            def make() -> bool:
                (home / name).write_text("left")
                return True

            return make

        reader = _SYSV_UID + 1  # as the supervisor: not the owner, no capability
        assert _as_uid(reader, needed(home)) == 0  # proved empty
        assert _as_uid(reader, needed(plain)) == 1  # unreadable, not a tmpfs root: helper
        assert _as_uid(_SYSV_UID, litter("f")) == 0
        assert _as_uid(reader, needed(home)) == 1
        (home / "f").unlink()
        assert _as_uid(reader, needed(home)) == 0
        os.mkdir(home / "sub")  # an empty subdirectory: still an entry
        assert _as_uid(reader, needed(home)) == 1
    finally:
        if subprocess.run(["umount", str(home)], check=False).returncode == 0:
            shutil.rmtree(base)


_FORK_ONE = """
import json, os, socket, sys
sys.path.insert(0, {inside!r})
import importlib.util as u
spec = u.spec_from_file_location("_patchgate_zygote", {zygote!r})
z = u.module_from_spec(spec); spec.loader.exec_module(z)
if {refused!r}:
    z._CLONE_REFUSED.append(1)
ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
run = z._fork(theirs, {{}}, [], lambda req, fds: lambda: os._exit(7))
if run is not None:  # the forked process
    run()
print(json.loads(ours.recv(4096))["pid"], os.getppid(), len(z._CLONE_REFUSED), flush=True)
"""


@pytest.mark.parametrize("refused", [False, True], ids=["clone", "forked-twice"])
def test_a_zygote_s_process_is_the_child_of_the_zygote_s_parent(refused: bool) -> None:
    """The process a zygote starts for a request has the zygote's parent (the supervisor) as its
    own, so that one reaps it and reads its exit status from the kernel: a clone with
    ``CLONE_PARENT`` where the kernel makes it, else two forks (re-parented to a subreaper)."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER: the double fork's parent
    try:
        code = _FORK_ONE.format(inside=str(INSIDE), zygote=str(INSIDE / "zygote.py"),
                                refused=refused)  # fmt: skip
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, timeout=60).stdout.split()  # fmt: skip
        pid, its_parent, refusals = int(out[0]), int(out[1]), int(out[2])
        assert its_parent == os.getpid()
        if not refused and os.uname().machine in ("x86_64", "aarch64"):
            assert refusals == 0  # the clone was made, not the fallback
        got, status = os.waitpid(pid, 0)  # ours to reap: no ChildProcessError
        assert (got, os.waitstatus_to_exitcode(status)) == (pid, 7)
    finally:
        libc.prctl(36, 0, 0, 0, 0)


KILLS_ITS_ZYGOTE = (
    ON_DISK
    + """
def _kill_the_zygote():
    import signal
    me, parent = os.getpid(), os.getppid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                ppid = [line.split()[1] for line in fh if line.startswith("PPid:")][0]
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
        except (OSError, IndexError):
            continue
        if int(ppid) == parent and b"subject.py" in cmd:
            os.kill(int(entry), signal.SIGKILL)

_kill_the_zygote()
"""
)


def test_a_subject_that_kills_its_zygote_only_makes_the_rest_of_the_batch_fresh(
    tmp_path: Path, zygotes: bool
) -> None:
    """The subject's zygote runs as the subject's uid, so the code under test can kill it (and
    nothing more: it is non-dumpable). Then the next pairs start fresh, and every variant's
    verdict is what it would have been."""
    code, records, err = _run(tmp_path, [KILLS_ITS_ZYGOTE, MUTANT, ON_DISK, MUTANT])
    assert code == 0, err
    got = _judged(records, 4)
    assert [got[(n, "test_price")] for n in (1, 2, 3, 4)] == [
        ("pass", ""),
        ("fail", "assertion"),
        ("pass", ""),
        ("fail", "assertion"),
    ], err
    assert all(got[(n, "test_nothing_leaks")] == ("pass", "") for n in (1, 2, 3, 4)), err
    if zygotes:
        assert "zygote not used: subject:" in err
    else:
        assert "zygote" not in err


KILLS_ITS_RESETS_ZYGOTE = KILLS_ITS_ZYGOTE.replace(
    'b"subject.py" in cmd', 'b"zygote.py\\x00resets" in cmd'
)


def _prices_each_starting_clean(tmp_path: Path, sources: list[str]) -> tuple[list[str], str]:
    """``test_price``'s outcome per variant, each variant having found the scratch directory
    empty (the reset before it ran); and the supervisor's stderr."""
    code, records, err = _run(tmp_path, sources)
    assert code == 0, err
    got = _judged(records, len(sources))
    numbers = range(1, len(sources) + 1)
    assert all(got[(n, "test_starts_clean")] == ("pass", "") for n in numbers), err
    return [got[(n, "test_price")][0] for n in numbers], err


@pytest.mark.usefixtures("forked")
def test_the_resets_are_forked_by_a_lean_zygote_of_each_role(tmp_path: Path) -> None:
    """Between variants each role's reset helper is forked by a lean zygote of that role (the
    standard library alone: a fork costs what the forking process maps), not by the role's own
    zygote; the reset is the same (each variant starts on an empty scratch directory). A reset
    with nothing to remove is not started at all."""
    prices, err = _prices_each_starting_clean(tmp_path, [MUTANT, ON_DISK, MUTANT])
    assert prices == ["fail", "pass", "fail"], err
    # 4 resets a role (one after the collection subject, one after each variant). Here both
    # roles are the test's uid: each variant's subject litters the scratch directory, so both
    # roles' resets run after each (forked by their lean zygotes); the collection subject
    # littered nothing. Per role: 3 runs, the collecting zygote (judge) or the collection
    # subject, and the resets that ran.
    assert "supervisor: forked by the zygotes: judge 7, subject 7" in err, err
    assert "supervisor: resets forked by the lean zygotes: judge 3, subject 3" in err, err
    assert "supervisor: lean zygotes started for: judge, subject" in err, err
    assert "supervisor: resets not needed (nothing of the uid left): judge 1, subject 1" in err, err
    assert "supervisor: judges forked after collecting once: 3" in err, err
    assert "zygote not used" not in err, err


@pytest.mark.usefixtures("zygotes")
def test_a_reset_with_nothing_to_remove_is_not_started(tmp_path: Path) -> None:
    """Variants that leave nothing in the reset directories start no reset helper (fresh or
    forked: the supervisor reads the directories itself); ``test_the_resets_are_forked_by_a_lean
    _zygote_of_each_role`` is the batch whose subject litters."""
    code, records, err = _run(tmp_path, [MUTANT, ON_DISK], ("tests/test_v.py::test_price",))
    assert code == 0, err
    got = _judged(records, 2)
    assert (got[(1, "test_price")], got[(2, "test_price")]) == (("fail", "assertion"), ("pass", ""))
    resets = 3 if ZYGOTES["zygotes"] else 2  # (after the collection subject, with zygotes)
    assert f"resets not needed (nothing of the uid left): judge {resets}, subject {resets}" in err
    assert "resets forked" not in err, err
    assert "lean zygotes started" not in err, err  # nor the interpreters that would fork them
    assert os.listdir(tmp_path / "scratch") == []


@pytest.mark.usefixtures("forked")
def test_a_subject_that_kills_its_resets_zygote_has_its_resets_forked_by_its_zygote(
    tmp_path: Path,
) -> None:
    """The lean zygote runs as the subject's uid too, so the code under test can kill it: its
    resets are then forked by the subject's own zygote, and every variant still starts clean.
    (The lean zygotes start at the first reset that is needed: after the first variant here.)"""
    assert KILLS_ITS_RESETS_ZYGOTE != KILLS_ITS_ZYGOTE
    prices, err = _prices_each_starting_clean(tmp_path, [MUTANT, KILLS_ITS_RESETS_ZYGOTE, ON_DISK])
    assert prices == ["fail", "pass", "pass"], err
    assert "zygote not used: subject resets:" in err, err
    assert "zygote not used: subject:" not in err, err
    assert "forked by the zygotes: judge 7, subject 7" in err, err  # the same number of forks


@pytest.mark.usefixtures("forked")
def test_a_judge_that_is_not_python_m_pytest_starts_fresh_beside_a_forked_subject(
    tmp_path: Path,
) -> None:
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, "tests/test_v.py": TESTS})
    (tmp_path / "scratch").mkdir()
    (tmp_path / "variants.bin").write_bytes(MUTANT.encode() + ON_DISK.encode())
    path = str(tmp_path / "src/pgshop/__init__.py")
    cfg = json.loads(
        supervisor_config(
            tmp_path,
            ["tests/test_v.py::test_price"],
            variants_file=str(tmp_path / "variants.bin"),
            variants=[
                {"path": path, "offset": 0, "size": len(MUTANT.encode())},
                {"path": path, "offset": len(MUTANT.encode()), "size": len(ON_DISK.encode())},
            ],
        ).read_text()
    )
    argv = cfg["judge"]["argv"]
    cfg["judge"]["argv"] = [argv[0], "-c", "import sys, pytest; sys.exit(pytest.console_main())",
                            *argv[3:]]  # fmt: skip
    (tmp_path / "supervisor.json").write_text(json.dumps(cfg))
    code, records, err = run_supervisor(tmp_path / "supervisor.json")
    assert code == 0, err
    got = _judged(records, 2)
    assert (got[(1, "test_price")], got[(2, "test_price")]) == (("fail", "assertion"), ("pass", ""))
    assert "zygote not used: judge: its argv is not PY -m pytest ARGS" in err
    assert "zygote not used: subject" not in err


def test_a_zygote_that_imported_production_code_or_runs_a_thread_is_unfit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    zygote = load("zygote")
    monkeypatch.setenv(zygote.PRODUCTION_ENV, json.dumps(["pgshop"]))
    zygote.check_clean()
    monkeypatch.setitem(sys.modules, "pgshop.rates", sys)
    with pytest.raises(zygote.Unfit, match=r"production module pgshop\.rates"):
        zygote.check_clean()
    monkeypatch.delitem(sys.modules, "pgshop.rates")
    import threading  # noqa: PLC0415 - only here

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        with pytest.raises(zygote.Unfit, match="a thread is running"):
            zygote.check_clean()
    finally:
        stop.set()
        t.join()


def test_the_judge_zygote_leaves_out_the_plugins_the_argv_blocks() -> None:
    warmstart = load("warmstart")
    args = ["-q", "-p", "no:cacheprovider", "-pno:hypothesispytest", "-p", "patchgate_judge"]
    assert warmstart._blocked(args) == {"cacheprovider", "hypothesispytest"}
    # the reporter blocks the marker plugin's entry point (patchgate itself is not mounted)
    assert warmstart._blocked([*args, "-p", "patchgate_reporter"]) == {
        "cacheprovider",
        "hypothesispytest",
        "patchgate",
    }


def _items_with_batch(cfg_path: Path, batch: Path) -> tuple[list[tuple[str, str]], str]:
    """Run the supervisor of ``cfg_path`` with ``batch`` as the judge's batch file: the items'
    (node id, outcome) in order, and its stderr (it must have exited 0)."""
    cfg = json.loads(cfg_path.read_text())
    cfg["judge"]["env"]["PATCHGATE_REPORT_BATCH"] = str(batch)
    cfg_path.write_text(json.dumps(cfg))
    code, records, err = run_supervisor(cfg_path)
    assert code == 0, err
    return [(r["nodeid"], r["outcome"]) for r in records if r["kind"] == "item"], err


@pytest.mark.usefixtures("zygotes")
def test_a_batch_that_names_what_to_run_collects_every_module_and_runs_only_that(
    tmp_path: Path,
) -> None:
    """A variant's run with a ``run`` list (the covering properties' node ids): every test module
    of the batch is still collected (imported: the suite's run imported it too), only the named
    tests run, and they alone are reported. Each run's subject answers what every module's
    collection asks of it (here: a call made at a test module's import), fresh or after a
    collecting zygote (which imports the test modules once, and replays the collection's
    requests to each run's subject)."""
    other = """\
import os

import pgshop

with open(os.path.join(os.path.dirname(__file__), "..", "collected"), "a") as fh:
    fh.write("w\\n")
pgshop.note(os.path.join(os.path.dirname(__file__), "..", "answered"))

def test_w():
    assert False
"""
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, "tests/test_v.py": TESTS,
                          "tests/test_w.py": other})  # fmt: skip
    (tmp_path / "variants.bin").write_bytes(MUTANT.encode() + ON_DISK.encode())
    batch = {"bound_ms": 0, "order": [*NODES, "tests/test_w.py::test_w"], "run": [NODES[0]]}
    (tmp_path / "batch.json").write_text(json.dumps(batch))
    path = str(tmp_path / "src/pgshop/__init__.py")
    cfg_path = supervisor_config(
        tmp_path,
        ["tests/test_v.py", "tests/test_w.py"],
        variants_file=str(tmp_path / "variants.bin"),
        variants=[
            {"path": path, "offset": 0, "size": len(MUTANT.encode())},
            {"path": path, "offset": len(MUTANT.encode()), "size": len(ON_DISK.encode())},
        ],
    )
    items, err = _items_with_batch(cfg_path, tmp_path / "batch.json")
    assert items == [(NODES[0], "fail"), (NODES[0], "pass")], err
    collected = ZYGOTES["zygotes"] and "judges forked after collecting once: 2" in err
    assert (tmp_path / "collected").read_text() == ("w\n" if collected else "w\nw\n"), err
    assert (tmp_path / "answered").read_text().count("noted") == (3 if collected else 2), err


def _one_variant_run(tmp_path: Path, tests: dict[str, str], nodes: list[str]) -> list[str]:
    """The outcomes of ``nodes`` over two controls (the disk's bytes), each pair forked or fresh
    as the ``zygotes`` fixture says."""
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, **tests})
    (tmp_path / "variants.bin").write_bytes(ON_DISK.encode() * 2)
    size = len(ON_DISK.encode())
    path = str(tmp_path / "src/pgshop/__init__.py")
    cfg = supervisor_config(
        tmp_path,
        nodes,
        variants_file=str(tmp_path / "variants.bin"),
        variants=[{"path": path, "offset": i * size, "size": size} for i in range(2)],
    )
    code, records, err = run_supervisor(cfg)
    assert code == 0, err
    return [r["outcome"] for r in records if r["kind"] == "item"]


def test_a_forked_judge_starts_with_what_its_zygote_made_frozen(
    tmp_path: Path, zygotes: bool
) -> None:
    """The zygote moves everything it made (pytest, its plugins, Hypothesis) to the collector's
    permanent generation before it serves, so a run's collections walk only what the run made;
    a fresh judge (the control) has nothing frozen."""
    frozen = "import gc\n\ndef test_frozen():\n    assert gc.get_freeze_count() > 0\n"
    got = _one_variant_run(tmp_path, {"tests/test_gc.py": frozen}, ["tests/test_gc.py"])
    assert got == (["pass", "pass"] if zygotes else ["fail", "fail"])


@pytest.mark.usefixtures("zygotes")
def test_a_test_file_changed_after_the_zygote_rewrote_it_is_rewritten_again(
    tmp_path: Path,
) -> None:
    """The zygote's rewritten test modules are used only for the bytes it rewrote: a test file
    that differs at a run's import (here the first run bumps it) is rewritten by that run's
    pytest, so the second run's module is the new version, not the zygote's."""
    grows = """\
VERSION = 1

def test_version():
    with open(__file__) as fh:
        text = fh.read()
    on_disk = int(text.split("VERSION = ", 1)[1].split("\\n", 1)[0])
    assert VERSION == on_disk
    with open(__file__, "w") as fh:
        fh.write(text.replace(f"VERSION = {on_disk}", f"VERSION = {on_disk + 1}", 1))
"""
    got = _one_variant_run(tmp_path, {"tests/test_grows.py": grows}, ["tests/test_grows.py"])
    assert got == ["pass", "pass"]
    assert "VERSION = 3" in (tmp_path / "tests/test_grows.py").read_text()


def test_the_judge_zygote_rewrites_the_runs_files_once_and_only_for_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the judge's zygote rewrites ahead (the top-level ``-p`` plugins, the named test files
    and the conftests above them) and when a run's pytest gets it from memory: the same bytes and
    the default ini only; pytest's own rewrite otherwise, and for a file that does not parse."""
    from _pytest.assertion import rewrite  # noqa: PLC0415 - pytest's own, restored below

    warmstart = load("warmstart")
    write_tree(tmp_path, {
        "conftest.py": "X = 1\n",
        "tests/conftest.py": "Y = 2\n",
        "tests/test_m.py": "def test_a():\n    assert 1 + 1 == 2\n",
        "tests/test_bad.py": "def test_b(:\n",
        "tests/helpers.py": "Z = 3\n",
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(INSIDE))
    args = ["-q", "-p", "no:cacheprovider", "-p", "patchgate_reporter", "-p", "pkg.mod",
            "tests/test_m.py::test_a", "tests/test_bad.py", "tests/missing.py"]  # fmt: skip
    files = warmstart._rewritten_files(args)
    assert files == [INSIDE / "patchgate_reporter.py", tmp_path / "tests/test_m.py",
                     tmp_path / "conftest.py", tmp_path / "tests/conftest.py",
                     tmp_path / "tests/test_bad.py"]  # fmt: skip

    original = rewrite._rewrite_test
    calls: list[Path] = []

    def counted(fn: Path, config: Any) -> Any:
        calls.append(fn)
        return original(fn, config)

    monkeypatch.setattr(rewrite, "_rewrite_test", counted)
    warmstart._memoize_rewrites(files)
    assert calls == files  # each rewritten once, ahead; the broken one did not stop the rest
    memoized = rewrite._rewrite_test
    assert memoized is not counted

    class Ini:
        def __init__(self, pass_hook: bool) -> None:
            self.pass_hook = pass_hook

        def getini(self, name: str) -> object:
            return self.pass_hook if name == "enable_assertion_pass_hook" else []

    test_m = tmp_path / "tests/test_m.py"
    calls.clear()
    _, code = memoized(test_m, Ini(False))
    assert calls == []  # from memory
    assert code == original(test_m, Ini(False))[1]  # what pytest itself makes of those bytes
    memoized(test_m, Ini(True))
    assert calls == [test_m]  # the pass hook changes the rewrite: pytest's own
    test_m.write_text("def test_a():\n    assert 1 + 2 == 3\n")
    calls.clear()
    _, changed = memoized(test_m, Ini(False))
    assert calls == [test_m]
    assert changed != code
    with pytest.raises(SyntaxError):
        memoized(tmp_path / "tests/test_bad.py", Ini(False))  # the run's pytest reports it
    warmstart._memoize_rewrites(files)  # once per process: a second call does not wrap again
    assert rewrite._rewrite_test is memoized


def test_the_judge_zygote_parses_the_runs_files_once_for_their_tracebacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a failing run's report needs of a test file (its syntax tree, and the statements'
    lines pytest computes from it to show the failing statement whole) is made once in the
    judge's zygote, and a run's pytest gets it only for the very text parsed there: the range is
    pytest's own, another text is parsed by pytest, a file that does not parse is left to it."""
    from _pytest._code import code as pcode  # noqa: PLC0415 - pytest's own, restored below
    from _pytest._code import source as psource  # noqa: PLC0415 - pytest's own, restored below

    monkeypatch.setattr(psource, "getstatementrange_ast", psource.getstatementrange_ast)
    monkeypatch.setattr(pcode, "getstatementrange_ast", pcode.getstatementrange_ast)
    original = psource.getstatementrange_ast
    warmstart = load("warmstart")
    text = "def test_a():\n    x = 1\n    assert (\n        x\n        + 1\n    ) == 3\n"
    deep = "x = " + "+".join(["1"] * 20_000) + "\n"  # ast.parse: RecursionError
    write_tree(tmp_path, {"tests/test_m.py": text, "tests/test_bad.py": "def test_b(:\n",
                          "tests/test_deep.py": deep})  # fmt: skip
    files = [tmp_path / "tests/test_m.py", tmp_path / "tests/test_bad.py",
             tmp_path / "tests/test_deep.py"]  # fmt: skip
    warmstart._memoize_tracebacks(files)  # the files that do not parse do not stop it
    assert not any(str(f) in linecache.cache for f in files)  # a forked run's linecache: empty
    memoized = psource.getstatementrange_ast
    assert memoized is not original
    assert pcode.getstatementrange_ast is memoized  # the name a traceback entry calls

    namespace: dict[str, Any] = {}
    exec(compile(text, str(files[0]), "exec"), namespace)  # noqa: S102 - the test's own text
    source, _ = psource.findsource(namespace["test_a"].__code__)  # what pytest holds for a frame
    assert source is not None
    node, start, end = memoized(2, source)
    assert memoized(2, source)[0] is node  # one tree, made in the zygote
    assert getattr(node, "_pytest_statement_linenos", None)  # its lines computed there too
    assert (start, end) == original(2, source)[1:]  # pytest's own range for those lines
    assert end - start == 4  # the whole statement: four lines, not just the failing one

    other = psource.Source("x = 1\ny = (\n    2\n)\n")
    assert memoized(1, other)[0] is not memoized(1, other)[0]  # another text: parsed by pytest
    assert memoized(1, other)[1:] == original(1, other)[1:]
    warmstart._memoize_tracebacks(files)  # once per process: a second call does not wrap again
    assert psource.getstatementrange_ast is memoized


@pytest.mark.usefixtures("forked")
def test_a_forked_judges_report_of_a_failure_is_pytests_own(tmp_path: Path) -> None:
    """A failing multi-line assertion, reported by judges forked from the zygote (which parsed
    the test file ahead) and by a fresh ``python -m pytest`` of the same tree: the same text."""
    conftest = """\
import os

def pytest_runtest_logreport(report):
    if report.failed:
        with open(os.environ.get("PG_REPORTS", "reports.txt"), "a") as fh:
            fh.write(report.longreprtext + "\\n=====\\n")
"""
    span = "def test_span():\n    x = 1\n    assert (\n        x\n        + 1\n    ) == 3\n"
    got = _one_variant_run(
        tmp_path, {"conftest.py": conftest, "tests/test_span.py": span}, ["tests/test_span.py"]
    )
    assert got == ["fail", "fail"]
    forked = (tmp_path / "reports.txt").read_text().split("\n=====\n")[:2]
    assert forked[0] == forked[1]
    whole = ">       assert (\n            x\n            + 1\n        ) == 3\n"  # all of it
    assert whole in forked[0], forked[0]
    fresh = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_span.py"],
        cwd=tmp_path, env={**os.environ, "PG_REPORTS": str(tmp_path / "fresh.txt")},
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert fresh.returncode == 1, fresh.stdout + fresh.stderr
    assert (tmp_path / "fresh.txt").read_text().split("\n=====\n")[0] == forked[0]


def _plugin_site(root: Path) -> Path:
    """A site directory holding one pytest plugin distribution, ``pgplug`` (one module)."""
    site = root / "site"
    write_tree(site, {
        "pgplug.py": "def check(x):\n    assert x == 1\n",
        "pgplug-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: pgplug\nVersion: 1.0\n",
        "pgplug-1.0.dist-info/entry_points.txt": "[pytest11]\npgplug = pgplug\n",
        "pgplug-1.0.dist-info/RECORD": "pgplug.py,,\npgplug-1.0.dist-info/METADATA,,\n",
    })  # fmt: skip
    return site


def _warm(site: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    program = (
        "import sys, importlib.util as u; sys.path.insert(0, sys.argv[1]);"
        "s = u.spec_from_file_location('_pgz', sys.argv[2]); m = u.module_from_spec(s);"
        "s.loader.exec_module(m); sys.exit(m.warm_main())"
    )
    return subprocess.run(
        [sys.executable, "-I", *flags, "-c", program, str(site), str(INSIDE / "warmstart.py")],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def test_warm_writes_pytests_rewrite_cache_for_the_plugin_distributions(tmp_path: Path) -> None:
    """``zygote.py warm`` (set-up) imports the pytest plugins' distributions through pytest's
    rewriting hook with bytecode writing on: pytest's own pyc of each lands beside its source,
    where a read-only sandbox's pytest then finds it instead of rewriting it again."""
    import _pytest.assertion.rewrite as rewrite  # noqa: PLC0415 - the pyc's name is pytest's

    site = _plugin_site(tmp_path)
    proc = _warm(site)
    assert proc.returncode == 0, proc.stderr
    pyc = site / "__pycache__" / f"pgplug{rewrite.PYC_TAIL}"
    assert pyc.is_file(), sorted(p.name for p in site.rglob("*"))


def test_warm_refuses_when_bytecode_writing_is_off(tmp_path: Path) -> None:
    site = _plugin_site(tmp_path)
    proc = _warm(site, "-B")
    assert proc.returncode == 1
    assert "bytecode writing is off" in proc.stderr
    assert not (site / "__pycache__").exists()


@pytest.mark.usefixtures("zygotes")
def test_a_variant_with_its_own_batch_file_runs_its_own_tests(tmp_path: Path) -> None:
    """A variant entry's ``batch`` (the variants of several symbols in one sandbox, each with
    its own covering tests) is the judge's batch for that pair alone: the next variant, without
    one, runs the default batch's tests again, forked or fresh."""
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, "tests/test_v.py": TESTS})
    (tmp_path / "scratch").mkdir()
    sources = [MUTANT, MUTANT, ON_DISK]
    (tmp_path / "variants.bin").write_bytes(b"".join(s.encode() for s in sources))
    default = {"bound_ms": 0, "order": NODES, "run": [NODES[0]]}
    own = {"bound_ms": 0, "order": NODES, "run": [NODES[1]]}
    (tmp_path / "batch.json").write_text(json.dumps(default))
    (tmp_path / "batch-1.json").write_text(json.dumps(own))
    path = str(tmp_path / "src/pgshop/__init__.py")
    entries, offset = [], 0
    for i, s in enumerate(sources):
        entries.append({"path": path, "offset": offset, "size": len(s.encode())})
        offset += len(s.encode())
        if i == 1:
            entries[-1]["batch"] = str(tmp_path / "batch-1.json")
    cfg_path = supervisor_config(
        tmp_path, ["tests/test_v.py"], variants_file=str(tmp_path / "variants.bin"),
        variants=entries,
    )  # fmt: skip
    items, err = _items_with_batch(cfg_path, tmp_path / "batch.json")
    assert items == [(NODES[0], "fail"), (NODES[1], "pass"), (NODES[0], "pass")], err


def test_a_variant_entry_with_a_relative_batch_path_is_a_config_error(tmp_path: Path) -> None:
    write_tree(tmp_path, {"src/pgshop/__init__.py": ON_DISK, "tests/test_v.py": TESTS})
    (tmp_path / "variants.bin").write_bytes(ON_DISK.encode())
    entry = {"path": str(tmp_path / "src/pgshop/__init__.py"), "offset": 0,
             "size": len(ON_DISK.encode()), "batch": "batch-1.json"}  # fmt: skip
    cfg = supervisor_config(
        tmp_path, ["tests/test_v.py"], variants_file=str(tmp_path / "variants.bin"),
        variants=[entry],
    )  # fmt: skip
    code, records, err = run_supervisor(cfg)
    assert (code, records) == (78, [])
    assert "a malformed variant entry" in err
