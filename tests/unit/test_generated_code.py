"""The checked-in protobuf/gRPC code in patchgate/v1/ is what scripts/gen_proto.sh makes now.

Two questions, two messages. *Stale*: the schema or the code that serves it changed (a field, a
message, a method) and the files were not regenerated. *Generator drift*: the code is the same but
another grpcio-tools made it, so the version stamps moved (``GRPC_GENERATED_VERSION`` and the
protobuf runtime check); the lock (requirements/dev.txt) pins the generator, so drift means this
environment is not the locked one. The stamps are also the true lower bounds of grpcio and
protobuf: pyproject.toml must not promise less.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "patchgate" / "v1"
_PATTERNS = ("*_pb2.py", "*_pb2_grpc.py", "*_pb2.pyi")

# The lines a generator writes about itself, not about the schema.
_GRPC_STAMP = re.compile(r"^GRPC_GENERATED_VERSION = '([^']*)'$", re.M)
_PROTOBUF_COMMENT = re.compile(r"^# Protobuf Python Version: (\S+)$", re.M)
_PROTOBUF_CHECK = re.compile(
    r"(_runtime_version\.ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,\s*)"
    r"(\d+),\s*(\d+),\s*(\d+),\s*'([^']*)',"
)


def _regenerate(repo: Path, out: Path) -> Path:
    """Run ``repo``'s gen_proto.sh into ``out`` with this interpreter's ``python``."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(
        ["bash", str(repo / "scripts" / "gen_proto.sh"), str(out)],
        check=True,
        capture_output=True,
        env=env,
        timeout=120,
    )
    return out / "patchgate" / "v1"


def stamps(text: str) -> dict[str, str]:
    """The generator's version stamps in one generated file."""
    found: dict[str, str] = {}
    if m := _GRPC_STAMP.search(text):
        found["grpc"] = m.group(1)
    if m := _PROTOBUF_CHECK.search(text):
        found["protobuf"] = ".".join(m.group(2, 3, 4)) + m.group(5)
    elif m := _PROTOBUF_COMMENT.search(text):
        found["protobuf"] = m.group(1)
    return found


def without_stamps(text: str) -> str:
    """``text`` with the generator's version stamps blanked: what the schema decides."""
    text = _GRPC_STAMP.sub("GRPC_GENERATED_VERSION = '<stamp>'", text)
    text = _PROTOBUF_COMMENT.sub("# Protobuf Python Version: <stamp>", text)
    return _PROTOBUF_CHECK.sub(r"\g<1><stamp>,", text)


def _names(fresh: Path) -> list[str]:
    return sorted({p.name for pat in _PATTERNS for p in [*GENERATED.glob(pat), *fresh.glob(pat)]})


def stale(fresh: Path) -> list[str]:
    """Files whose schema-bearing text differs (or that exist on one side only)."""
    return [
        n
        for n in _names(fresh)
        if not (GENERATED / n).is_file()
        or not (fresh / n).is_file()
        or without_stamps((GENERATED / n).read_text()) != without_stamps((fresh / n).read_text())
    ]


def drift(fresh: Path) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    """Files whose generator stamps differ: name -> (checked in, made now)."""
    out = {}
    for n in _names(fresh):
        if (GENERATED / n).is_file() and (fresh / n).is_file():
            old, new = stamps((GENERATED / n).read_text()), stamps((fresh / n).read_text())
            if old != new:
                out[n] = (old, new)
    return out


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = _regenerate(ROOT, tmp_path_factory.mktemp("gen") / "out")
    assert len(list(made.glob("*_pb2.py"))) == 3
    return made


def test_generated_code_is_fresh(fresh: Path) -> None:
    """Regenerating from proto/ gives the same schema and service code; run gen_proto.sh if not."""
    assert stale(fresh) == [], (
        "stale generated code (the schema or the code serving it changed): run scripts/gen_proto.sh"
    )


def test_the_generator_is_the_locked_one(fresh: Path) -> None:
    """The installed grpcio-tools stamps what the checked-in code says (generator drift)."""
    found = drift(fresh)
    tools = metadata.version("grpcio-tools")
    assert found == {}, (
        f"generator drift, not a schema change: grpcio-tools {tools} stamps other versions than "
        f"the checked-in code ({found}). Install the lock (scripts/setup.sh); to move the "
        "generator: scripts/lock.sh --upgrade-package grpcio-tools, scripts/gen_proto.sh, and "
        "raise grpcio/protobuf's lower bounds in pyproject.toml to the new stamps"
    )


def test_stale_code_is_detected(tmp_path: Path) -> None:
    """A schema edit in a temporary copy of proto/ makes the comparison report the file."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "proto", copy / "proto")
    shutil.copytree(ROOT / "scripts", copy / "scripts")
    common = copy / "proto" / "patchgate" / "v1" / "common.proto"
    text = common.read_text()
    edited, n = re.subn(r"(message FixtureEntry \{)", r"\1\n  string stale_marker = 999;", text)
    assert n == 1
    common.write_text(edited)
    fresh = _regenerate(copy, tmp_path / "out")
    assert "common_pb2.py" in stale(fresh)
    assert "common_pb2.py" not in drift(fresh)


def test_a_stamp_alone_is_drift_not_staleness() -> None:
    """Another generator's stamps leave the schema text equal and show up as drift."""
    for name in ("common_pb2.py", "signer_pb2_grpc.py"):
        text = (GENERATED / name).read_text()
        moved = text.replace("1.85.1", "9.99.9").replace(
            "7,\n    35,\n    1,", "7,\n    99,\n    0,"
        )
        assert moved != text
        assert without_stamps(moved) == without_stamps(text)
        assert stamps(moved) != stamps(text)


def _lower_bound(requirement: str) -> Version:
    floors = [Version(s.version) for s in Requirement(requirement).specifier if s.operator == ">="]
    assert floors, f"{requirement}: no lower bound declared"
    return max(floors)


def test_declared_lower_bounds_are_what_the_stubs_need() -> None:
    """pyproject's grpcio and protobuf floors are at least what the checked-in stubs demand."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    by_name = {Requirement(d).name: d for d in deps}
    needs: dict[str, Version] = {}
    for path in GENERATED.glob("*_pb2*.py"):
        for key, version in stamps(path.read_text()).items():
            needs[key] = max(needs.get(key, Version(version)), Version(version))
    assert set(needs) == {"grpc", "protobuf"}
    assert _lower_bound(by_name["grpcio"]) >= needs["grpc"]
    assert _lower_bound(by_name["protobuf"]) >= needs["protobuf"]
