"""patchgate/lockgaps.py: what a suite's lock leaves out, named with who needs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchgate.environment import build_environment
from patchgate.errors import EnvironmentBuildError
from patchgate.lockgaps import lock_gaps
from tests.wheelhouse import PYTEST_STACK, lock_line, make_wheel, repack


def _dist(tree: Path, name: str, version: str, *requires: str) -> None:
    info = tree / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


def test_a_complete_lock_has_no_gap(tmp_path: Path) -> None:
    _dist(tmp_path, "pytest", "8.3.0", "pluggy<2,>=1.5", "colorama; sys_platform == 'win32'")
    _dist(tmp_path, "pluggy", "1.5.0")
    assert lock_gaps(tmp_path) == []


def test_a_missing_dependency_is_named_with_who_needs_it(tmp_path: Path) -> None:
    """Real libraries, second round: a lock compiled on 3.13 lacks typing-extensions for 3.11."""
    _dist(tmp_path, "referencing", "0.37.0", "typing-extensions>=4.4; python_version < '3.13'")
    (gap,) = lock_gaps(tmp_path)
    assert gap == (
        "referencing 0.37.0 needs typing-extensions>=4.4, which the lock does not install"
    )


def test_a_version_outside_the_range_is_named(tmp_path: Path) -> None:
    _dist(tmp_path, "pytest", "8.3.0", "pluggy<2,>=1.5")
    _dist(tmp_path, "pluggy", "1.0.0")
    assert lock_gaps(tmp_path) == ["pytest 8.3.0 needs pluggy<2,>=1.5, but the lock installs 1.0.0"]


def test_markers_and_extras_that_do_not_apply_are_not_gaps(tmp_path: Path) -> None:
    _dist(tmp_path, "a", "1", "old; python_version < '3.0'", "extra-only; extra == 'dev'")
    assert lock_gaps(tmp_path) == []


def test_an_extra_asked_for_brings_its_own_requirements(tmp_path: Path) -> None:
    _dist(tmp_path, "app", "1", "lib[fast]>=1")
    _dist(tmp_path, "lib", "1", "speedup; extra == 'fast'")
    assert lock_gaps(tmp_path) == ["lib 1 [fast] needs speedup, which the lock does not install"]


def test_env_build_refuses_a_lock_with_a_gap_and_names_it(tmp_path: Path) -> None:
    """The build stops before digesting anything: the missing distribution and who needs it."""
    (tmp_path / "w").mkdir()
    wheel = make_wheel(tmp_path / "w", "needy", "1.0", {"needy.py": "x = 1\n"}, ("absentdep>=2",))
    stack = [repack(n, tmp_path / "w") for n in PYTEST_STACK]
    lock = "".join(lock_line(w) + "\n" for w in [*stack, wheel]).encode()
    with pytest.raises(EnvironmentBuildError) as info:
        build_environment(
            lock=lock,
            lock_name="requirements-test.txt",
            source_roots=("src",),
            cache=tmp_path / "cache",
            find_links=(tmp_path / "w",),
            no_index=True,
        )
    assert "requirements-test.txt misses what its packages need" in str(info.value)
    assert "needy 1.0 needs absentdep>=2, which the lock does not install" in str(info.value)
    assert not list((tmp_path / "cache" / "env" / "index").glob("*"))
