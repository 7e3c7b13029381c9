"""The checked-in protobuf/gRPC code in patchgate/v1/ is what scripts/gen_proto.sh makes now.

Protobuf leaves comments out of generated code, so only a change that alters the schema (a field,
a message, an option) makes the checked-in files stale; ``test_stale_code_is_detected`` proves the
comparison notices one, on a temporary copy of the protos.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "patchgate" / "v1"
_PATTERNS = ("*_pb2.py", "*_pb2_grpc.py", "*_pb2.pyi")


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


def _differences(fresh: Path) -> list[str]:
    names = sorted({p.name for pat in _PATTERNS for p in [*GENERATED.glob(pat), *fresh.glob(pat)]})
    return [
        n
        for n in names
        if not (GENERATED / n).is_file()
        or not (fresh / n).is_file()
        or (GENERATED / n).read_bytes() != (fresh / n).read_bytes()
    ]


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    """Regenerating from proto/ gives byte-identical files; run scripts/gen_proto.sh if not."""
    fresh = _regenerate(ROOT, tmp_path / "out")
    assert len(list(fresh.glob("*_pb2.py"))) == 3
    assert _differences(fresh) == [], "stale generated code: run scripts/gen_proto.sh"


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
    assert "common_pb2.py" in _differences(fresh)
