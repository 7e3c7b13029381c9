"""Wheels for tests, made offline: an installed distribution repacked, or a tiny one written.

``repack`` turns a distribution installed in the test interpreter (pytest and what it needs) into
a ``py3-none-any`` wheel from its own files (its RECORD lists them), so environment builds in the
tests use ``--no-index --find-links`` and never reach a package index.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import zipfile
from pathlib import Path

__all__ = ["PYTEST_STACK", "lock_line", "make_wheel", "repack"]

PYTEST_STACK = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")
_WHEEL = (
    b"Wheel-Version: 1.0\nGenerator: patchgate-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write(path: Path, files: dict[str, bytes], dist_info: str) -> Path:
    record = [_record_line(n, d) for n, d in sorted(files.items())]
    record.append(f"{dist_info}/RECORD,,")
    files = {**files, f"{dist_info}/RECORD": ("\n".join(record) + "\n").encode()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in sorted(files.items()):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return path


def repack(name: str, out: Path) -> Path:
    """A wheel of the installed distribution ``name`` in ``out`` (bytecode and scripts left out)."""
    dist = md.distribution(name)
    meta_name = dist.metadata["Name"]
    norm = meta_name.replace("-", "_")
    version = dist.version
    files: dict[str, bytes] = {}
    info_dir = ""
    for f in dist.files or ():
        rel = str(f)
        if rel.startswith("..") or "__pycache__" in rel or rel.endswith(".pyc"):
            continue
        if rel.endswith(".dist-info/RECORD") or rel.endswith(("INSTALLER", "REQUESTED")):
            continue
        if rel.endswith("direct_url.json"):
            continue
        full = Path(str(f.locate()))
        if not full.is_file():
            continue
        if ".dist-info/" in rel:
            info_dir = rel.split("/", 1)[0]
        files[rel] = full.read_bytes()
    files[f"{info_dir}/WHEEL"] = _WHEEL
    return _write(out / f"{norm}-{version}-py3-none-any.whl", files, info_dir)


def make_wheel(
    out: Path, name: str, version: str, modules: dict[str, str], requires: tuple[str, ...] = ()
) -> Path:
    """A pure wheel of ``name`` holding ``modules`` (path -> source), requiring ``requires``."""
    info = f"{name}-{version}.dist-info"
    files = {p: s.encode() for p, s in modules.items()}
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files[f"{info}/METADATA"] = meta.encode()
    files[f"{info}/WHEEL"] = _WHEEL
    return _write(out / f"{name}-{version}-py3-none-any.whl", files, info)


def lock_line(wheel: Path) -> str:
    """``name==version --hash=sha256:...`` of a wheel file."""
    name, version = wheel.name.split("-")[:2]
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return f"{name}=={version} --hash=sha256:{digest}"
