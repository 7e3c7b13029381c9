"""Canonical fixture digest v1 (DESIGN §4), path validation and file hashing."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import patchgate.digest as digest_module
from patchgate.digest import (
    DIGEST_HEADER,
    FileEntry,
    Manifest,
    canonical_bytes,
    hash_file,
    hash_files,
    validate_path,
)
from patchgate.errors import UnsafePathError
from tests.strategies import argvs, manifests, safe_paths

VECTOR = "6ea8f3fe7ff21bd234d472a92daa33697534e140f1426d7981174b0181b87302"


def _entry(data: bytes) -> FileEntry:
    return FileEntry(hashlib.sha256(data).hexdigest(), len(data))


def test_design_test_vector() -> None:
    """The DESIGN §4 test vector reproduces exactly."""
    m = Manifest(
        pin_id="vector",
        files={"fixtures/b.txt": _entry(b"hello"), "fixtures/a.json": _entry(b'{"x": 1}\n')},
        seed=7,
        clock_bound_ms=30000,
        allowed_commands=(
            ("python", "-m", "pytest", "-q"),
            ("python", "-m", "pytest", "-q", "-k", "prorate"),
        ),
    )
    assert m.digest() == VECTOR


def test_canonical_bytes_layout() -> None:
    """Header, file lines, seed, bound and command lines, in that order."""
    m = Manifest(
        pin_id="p", files={"f/x": _entry(b"")}, seed=1, clock_bound_ms=2, allowed_commands=(("a",),)
    )
    empty = hashlib.sha256(b"").hexdigest()
    assert canonical_bytes(m) == (
        DIGEST_HEADER
        + f"file {empty} 0 f/x\n".encode()
        + b'seed 1\nclock_bound_ms 2\ncommand ["a"]\n'
    )


def test_pin_id_is_not_part_of_the_digest() -> None:
    """The pin id names the subject; the digest covers bytes, seed, bound and commands only."""
    m = Manifest(pin_id="a", seed=1, clock_bound_ms=1)
    assert m.digest() == dataclasses.replace(m, pin_id="b").digest()


@given(manifests(), st.randoms())
def test_digest_independent_of_input_order(m: Manifest, rnd: object) -> None:
    """Shuffling the files and the commands does not change the digest."""
    items = list(m.files.items())
    cmds = list(m.allowed_commands)
    rnd.shuffle(items)  # type: ignore[attr-defined]
    rnd.shuffle(cmds)  # type: ignore[attr-defined]
    shuffled = dataclasses.replace(m, files=dict(items), allowed_commands=tuple(cmds))
    assert shuffled.digest() == m.digest()


@given(manifests(min_files=1), st.data())
def test_digest_changes_with_any_file_byte(m: Manifest, data: st.DataObject) -> None:
    """A different file hash (any changed byte) or size changes the digest."""
    path = data.draw(st.sampled_from(sorted(m.files)))
    old = m.files[path]
    new_hash = data.draw(
        st.binary(min_size=32, max_size=32).map(bytes.hex).filter(lambda h: h != old.sha256)
    )
    files = {**m.files, path: FileEntry(new_hash, old.size)}
    assert dataclasses.replace(m, files=files).digest() != m.digest()
    files = {**m.files, path: FileEntry(old.sha256, old.size + 1)}
    assert dataclasses.replace(m, files=files).digest() != m.digest()


@given(manifests(min_files=1), st.data())
def test_digest_changes_with_any_path(m: Manifest, data: st.DataObject) -> None:
    """Renaming a file changes the digest."""
    path = data.draw(st.sampled_from(sorted(m.files)))
    new = data.draw(safe_paths.filter(lambda p: p not in m.files))
    files = dict(m.files)
    files[new] = files.pop(path)
    assert dataclasses.replace(m, files=files).digest() != m.digest()


@given(manifests(), st.integers(0, 2**32 - 1), st.integers(1, 10**8))
def test_digest_changes_with_seed_and_bound(m: Manifest, seed: int, bound: int) -> None:
    """A different seed or clock bound changes the digest."""
    if seed != m.seed:
        assert dataclasses.replace(m, seed=seed).digest() != m.digest()
    if bound != m.clock_bound_ms:
        assert dataclasses.replace(m, clock_bound_ms=bound).digest() != m.digest()


@given(manifests(), argvs)
def test_digest_changes_with_commands(m: Manifest, argv: tuple[str, ...]) -> None:
    """Adding a command, or dropping one, changes the digest."""
    if argv not in m.allowed_commands:
        more = dataclasses.replace(m, allowed_commands=(*m.allowed_commands, argv))
        assert more.digest() != m.digest()
    if m.allowed_commands:
        fewer = dataclasses.replace(m, allowed_commands=m.allowed_commands[1:])
        assert fewer.digest() != m.digest()


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/abs/x",
        "a/../b",
        "..",
        "a/./b",
        ".",
        "a//b",
        "a/",
        "a\\b",
        "a\x00b",
        "a\nb",
        "bad\udcffname",  # a surrogate escape: not UTF-8
    ],
)
def test_validate_path_refuses(path: str) -> None:
    """Unsafe paths of DESIGN §4 are refused with UnsafePathError."""
    with pytest.raises(UnsafePathError):
        validate_path(path)


@pytest.mark.parametrize(
    "path", ["a", "fixtures/a.json", "fixtures/.hidden", "a/..b/c", "ünï/çødé"]
)
def test_validate_path_accepts(path: str) -> None:
    """Relative POSIX UTF-8 paths with ordinary segments pass."""
    assert validate_path(path) == path


def _reference_safe(path: str) -> bool:
    """DESIGN §4's rule spelled out step by step: the slow definition the fast check must equal."""
    try:
        path.encode("utf-8", errors="strict")
    except UnicodeEncodeError:
        return False
    return (
        path != ""
        and not any(c == "\\" or unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"} for c in path)
        and not path.startswith("/")
        and all(seg not in ("", ".", "..") for seg in path.split("/"))
    )


_PATHISH = st.text(
    alphabet=st.sampled_from(
        [
            "a",
            "b",
            ".",
            "/",
            "\\",
            "\x00",
            "\n",
            "\t",
            "\x85",
            "\u202e",
            "\u200b",
            "ü",
            "\udcff",
            " ",
        ]
    ),
    max_size=12,
)


@given(st.one_of(_PATHISH, st.text(max_size=12)))
def test_validate_path_equals_reference(path: str) -> None:
    """The one-regex fast path accepts exactly what the step-by-step rule accepts."""
    if _reference_safe(path):
        assert validate_path(path) == path
    else:
        with pytest.raises(UnsafePathError):
            validate_path(path)


@given(st.lists(st.text(min_size=1, max_size=6).filter(_reference_safe), max_size=8))
def test_code_point_order_is_utf8_byte_order(paths: list[str]) -> None:
    """canonical_bytes sorts paths as str: the same order as by their UTF-8 bytes (DESIGN §4)."""
    assert sorted(paths) == sorted(paths, key=lambda p: p.encode("utf-8"))


@given(manifests())
def test_unsafe_path_in_manifest_refused(m: Manifest) -> None:
    """canonical_bytes validates every path."""
    bad = dataclasses.replace(m, files={**m.files, "../escape": FileEntry("0" * 64, 1)})
    with pytest.raises(UnsafePathError):
        canonical_bytes(bad)


def test_hash_file_streams_large_file(tmp_path: Path) -> None:
    """A file larger than one chunk hashes to its sha256 and size."""
    data = bytes(range(256)) * (5 * 4096 + 3)
    (tmp_path / "big").write_bytes(data)
    assert hash_file(tmp_path / "big") == _entry(data)


def test_hash_files_parallel_equals_serial(tmp_path: Path) -> None:
    """The parallel path (above the size threshold) gives the same entries as the serial one."""
    paths = {}
    for i in range(3):
        p = tmp_path / f"f{i}"
        p.write_bytes(bytes([i]) * (3 << 20))
        paths[f"fixtures/f{i}"] = p
    assert hash_files(paths, workers=3) == hash_files(paths, workers=1)
    assert hash_files(paths, workers=3)["fixtures/f1"] == _entry(bytes([1]) * (3 << 20))


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids os.fork returned in the parent during the test (the child's own calls vanish)."""
    pids: list[int] = []
    real_fork = os.fork

    def counting_fork() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting_fork)
    return pids


def _many_files(tmp_path: Path, n: int) -> dict[str, Path]:
    files = {}
    for i in range(n):
        p = tmp_path / f"f{i:04d}.bin"
        p.write_bytes(f"file {i}\n".encode() * (i % 7))
        files[f"fixtures/f{i:04d}.bin"] = p
    return files


@pytest.mark.parametrize("processes", [2, 3])
def test_forked_hashing_equals_one_process(
    tmp_path: Path, processes: int, forks: list[int]
) -> None:
    """Split over forked processes, every file gets the same entry as hashed here."""
    files = _many_files(tmp_path, 1200)
    here = hash_files(files, workers=1)
    assert hash_files(files, processes=processes) == here
    assert len(forks) == processes - 1
    assert here["fixtures/f0003.bin"] == _entry(b"file 3\n" * 3)


def _no_children_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_forked_hashing_raises_a_childs_oserror(tmp_path: Path, forks: list[int]) -> None:
    """A file that vanished in a child's share raises as if hashed here; no child is left."""
    files = _many_files(tmp_path, 1200)
    gone = "fixtures/f1100.bin"  # in the second half: the child's batch
    files[gone].unlink()
    with pytest.raises(FileNotFoundError) as err:
        hash_files(files, processes=2)
    assert err.value.filename == str(files[gone])
    assert len(forks) == 1
    assert _no_children_left()


def test_forked_hashing_redoes_a_failed_childs_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    """A child that dies without a report has its files hashed by the parent, never guessed."""
    files = _many_files(tmp_path, 1200)
    monkeypatch.setattr(digest_module, "_child_main", lambda batch, w: os._exit(3))
    assert hash_files(files, processes=2) == hash_files(files, workers=1)
    assert len(forks) == 1
    assert _no_children_left()


def test_forked_hashing_refuses_a_malformed_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    """A child whose report is not HEX SIZE lines is ignored and its share hashed again."""
    files = _many_files(tmp_path, 1200)

    def liar(batch: list[tuple[str, Path]], w: int) -> None:
        os.write(w, "\n".join(f"{'0' * 63}x 1" for _ in batch).encode())
        os._exit(0)

    monkeypatch.setattr(digest_module, "_child_main", liar)
    assert hash_files(files, processes=2) == hash_files(files, workers=1)
    assert len(forks) == 1


def test_no_fork_when_other_threads_run(tmp_path: Path, forks: list[int]) -> None:
    """With other Python threads alive the fork path is not taken (a fork copies their locks)."""
    files = _many_files(tmp_path, 1200)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert hash_files(files, processes=2) == hash_files(files, workers=1)
    finally:
        stop.set()
        t.join()
    assert forks == []


def test_interrupted_parent_kills_and_reaps_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    """Ctrl-C while the parent hashes its share: the children are killed and reaped, none left."""
    files = _many_files(tmp_path, 1200)

    def interrupted(items: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(digest_module, "_hash_batch", interrupted)  # the child never calls it
    with pytest.raises(KeyboardInterrupt):
        hash_files(files, processes=2)
    assert len(forks) == 1
    assert _no_children_left()


def test_no_process_to_be_had_hashes_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When fork fails (EAGAIN: no process left), the parent hashes that share itself."""
    files = _many_files(tmp_path, 1200)

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    expected = hash_files(files, workers=1)
    monkeypatch.setattr(os, "fork", no_fork)
    fds = len(os.listdir("/proc/self/fd"))
    assert hash_files(files, processes=3) == expected
    assert len(os.listdir("/proc/self/fd")) == fds  # both pipe ends closed again


@pytest.mark.parametrize(
    "path",
    [
        "fixtures/a\tb.json",  # C0
        "fixtures/a\x85b.json",  # C1 (NEL)
        "fixtures/a\x7fb.json",  # DEL
        "fixtures/invoice\u202egnp.json",  # bidi override: reads as another name
        "fixtures/\u2066a\u2069.json",  # bidi isolate
        "fixtures/a\u200bb.json",  # zero-width space
        "fixtures/a\u200db.json",  # zero-width joiner
        "fixtures/\ufeffa.json",  # byte-order mark
        "fixtures/a\u2028b.json",  # line separator
    ],
)
def test_controls_and_invisible_format_characters_are_refused(path: str) -> None:
    """One validator (client, signer, executor): C0, C1, bidi, zero-width and other ``Cf``."""
    with pytest.raises(UnsafePathError, match="control"):
        validate_path(path)


def test_visible_non_ascii_names_still_pass() -> None:
    assert validate_path("fixtures/café/ünïcode-名前.json") == "fixtures/café/ünïcode-名前.json"
