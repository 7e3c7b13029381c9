"""The `host` image root filesystem and the read-only host mounts; settings parsing."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from executord.errors import SandboxError
from executord.runs.fakeruntime import FakeRuntime
from executord.sandbox.image import PythonEnv, build_host_tar, ensure_image, host_mounts
from executord.settings import parse_bytes


def _members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_host_tar_is_deterministic() -> None:
    """Same uid, same bytes: the image tag (its hash) is stable across starts."""
    assert build_host_tar(10001) == build_host_tar(10001)


def test_host_tar_has_non_root_user_and_sticky_tmp() -> None:
    """/etc/passwd lists the sandbox user; /tmp is 1777; mount points exist."""
    data = build_host_tar(10001)
    members = _members(data)
    assert members["tmp"].mode == 0o1777
    assert {"workspace", "results", "etc/passwd", "etc/group"} <= set(members)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        passwd = tar.extractfile("etc/passwd").read().decode()  # type: ignore[union-attr]
    assert "patchgate:x:10001:10001:" in passwd


def test_host_mounts_are_read_only_and_not_nested(tmp_path: Path) -> None:
    """Python roots inside an already-mounted directory are not mounted twice."""
    (tmp_path / "venv" / "lib").mkdir(parents=True)
    env = PythonEnv(roots=(str(tmp_path / "venv"), str(tmp_path / "venv" / "lib")), bin_dir="x")
    mounts = host_mounts(env)
    assert all(m.read_only for m in mounts)
    assert [m.target for m in mounts].count(str(tmp_path / "venv")) == 1
    assert str(tmp_path / "venv" / "lib") not in [m.target for m in mounts]


def test_host_image_is_imported_once() -> None:
    """`host` is imported when absent and reused when present."""
    rt = FakeRuntime()
    name = ensure_image(rt, "host", uid=10001, pull=False)
    assert name in rt.images
    assert ensure_image(rt, "host", uid=10001, pull=False) == name


def test_missing_named_image_is_not_pulled_without_flag() -> None:
    """Any other image is used as is; missing without --pull is image_missing."""
    with pytest.raises(SandboxError) as info:
        ensure_image(FakeRuntime(), "python:3.11-slim", uid=10001, pull=False)
    assert info.value.kind == "image_missing"


def test_missing_named_image_is_pulled_with_flag() -> None:
    """--pull fetches it."""
    rt = FakeRuntime()
    assert ensure_image(rt, "python:3.11-slim", uid=10001, pull=True) == "python:3.11-slim"
    assert "python:3.11-slim" in rt.images


@pytest.mark.parametrize(
    ("text", "value"), [("512m", 512 << 20), ("2g", 2 << 30), ("100", 100), ("64MB", 64 << 20)]
)
def test_parse_bytes(text: str, value: int) -> None:
    """Sizes with k/m/g suffixes."""
    assert parse_bytes(text) == value


def test_parse_bytes_refuses_junk() -> None:
    """Not a size: ValueError."""
    with pytest.raises(ValueError, match="size"):
        parse_bytes("lots")
