"""patchgate's own environments, built as a fresh machine builds them (needs the package index).

* the development lock installs into a fresh venv with every hash checked, and is consistent;
* the locks are what pyproject.toml asks (``scripts/lock.sh --check``);
* a user's install with the *lowest* versions pyproject.toml declares imports and serves: both
  daemons start, answer health checks, and the signer signs the contract's test vector.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"


def _run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=900, check=False,
        **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    assert done.returncode == 0, (
        f"{argv[:4]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done


def _venv(where: Path) -> Path:
    _run([sys.base_prefix + "/bin/python3", "-m", "venv", str(where)])
    return where / "bin" / "python"


def test_the_dev_lock_installs_into_a_fresh_venv(tmp_path: Path) -> None:
    """setup.sh's install, from nothing: every file hash-checked, and pip check passes."""
    python = _venv(tmp_path / "venv")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, "--require-hashes", "-r", str(ROOT / "requirements" / "dev.txt")])
    _run([*pip, "--no-deps", "--no-build-isolation", str(ROOT)], cwd=tmp_path)
    _run([str(python), "-m", "pip", "check"])
    versions = _run(
        [
            str(python),
            "-c",
            "import grpc, google.protobuf as p; print(grpc.__version__, p.__version__)",
        ]
    )
    pinned = (ROOT / "requirements" / "dev.txt").read_text()
    grpc_v, pb_v = versions.stdout.split()
    assert f"\ngrpcio=={grpc_v} " in pinned
    assert f"\nprotobuf=={pb_v} " in pinned


def test_the_locks_are_what_pyproject_asks() -> None:
    """scripts/lock.sh --check: no dependency was added, dropped or re-ranged without a re-lock."""
    _run(["bash", str(ROOT / "scripts" / "lock.sh"), "--check"], cwd=ROOT)


def test_the_lowest_declared_versions_import_and_serve(tmp_path: Path) -> None:
    """uv's lowest-direct resolution of pyproject.toml: both daemons serve, the signer signs."""
    python = _venv(tmp_path / "venv")
    _run([str(UV), "pip", "install", "-q", "--python", str(python), "--resolution",
          "lowest-direct", "--no-cache", str(ROOT)], cwd=tmp_path)  # fmt: skip
    listed = _run([str(UV), "pip", "list", "--format", "json", "--python", str(python)])
    installed = {p["name"]: p["version"] for p in json.loads(listed.stdout)}
    for declared in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        req = Requirement(declared)
        floor = min(Version(s.version) for s in req.specifier if s.operator == ">=")
        assert Version(installed[req.name]) == floor, (req.name, installed[req.name])
    work = Path(tempfile.mkdtemp(prefix="pgi-", dir="/tmp"))  # a short path for the sockets
    os.chmod(work, 0o700)
    smoke = _run([str(python), str(Path(__file__).with_name("install_smoke.py")), str(work),
                  "--executor"], cwd=tmp_path)  # fmt: skip
    assert smoke.stdout.strip().endswith("smoke: ok")
