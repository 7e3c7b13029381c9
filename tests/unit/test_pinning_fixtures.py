"""``pin fixtures`` and ``init``: the fixture tree hashed into the pin; refusals write nothing."""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.errors import EXIT_USAGE, CommandRefused, ConfigError
from client.pinning.changes import Changes, diff_maps
from client.pinning.collect import repin_properties
from client.pinning.fixtures import repin_fixtures, scan_fixtures
from client.pinning.scaffold import apply_init, plan_init
from patchgate.errors import FixtureScanError, UsageError
from patchgate.pins import DirSource, load_config, load_pins
from tests.unit._pinning_helpers import fixture_pin, make_library, write, write_pins


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# -- changes -----------------------------------------------------------------------------------


def test_diff_maps_names_added_removed_changed() -> None:
    changes = diff_maps({"a": 1, "b": 2, "c": 3}, {"b": 2, "c": 4, "d": 5})
    assert changes == Changes(added=("d",), removed=("a",), changed=("c",))
    assert changes.lines() == ["added d", "removed a", "changed c"]
    assert changes.summary() == "1 added, 1 removed, 1 changed"
    assert diff_maps({"a": 1}, {"a": 1}).empty


@given(
    st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=6),
    st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=6),
)
def test_diff_maps_partitions_every_key_that_differs(
    old: dict[str, int], new: dict[str, int]
) -> None:
    """Every key is in at most one list, and exactly the keys whose value differs are listed."""
    changes = diff_maps(old, new)
    listed = [*changes.added, *changes.removed, *changes.changed]
    assert len(listed) == len(set(listed))
    assert set(listed) == {k for k in old.keys() | new.keys() if old.get(k, -1) != new.get(k, -1)}


# -- pin fixtures ------------------------------------------------------------------------------


def test_scan_hashes_every_file_under_the_root(tmp_path: Path) -> None:
    write(tmp_path, {"fixtures/a.json": b"A", "fixtures/sub/b.bin": b"B", "other/c": b"C"})
    assert scan_fixtures(tmp_path, "fixtures") == {
        "fixtures/a.json": _sha(b"A"),
        "fixtures/sub/b.bin": _sha(b"B"),
    }
    assert scan_fixtures(tmp_path, "nothing-here") == {}


def test_repin_rewrites_only_files_and_reports_changes(tmp_path: Path) -> None:
    """A file added, one removed, one changed; pin_id, seed, bound, commands and extra keys kept."""
    write(tmp_path, {"fixtures/keep": b"k", "fixtures/edit": b"new", "fixtures/add": b"a"})
    old = {"fixtures/keep": _sha(b"k"), "fixtures/edit": _sha(b"old"), "fixtures/gone": _sha(b"g")}
    pin = fixture_pin(old, seed=99, clock_bound_ms=1234, pin_id="fixpin-mine", note="kept")
    write_pins(tmp_path, [], fixtures=pin)
    update = repin_fixtures(tmp_path)
    assert update.changes == Changes(
        added=("fixtures/add",), removed=("fixtures/gone",), changed=("fixtures/edit",)
    )
    written = json.loads((tmp_path / "pins/fixtures.json").read_text())
    assert written["files"] == {
        "fixtures/add": _sha(b"a"),
        "fixtures/edit": _sha(b"new"),
        "fixtures/keep": _sha(b"k"),
    }
    assert {k: v for k, v in written.items() if k != "files"} == {
        k: v for k, v in pin.items() if k != "files"
    }
    load_pins(DirSource(tmp_path))  # the result is a valid pin


def test_repin_of_an_unchanged_tree_leaves_the_file_alone(tmp_path: Path) -> None:
    """No path or hash changed: not even the formatting of the file is touched."""
    write(tmp_path, {"fixtures/a": b"A"})
    write_pins(tmp_path, [], fixtures=fixture_pin({"fixtures/a": _sha(b"A")}))
    before = (tmp_path / "pins/fixtures.json").read_bytes()
    assert repin_fixtures(tmp_path).changes.empty
    assert (tmp_path / "pins/fixtures.json").read_bytes() == before


