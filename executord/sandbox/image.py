"""Sandbox images: the local ``host`` image and the host Python mounted into it read-only.

``--image host`` is for machines without a registry: a tiny image made with ``docker import`` from a
tarball built here (``/etc/passwd`` and ``/etc/group`` holding one non-root user, empty ``/tmp``
(1777), ``/workspace``, ``/results``, and the ``bin``/``lib``/``sbin`` links the host's usr-merged
layout needs). The host's ``/usr`` (and ``/lib*`` when they are real directories) and a Python
environment are bind-mounted read-only: by default the executor's own interpreter (``sys.prefix``,
``sys.base_prefix`` and its site-packages), or the one ``--host-python`` names. Any other image name
is used as is and pulled only when ``--pull`` is given; its sandboxes get the image's own ``PATH``
(``Config.Env``), falling back to :data:`DEFAULT_PATH`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import site
import subprocess
import sys
import sysconfig
import tarfile
from dataclasses import dataclass
from pathlib import Path

from executord.errors import SandboxError
from executord.sandbox.container import ContainerRuntime, Mount

__all__ = [
    "DEFAULT_PATH",
    "HOST_IMAGE_REPO",
    "PythonEnv",
    "build_host_tar",
    "ensure_image",
    "host_mounts",
    "host_python_env",
    "image_path",
    "path_from_env",
    "runtime_mounts",
]

HOST_IMAGE_REPO = "patchgate-host"
DEFAULT_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
_SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
_PROBE = (
    "import json, site, sys, sysconfig; "
    "b = {'base': sys.base_prefix, 'platbase': sys.base_prefix}; "
    "print(json.dumps({'prefix': sys.prefix, 'base_prefix': sys.base_prefix, "
    "'executable': sys.executable, 'site': site.getsitepackages(), "
    "'base_site': sorted({sysconfig.get_path(k, vars=b) for k in ('purelib', 'platlib')} "
    "| set(site.getsitepackages([sys.base_prefix])))}))"
)


@dataclass(frozen=True)
class PythonEnv:
    """A Python environment to mount: its roots and the ``bin`` that goes first on PATH."""

    roots: tuple[str, ...]
    bin_dir: str
    #: The base interpreter alone (no venv, no site-packages on the path): what a suite with its
    #: own environment runs with. ``base_site``: the base's site-packages, hidden in such runs.
    base_roots: tuple[str, ...] = ()
    base_bin: str = ""
    base_site: tuple[str, ...] = ()


def host_python_env(host_python: Path | None = None) -> PythonEnv:
    """The executor's own interpreter, or the one at ``host_python`` (asked, not guessed)."""
    if host_python is None:
        info = {
            "prefix": sys.prefix,
            "base_prefix": sys.base_prefix,
            "executable": sys.executable,
            "site": [p for p in sys.path if p.endswith("site-packages")],
            "base_site": sorted(
                {sysconfig.get_path(k, vars=_base_vars()) for k in ("purelib", "platlib")}
                | set(site.getsitepackages([sys.base_prefix]))
            ),
        }
    else:
        try:
            out = subprocess.run(
                [str(host_python), "-c", _PROBE], capture_output=True, check=True, timeout=30
            ).stdout
            info = json.loads(out)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            raise SandboxError(
                "internal", f"--host-python {host_python}: cannot probe: {exc}"
            ) from exc
    roots = [str(info["prefix"]), str(info["base_prefix"]), *map(str, info["site"])]
    base = str(info["base_prefix"])
    return PythonEnv(
        roots=_outermost(roots),
        bin_dir=str(Path(str(info["prefix"])) / "bin"),
        base_roots=_outermost([base]),
        base_bin=str(Path(base) / "bin"),
        base_site=tuple(p for p in map(str, info.get("base_site", ())) if os.path.isdir(p)),
    )


def _base_vars() -> dict[str, str]:
    return {"base": sys.base_prefix, "platbase": sys.base_prefix}


