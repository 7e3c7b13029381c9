"""Extracting the base tree refuses unsafe archive members, also on Python < 3.11.4 (no filters)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from client.gate.workspace import _extract
from patchgate.errors import PatchgateError


def _tar(*members: tuple[str, bytes | None, str | None]) -> tarfile.TarFile:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                info.size = len(data or b"")
                tar.addfile(info, io.BytesIO(data or b""))
    buf.seek(0)
    return tarfile.open(fileobj=buf, mode="r:")


@pytest.fixture(params=["filter", "no-filter"])
def python_tarfile(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both the 3.11.4+ path (data filter) and the older path (manual checks)."""
    if request.param == "no-filter":
        monkeypatch.delattr(tarfile, "data_filter")
    return str(request.param)


def test_safe_archive_extracts(python_tarfile: str, tmp_path: Path) -> None:
    """Files and an in-tree symlink are extracted."""
    _extract(_tar(("pkg/a.py", b"x = 1\n", None), ("pkg/b.py", None, "a.py")), tmp_path)
    assert (tmp_path / "pkg" / "a.py").read_bytes() == b"x = 1\n"
    assert (tmp_path / "pkg" / "b.py").read_bytes() == b"x = 1\n"


@pytest.mark.parametrize(
    "member",
    [
        ("../escape.py", b"x", None),
        ("evil", None, "/etc/passwd"),
        ("pkg/up", None, "../../outside"),
    ],
)  # fmt: skip
def test_unsafe_member_is_refused(
    python_tarfile: str, tmp_path: Path, member: tuple[str, bytes | None, str | None]
) -> None:
    """Absolute names, '..' names and links leaving the tree are refused."""
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises((PatchgateError, tarfile.TarError)):
        _extract(_tar(member), dest)
    assert not (tmp_path / "escape.py").exists()


def test_absolute_name_never_lands_outside(python_tarfile: str, tmp_path: Path) -> None:
    """An absolute member name is refused (manual checks) or kept inside the tree (data filter)."""
    dest = tmp_path / "dest"
    dest.mkdir()
    name = f"/{tmp_path.name}-abs.py"
    try:
        _extract(_tar((name, b"x", None)), dest)
    except PatchgateError:
        assert python_tarfile == "no-filter"
    else:
        assert (dest / name.lstrip("/")).read_bytes() == b"x"
    assert not Path(name).exists()
