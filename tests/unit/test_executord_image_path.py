"""A named sandbox image runs with its own PATH; the host image keeps the host Python first."""

from __future__ import annotations

from pathlib import Path

from executord.runs.fakeruntime import FakeRuntime
from executord.sandbox.image import DEFAULT_PATH, image_path, path_from_env
from tests.unit.test_executord_runs import _execute, _rig


def test_path_is_read_from_the_image_env() -> None:
    env = ("LANG=C.UTF-8", "PATH=/opt/patchgate/bin:/usr/bin:/bin")
    assert path_from_env(env) == ("/opt/patchgate/bin", "/usr/bin", "/bin")


def test_relative_and_empty_path_entries_are_dropped() -> None:
    """The working directory is the patched workspace: it must never be searched for commands."""
    assert path_from_env(("PATH=.:bin::/usr/bin",)) == ("/usr/bin",)


def test_no_path_or_no_absolute_dir_means_none() -> None:
    assert path_from_env(("LANG=C",)) is None
    assert path_from_env(("PATH=.:bin",)) is None


def test_image_without_path_gets_the_default() -> None:
    rt = FakeRuntime(images={"img:1"}, image_envs={"img:1": ("HOME=/root",)})
    assert image_path(rt, "img:1") == DEFAULT_PATH


def test_missing_image_gets_the_default() -> None:
    """A missing image reports image_missing per run later; its PATH is not needed now."""
    assert image_path(FakeRuntime(), "absent:1") == DEFAULT_PATH


def test_named_image_path_is_used_by_the_image() -> None:
    rt = FakeRuntime(images={"pg:local"}, image_envs={"pg:local": ("PATH=/opt/pg/bin:/usr/bin",)})
    assert image_path(rt, "pg:local") == ("/opt/pg/bin", "/usr/bin")


def test_sandbox_path_is_path_dirs_then_base_path(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    rig.executor.path_dirs = ()
    rig.executor.base_path = ("/opt/pg/bin", "/usr/bin")
    _execute(rig, runs=1)
    assert rig.runtime.created[0].env["PATH"] == "/opt/pg/bin:/usr/bin"


def test_host_image_keeps_host_python_first(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    _execute(rig, runs=1)
    assert rig.runtime.created[0].env["PATH"] == ":".join(("/venv/bin", *DEFAULT_PATH))