def _outermost(paths: list[str]) -> tuple[str, ...]:
    """Existing real directories, with any path inside another one dropped."""
    real = sorted(
        {os.path.realpath(p) for p in paths if os.path.isdir(p)}
        | {p for p in paths if os.path.isdir(p)}
    )
    out: list[str] = []
    for p in real:
        if not any(p == o or p.startswith(o.rstrip("/") + "/") for o in out):
            out.append(p)
    return tuple(out)


def host_mounts(env: PythonEnv) -> tuple[Mount, ...]:
    """Read-only mounts of the host's system directories and the Python environment."""
    system = [d for d in _SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    roots = _outermost([*system, *env.roots])
    return tuple(Mount(source=r, target=r, read_only=True) for r in roots)


def runtime_mounts(env: PythonEnv) -> tuple[Mount, ...]:
    """The system directories and the base interpreter only: no venv, no executor packages.

    For a suite with its own environment (pytest comes from it): the caller hides ``base_site``.
    """
    system = [d for d in _SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    return tuple(
        Mount(source=r, target=r, read_only=True) for r in _outermost([*system, *env.base_roots])
    )


def _symlinks() -> dict[str, str]:
    """The top-level links the host has (``/lib -> usr/lib`` on usr-merged systems)."""
    links = {}
    for d in _SYSTEM_DIRS[1:]:
        if os.path.islink(d):
            links[d.lstrip("/")] = os.readlink(d)
    return links


def build_host_tar(uid: int = 10001) -> bytes:
    """The root filesystem of the ``host`` image, deterministic (fixed mtimes, root owner)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add_dir(name: str, mode: int) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)

        def add_file(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))

        for name in ("etc", "usr", "workspace", "results", "proc", "dev", "sys"):
            add_dir(name, 0o755)
        add_dir("tmp", 0o1777)
        add_file(
            "etc/passwd",
            (
                "root:x:0:0:root:/root:/nonexistent\n"
                f"patchgate:x:{uid}:{uid}:patchgate sandbox:/tmp:/nonexistent\n"
            ).encode(),
        )
        add_file("etc/group", f"root:x:0:\npatchgate:x:{uid}:\n".encode())
        for name, target in sorted(_symlinks().items()):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def ensure_image(runtime: ContainerRuntime, image: str, *, uid: int, pull: bool) -> str:
    """Resolve ``image`` to a local image name, importing the ``host`` image when needed."""
    if image == "host":
        tar = build_host_tar(uid)
        tag = hashlib.sha256(tar).hexdigest()[:16]
        name = f"{HOST_IMAGE_REPO}:{tag}"
        if not runtime.image_present(name):
            runtime.import_image(tar, HOST_IMAGE_REPO, tag)
        return name
    if not runtime.image_present(image):
        if not pull:
            raise SandboxError(
                "image_missing", f"image {image} is not present; pass --pull to fetch it"
            )
        runtime.pull(image)
    return image


def path_from_env(env: tuple[str, ...]) -> tuple[str, ...] | None:
    """The absolute directories of the last ``PATH=`` entry of an image's ``Config.Env``.

    None when there is no ``PATH`` or it names no absolute directory (relative entries and empty
    ones are dropped: the sandbox's working directory is the patched workspace, which must not
    become a place commands are found in).
    """
    value = None
    for item in env:
        name, sep, rest = item.partition("=")
        if sep and name == "PATH":
            value = rest
    if value is None:
        return None
    dirs = tuple(d for d in value.split(":") if d.startswith("/"))
    return dirs or None


def image_path(runtime: ContainerRuntime, image: str) -> tuple[str, ...]:
    """The sandbox ``PATH`` directories of a named image: its own ``PATH``, else the default."""
    try:
        dirs = path_from_env(runtime.image_env(image))
    except SandboxError:
        return DEFAULT_PATH
    return dirs if dirs is not None else DEFAULT_PATH
