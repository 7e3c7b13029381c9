"""``scripts/test.sh``: its one-line summary is the last line it prints (issue 24): the Docker
engine it started is stopped *before* the summary, not by the EXIT trap after it. Run on a copy of
the script beside stub tools (no engine, no real suite)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STUB = '#!/usr/bin/env bash\necho "$(basename "$0") $*" >&2\nexit {code}\n'
DOCKER = """#!/usr/bin/env bash
echo "docker.sh: $1 (stub)" >&2
state=$PATCHGATE_DOCKER_STATE
if [ "$1" = start ] && [ -z "${ANSWERS:-}" ]; then  # no engine answers: start one
  mkdir -p "$state"; echo 4242 > "$state/dockerd.pid"
fi
[ "$1" = stop ] && rm -f "$state/dockerd.pid" && echo "docker.sh: stopped dockerd 4242" >&2
exit 0
"""


def _tool(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run(tmp_path: Path, **env: str) -> list[str]:
    shutil.copy(ROOT / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    state = {"PATCHGATE_DOCKER_STATE": str(tmp_path / "docker-state")}
    proc = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "test.sh")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
        env={**os.environ, **state, **env}, timeout=60,
    )  # fmt: skip
    return proc.stdout.splitlines()


def test_the_summary_is_the_last_line_even_after_the_engine_is_stopped(tmp_path: Path) -> None:
    _tool(tmp_path / "scripts" / "setup.sh", STUB.format(code=0))
    _tool(tmp_path / "scripts" / "docker.sh", DOCKER)
    for name in ("ruff", "mypy"):
        _tool(tmp_path / ".venv" / "bin" / name, STUB.format(code=0))
    for code, verdict in ((0, "PASS"), (1, "FAIL")):
        _tool(tmp_path / ".venv" / "bin" / "pytest", STUB.format(code=code))
        lines = _run(tmp_path)
        assert lines[-1].startswith(f"test.sh: {verdict} - passed: "), lines
        assert "docker.sh: stopped dockerd 4242" in lines  # stopped, once, before the summary
        assert lines.count("docker.sh: stopped dockerd 4242") == 1


def _stubs(tmp_path: Path) -> None:
    _tool(tmp_path / "scripts" / "setup.sh", STUB.format(code=0))
    _tool(tmp_path / "scripts" / "docker.sh", DOCKER)
    for name in ("ruff", "mypy", "pytest"):
        _tool(tmp_path / ".venv" / "bin" / name, STUB.format(code=0))


def test_an_engine_that_already_answered_is_left_running(tmp_path: Path) -> None:
    """A second run on a shared engine does not stop it: neither one that answered on its own
    nor one an earlier docker.sh start left (its pid file still there)."""
    _stubs(tmp_path)
    lines = _run(tmp_path, ANSWERS="1")
    assert lines[-1].startswith("test.sh: PASS"), lines
    assert "docker.sh: stopped dockerd 4242" not in lines
    (tmp_path / "docker-state").mkdir()
    (tmp_path / "docker-state" / "dockerd.pid").write_text("4242\n")
    lines = _run(tmp_path, ANSWERS="1")
    assert "docker.sh: stopped dockerd 4242" not in lines
    assert (tmp_path / "docker-state" / "dockerd.pid").exists()


def test_a_stale_pid_file_does_not_make_the_run_s_own_engine_someone_else_s(
    tmp_path: Path,
) -> None:
    """An engine that died left its pid file; no engine answers, so this run starts one (a new
    pid in the file) and stops it before its summary."""
    _stubs(tmp_path)
    (tmp_path / "docker-state").mkdir()
    (tmp_path / "docker-state" / "dockerd.pid").write_text("1111\n")
    lines = _run(tmp_path)
    assert lines[-1].startswith("test.sh: PASS"), lines
    assert lines.count("docker.sh: stopped dockerd 4242") == 1