@pytest.mark.parametrize("kind", ["symlink-out", "fifo", "linked-dir"])
def test_an_unsafe_fixture_tree_refuses_and_writes_nothing(tmp_path: Path, kind: str) -> None:
    """Like ``digest``: a link out of the tree, a non-regular file, a linked directory -> exit 2."""
    write(tmp_path, {"fixtures/a": b"A", "secret": b"S"})
    write_pins(tmp_path, [])
    target = tmp_path / "fixtures" / "x"
    if kind == "symlink-out":
        target.symlink_to(tmp_path / "secret")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        (tmp_path / "elsewhere").mkdir()
        target.symlink_to(tmp_path / "elsewhere")
    before = (tmp_path / "pins/fixtures.json").read_bytes()
    with pytest.raises(FixtureScanError) as info:
        repin_fixtures(tmp_path)
    assert info.value.unsafe == ["fixtures/x"]
    assert (tmp_path / "pins/fixtures.json").read_bytes() == before


def test_repin_without_a_pin_or_with_a_broken_one_is_a_configuration_error(tmp_path: Path) -> None:
    """No fixtures.json: run init first (78). Invalid seed: every parser problem (78)."""
    with pytest.raises(CommandRefused, match="run 'patchgate init' first") as info:
        repin_fixtures(tmp_path)
    assert info.value.exit_code == 78
    write_pins(tmp_path, [], fixtures=fixture_pin(seed=-1, clock_bound_ms=0))
    with pytest.raises(ConfigError) as err:
        repin_fixtures(tmp_path)
    assert [p.split(": ")[1] for p in err.value.problems] == ["seed", "clock_bound_ms"]


# -- init --------------------------------------------------------------------------------------


def test_init_scaffolds_pins_and_appends_the_table(tmp_path: Path) -> None:
    """src/ layout with a pyproject.toml: its bytes kept, [tool.patchgate] appended, pins valid."""
    root = make_library(tmp_path)
    before = (root / "pyproject.toml").read_bytes()
    plan = plan_init(root)
    apply_init(plan)
    after = (root / "pyproject.toml").read_bytes()
    assert after.startswith(before)
    assert tomllib.loads(after.decode())["tool"]["patchgate"] == {"source_roots": ["src"]}
    assert plan.created == [
        "pins/fixtures.json",
        "pins/properties.json",
        "pins/flakes.json",
        "pyproject.toml",
    ]
    pins = load_pins(DirSource(root))
    assert pins.fixtures.files == {"fixtures/words.json": _sha(b'{"words": ["a", "b"]}\n')}
    assert pins.fixtures.allowed_commands == (
        ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider"),
    )
    assert (pins.properties, pins.flakes) == ((), ())
    assert pins.config.roots(has_src=True) == ("src",)


def test_init_without_pyproject_writes_patchgate_toml_with_root_layout(tmp_path: Path) -> None:
    """No src/: source_roots is the repository root; no pyproject.toml: a patchgate.toml."""
    write(tmp_path, {"pkg/mod.py": "x = 1\n"})
    apply_init(plan_init(tmp_path, fixture_root="data/"))
    config = load_config(DirSource(tmp_path))
    assert config.source_roots == ("",)
    assert config.fixture_root == "data"
    assert not (tmp_path / "pyproject.toml").exists()


