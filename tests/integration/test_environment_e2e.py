"""A third-party-shaped library under patchgate, end to end, in its own signed environment.

``unitsy``: a ``src/`` layout (no ``pythonpath`` setting: the source roots come from the gate),
a test dependency ``tinydep`` that patchgate's own venv does not have (a wheel made here,
installed with ``--no-index``), a data directory of fixtures. Put under patchgate with the commands
a user runs (``init``, ``env build``, ``pin properties --from-pytest``, ``pin check``) and checked
with real daemons: an honest patch is admitted, a regression rejected, a fixture edit refused, an
edit of the lock file is a pin mutation, and an environment tree that is not the signed one is
refused by the executor (a lying client, with the client's own check switched off).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from patchgate import executor_client
from patchgate.envelope import Envelope
from patchgate.errors import RefusedError
from patchgate.executor_client import ExecutorClient
from patchgate.pins import PropertyPin
from patchgate.request import ExecuteRequest
from tests.integration.fixtures_gate import BillingRepo, Gate
from tests.unit._pinning_helpers import git, write
from tests.wheelhouse import PYTEST_STACK, lock_line, make_wheel, repack

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PATCHGATE = str(Path(sys.executable).parent / "patchgate")
CONVERT = """\
FACTORS = {"km": 1000, "m": 1, "cm": 0.01}


def to_metres(value, unit):
    return value * FACTORS[unit]
"""
TESTS = """\
import json
import pathlib

import pytest
from tinydep import close

from unitsy import to_metres

CASES = json.loads(pathlib.Path("fixtures/cases.json").read_text())


@pytest.mark.patchgate(claim="to_metres keeps sign and scale", kind="pure_fn",
                       covers=["unitsy.convert.to_metres"], id="unitsy.to_metres.exact")
def test_to_metres_exact():
    for value, unit, metres in CASES["cases"]:
        assert close(to_metres(value, unit), metres)
"""
TINYDEP = "def close(a, b):\n    return abs(a - b) < 1e-9\n"
CASES = {"cases": [[-2, "km", -2000], [3, "cm", 0.03], [-0.5, "m", -0.5]]}


def _pg(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PATCHGATE, *argv], capture_output=True, text=True, check=False, timeout=600
    )


def _patch(tmp: Path, name: str, path: str, lines: list[str], new: str) -> Path:
    """A patch replacing the first of ``lines`` (the file's whole text) by ``new``."""
    out = tmp / f"{name}.patch"
    n = len(lines)
    rest = "".join(f" {line}\n" for line in lines[1:])
    out.write_text(
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,{n} +1,{n} @@\n"
        f"-{lines[0]}\n+{new}\n{rest}"
    )
    return out


def _body_patch(tmp: Path, name: str, new: str) -> Path:
    out = tmp / f"{name}.patch"
    p = "src/unitsy/convert.py"
    out.write_text(
        f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -4,2 +4,2 @@\n"
        f" def to_metres(value, unit):\n-    return value * FACTORS[unit]\n+    {new}\n"
    )
    return out


def test_a_library_with_a_test_dependency_runs_in_its_signed_environment(
    gate: Gate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHGATE_CACHE_DIR", str(tmp_path / "cache"))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    built = [repack(n, wheels) for n in PYTEST_STACK]
    built.append(make_wheel(wheels, "tinydep", "1.0", {"tinydep/__init__.py": TINYDEP}))
    lib = tmp_path / "unitsy"
    write(lib, {
        "pyproject.toml": '[project]\nname = "unitsy"\nversion = "1.0"\n',
        "src/unitsy/__init__.py": "from unitsy.convert import to_metres\n",
        "src/unitsy/convert.py": CONVERT,
        "tests/test_convert.py": TESTS,
        "fixtures/cases.json": json.dumps(CASES) + "\n",
        "requirements-test.txt": "\n".join(lock_line(w) for w in built) + "\n",
    })  # fmt: skip
    done = _pg("init", "--repo", str(lib), "--requirements", "requirements-test.txt")
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'requirements = "requirements-test.txt"' in (lib / "pyproject.toml").read_text()
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "init")
    env = _pg("env", "build", "--repo", str(lib), "--rev", "HEAD", "--no-index",
              "--find-links", str(wheels), "--json")  # fmt: skip
    assert env.returncode == 0, env.stdout + env.stderr
    digest = json.loads(env.stdout)["digest"]
    # collection in the environment (tinydep is not in patchgate's venv), from the cache
    for argv in (["pin", "properties", "--from-pytest"], ["pin", "check"]):
        done = _pg(*argv, "--repo", str(lib))
        assert done.returncode == 0, done.stdout + done.stderr
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "base: pins")
    assert _pg("pin", "check", "--repo", str(lib), "--rev", "HEAD").returncode == 0
    repo = BillingRepo(lib)

    honest = gate.check(repo, _body_patch(tmp_path, "honest", "return FACTORS[unit] * value"))
    assert honest.code == 0, honest.stdout + honest.stderr
    receipt = honest.receipt
    assert (receipt["admit"], receipt["environment"]) == (True, digest)
    statement = json.loads(Envelope.from_json(honest.file("fixture_envelope.json")).payload)
    assert statement["predicate"]["environment_digest"] == digest

    regression = gate.check(repo, _body_patch(tmp_path, "abs", "return abs(value) * FACTORS[unit]"))
    assert regression.code == 1, regression.stdout + regression.stderr
    assert regression.receipt["admit"] is False

    old = json.dumps(CASES)
    new = old.replace("-2000", "2000").replace("-2,", "2,")
    fixture = gate.check(repo, _patch(tmp_path, "fixture", "fixtures/cases.json", [old], new))
    assert fixture.code == 2, fixture.stdout + fixture.stderr
    assert "R2" in fixture.receipt["rejection_codes"]

    lock_text = (lib / "requirements-test.txt").read_text().splitlines()
    lock = gate.check(
        repo, _patch(tmp_path, "lock", "requirements-test.txt", lock_text, "pytest==1")
    )
    assert lock.code == 1, lock.stdout + lock.stderr
    assert "R8" in lock.receipt["rejection_codes"], lock.stdout

    # The executor recomputes the digest from the bytes it mounts: a client that sends another
    # tree under the signed digest (its own check switched off) is refused before any run.
    cached = tmp_path / "cache" / "env" / digest / "tinydep" / "__init__.py"
    cached.chmod(0o644)
    cached.write_text("def close(a, b):\n    return True\n")
    monkeypatch.setattr(executor_client, "environment_digest", lambda _entries: digest)
    envelope = Envelope.from_json(honest.file("fixture_envelope.json"))
    props = json.loads((lib / "pins" / "properties.json").read_text())["properties"]
    pin = PropertyPin(
        id=props[0]["id"],
        claim="",
        property_class="pure_fn",
        covers=tuple(props[0]["covers"]),
        command=tuple(props[0]["command"]),
    )
    with ExecutorClient(gate.executor) as client, pytest.raises(RefusedError) as refused:
        client.execute(
            ExecuteRequest(
                envelope=envelope, workspace=lib, fixture_root="fixtures", properties=[pin], runs=1
            )
        )
    assert refused.value.code == "FAILED_PRECONDITION"
    assert "environment digest of the mounted bytes" in refused.value.reason