def test_init_appends_after_a_file_without_final_newline(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.ruff]\nline-length = 90"})
    apply_init(plan_init(tmp_path))
    doc = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert doc["tool"]["ruff"] == {"line-length": 90}
    assert doc["tool"]["patchgate"] == {"source_roots": ["."]}


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"pins/properties.json": "{}"}, "pins/properties.json"),
        ({"patchgate.toml": ""}, "patchgate.toml"),
        ({"pyproject.toml": "[tool.patchgate]\n"}, "[tool.patchgate]"),
        ({"pyproject.toml": "[tool]\npatchgate = {pins_dir = 'p'}\n"}, "[tool.patchgate]"),
        ({"pyproject.toml": "tool.patchgate.exclude = []\n"}, "[tool.patchgate]"),
    ],
)
def test_init_never_overwrites(tmp_path: Path, files: dict[str, str], named: str) -> None:
    """An existing pin file, patchgate.toml or [tool.patchgate] (any spelling): refused, 64,
    named, and not one byte written."""
    write(tmp_path, {"fixtures/a": b"A", **files})
    before = _snapshot(tmp_path)
    with pytest.raises(CommandRefused, match=named.replace("[", r"\[").replace(".", r"\.")) as info:
        plan_init(tmp_path)
    assert info.value.exit_code == EXIT_USAGE
    assert _snapshot(tmp_path) == before


def test_init_refuses_a_dangling_symlink_in_place_of_a_pin(tmp_path: Path) -> None:
    """A link named pins/fixtures.json (even dangling) is never written through."""
    (tmp_path / "pins").mkdir()
    (tmp_path / "pins" / "fixtures.json").symlink_to(tmp_path / "outside.json")
    with pytest.raises(CommandRefused, match=r"pins/fixtures\.json"):
        plan_init(tmp_path)
    assert not (tmp_path / "outside.json").exists()


def test_init_refuses_an_unreadable_pyproject_and_an_unsafe_tree(tmp_path: Path) -> None:
    """Invalid TOML: 78 and nothing written; a link out of the fixture tree: exit 2."""
    write(tmp_path, {"pyproject.toml": "[project\n"})
    with pytest.raises(ConfigError, match="cannot read as TOML"):
        plan_init(tmp_path)
    write(tmp_path, {"pyproject.toml": "", "secret": "s"})
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "s").symlink_to(tmp_path / "secret")
    with pytest.raises(FixtureScanError):
        plan_init(tmp_path)
    assert not (tmp_path / "pins").exists()
    with pytest.raises(UsageError, match="--fixture-root"):
        plan_init(tmp_path, fixture_root="../up")


# -- never through a link ------------------------------------------------------------------------


@pytest.mark.parametrize("linked", ["pins", "pins/fixtures.json", "pins/properties.json"])
def test_pin_commands_never_write_through_a_link(tmp_path: Path, linked: str) -> None:
    """A linked pins/ (or pin file) would send the pin outside the repository: refused, 78."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    write(repo, {"fixtures/a": b"A"})
    write_pins(outside, [])
    if linked == "pins":
        (repo / "pins").symlink_to(outside / "pins")
    else:
        write_pins(repo, [])
        (repo / linked).unlink()
        (repo / linked).symlink_to(outside / linked)
    before = _snapshot(outside)

    def command() -> object:
        if linked == "pins/properties.json":
            return repin_properties(repo, collect=lambda r, p: [])
        return repin_fixtures(repo)

    with pytest.raises(CommandRefused, match="is a symlink") as info:
        command()
    assert info.value.exit_code == 78
    assert _snapshot(outside) == before


@pytest.mark.parametrize("linked", ["pins", "pyproject.toml"])
def test_init_never_writes_through_a_link(tmp_path: Path, linked: str) -> None:
    """A linked pins/ or pyproject.toml: refused (78), the link's target untouched."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    write(outside, {"pyproject.toml": "[project]\nname = 'x'\n", "pins/.keep": ""})
    repo.mkdir()
    (repo / linked).symlink_to(outside / linked)
    before = _snapshot(outside)
    with pytest.raises(CommandRefused, match="is a symlink") as info:
        plan_init(repo)
    assert info.value.exit_code == 78
    assert _snapshot(outside) == before


# -- what git tracks (issue 24) ----------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    import subprocess  # noqa: PLC0415 - only these tests run git

    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_init_and_pin_fixtures_refuse_files_git_ignores_or_does_not_track(tmp_path: Path) -> None:
    """A gitignored catalog and a file never added are absent from every commit the gate reads:
    both commands refuse (78, each file named by kind, nothing written); --skip-untracked pins the
    rest and lists them; a file force-added despite the ignore rule is tracked and pinned."""
    write(
        tmp_path,
        {
            ".gitignore": "*.mo\n",
            "fixtures/a.json": b"A",
            "fixtures/de.mo": b"M",
            "fixtures/new.txt": b"N",
            "fixtures/forced.mo": b"F",
        },
    )
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".gitignore", "fixtures/a.json")
    _git(tmp_path, "add", "-f", "fixtures/forced.mo")
    before = _snapshot(tmp_path)
    with pytest.raises(CommandRefused) as info:
        plan_init(tmp_path)
    assert info.value.exit_code == 78
    assert "fixtures/de.mo: ignored by git" in info.value.reason
    assert "fixtures/new.txt: not tracked by git" in info.value.reason
    assert "forced.mo" not in info.value.reason
    assert "a.json" not in info.value.reason
    assert _snapshot(tmp_path) == before
    plan = plan_init(tmp_path, skip_untracked=True)
    assert plan.skipped == ("fixtures/de.mo", "fixtures/new.txt")
    apply_init(plan)
    pinned = json.loads((tmp_path / "pins/fixtures.json").read_text())["files"]
    assert sorted(pinned) == ["fixtures/a.json", "fixtures/forced.mo"]

    write(tmp_path, {"fixtures/b.json": b"B"})  # a new file, not added
    pin = (tmp_path / "pins/fixtures.json").read_bytes()
    with pytest.raises(CommandRefused) as again:
        repin_fixtures(tmp_path)
    assert "fixtures/b.json: not tracked by git" in again.value.reason
    assert (tmp_path / "pins/fixtures.json").read_bytes() == pin
    update = repin_fixtures(tmp_path, skip_untracked=True)
    assert update.skipped == ("fixtures/b.json", "fixtures/de.mo", "fixtures/new.txt")
    assert update.changes.empty
    _git(tmp_path, "add", "fixtures/b.json")
    assert repin_fixtures(tmp_path, skip_untracked=True).changes.added == ("fixtures/b.json",)


def test_outside_a_git_work_tree_every_file_is_pinned(tmp_path: Path) -> None:
    """No repository, nothing to compare with: the rule does not apply (docs/operator.md)."""
    write(tmp_path, {"fixtures/a.json": b"A"})
    assert plan_init(tmp_path).fixture_files == 1


def test_init_finds_tests_inside_the_package_and_writes_them_as_oracle_paths(
    tmp_path: Path,
) -> None:
    """Real libraries, second round: referencing keeps its tests in referencing/tests/; init
    names that directory (and keeps properties/ and pins/) so collection and R7 find them."""
    write(tmp_path, {"pkg/__init__.py": ""})
    write(tmp_path, {"pkg/tests/__init__.py": ""})
    write(tmp_path, {"pkg/tests/test_core.py": "def test_a():\n    assert True\n"})
    write(tmp_path, {"pkg/sub/tests/conftest.py": ""})
    write(tmp_path, {"fixtures/a.json": "{}\n"})
    plan = plan_init(tmp_path)
    apply_init(plan)
    config = load_config(DirSource(tmp_path))
    assert config.oracle_paths == ("pkg/sub/tests/", "pkg/tests/", "properties/", "pins/")
    assert plan.oracle_paths == config.oracle_paths


def test_init_keeps_the_default_oracle_paths_for_a_root_tests_directory(tmp_path: Path) -> None:
    """The common layout writes no oracle_paths line: the default already says tests/."""
    write(tmp_path, {"pkg/__init__.py": ""})
    write(tmp_path, {"tests/test_core.py": "def test_a():\n    assert True\n"})
    write(tmp_path, {"fixtures/a.json": "{}\n"})
    apply_init(plan_init(tmp_path))
    assert "oracle_paths" not in (tmp_path / "patchgate.toml").read_text()
    assert load_config(DirSource(tmp_path)).oracle_paths == ("tests/", "properties/", "pins/")
