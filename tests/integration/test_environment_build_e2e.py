"""A library whose suite needs a generated file: the build step runs in a sandbox, never here.

``wordsy`` ranks words by a table (``src/wordsy/_table.json``) that its repository does not commit:
``tools/gen_table.py`` makes it from ``data/words.txt``. Its ``[tool.patchgate.environment.build]``
names that command, its inputs and its output. Put under patchgate with the commands a user runs,
with the real executor and signer daemons and real containers: ``env build`` runs the generator
on the executor (the table records that it ran as a non-root user, with no network and without
patchgate's own packages), the table is digested into the signed environment, and every run's
workspace has it (the honest patch passes only because the executor laid it there). A regression
is rejected; a patch that edits the generator's input, or that writes the table itself, moves the
suite's environment (R7); an executor that cannot be reached is exit 4, not a build failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from patchgate.environment import OVERLAY
from tests.integration.fixtures_gate import BillingRepo, Gate
from tests.unit._pinning_helpers import git, write
from tests.wheelhouse import PYTEST_STACK, lock_line, repack

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PATCHGATE = str(Path(sys.executable).parent / "patchgate")
RANK = """\
import json
import pathlib


def rank(word):
    table = json.loads((pathlib.Path(__file__).parent / "_table.json").read_text())
    return table["words"].index(word)
"""
GEN = """\
import importlib.util
import json
import os
import pathlib
import socket

words = sorted(pathlib.Path("data/words.txt").read_text().split())
try:
    socket.create_connection(("192.0.2.1", 9), timeout=2).close()
    net = True
except OSError:
    net = False
table = {
    "words": words,
    "uid": os.getuid(),
    "net": net,
    "patchgate": importlib.util.find_spec("patchgate") is not None,
}
pathlib.Path("src/wordsy/_table.json").write_text(json.dumps(table))
pathlib.Path("scratch.log").write_text("not an output\\n")
"""
TESTS = """\
import json
import pathlib

import pytest

from wordsy import rank

WORDS = json.loads(pathlib.Path("fixtures/words.json").read_text())


@pytest.mark.patchgate(claim="rank is the sorted position", kind="pure_fn",
                       covers=["wordsy.rank"], id="wordsy.rank.sorted")
def test_rank_is_the_sorted_position():
    ranks = [rank(word) for word in sorted(WORDS)]
    assert ranks == list(range(len(WORDS)))
"""
BUILD = """
[tool.patchgate.environment.build]
command = ["python", "tools/gen_table.py"]
inputs = ["tools/gen_table.py", "data/*.txt"]
outputs = ["src/wordsy/_table.json"]
timeout = 120
"""


def _pg(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PATCHGATE, *argv], capture_output=True, text=True, check=False, timeout=600,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _replace(tmp: Path, name: str, path: str, text: str, old: str, new: str) -> Path:
    """A patch of ``path`` (whose whole text is ``text``) replacing line ``old`` by ``new``."""
    lines = text.splitlines()
    body = "".join(f"-{ln}\n+{new}\n" if ln == old else f" {ln}\n" for ln in lines)
    out = tmp / f"{name}.patch"
    out.write_text(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
                   f"@@ -1,{len(lines)} +1,{len(lines)} @@\n{body}")  # fmt: skip
    return out


def test_a_generated_table_is_built_in_a_sandbox_signed_and_laid_onto_every_run(
    gate: Gate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PATCHGATE_CACHE_DIR", str(cache))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    lock = "\n".join(lock_line(repack(n, wheels)) for n in PYTEST_STACK) + "\n"
    lib = tmp_path / "wordsy"
    write(lib, {
        "pyproject.toml": '[project]\nname = "wordsy"\nversion = "1.0"\n',
        ".gitignore": "src/wordsy/_table.json\nscratch.log\n",
        "src/wordsy/__init__.py": RANK,
        "tools/gen_table.py": GEN,
        "data/words.txt": "pear apple fig\n",
        "tests/test_rank.py": TESTS,
        "fixtures/words.json": json.dumps(["pear", "apple", "fig"]) + "\n",
        "requirements-test.txt": lock,
    })  # fmt: skip
    done = _pg("init", "--repo", str(lib), "--requirements", "requirements-test.txt")
    assert done.returncode == 0, done.stdout + done.stderr
    with (lib / "pyproject.toml").open("a") as fh:
        fh.write(BUILD)
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "init")
    offline = ["--no-index", "--find-links", str(wheels)]

    # no executor that answers: a transport failure (4), nothing cached
    down = _pg("env", "build", "--repo", str(lib), "--rev", "HEAD", *offline,
               "--executor", f"unix:{tmp_path}/nobody.sock")  # fmt: skip
    assert down.returncode == 4, down.stdout + down.stderr
    assert "the build step could not run" in down.stderr

    env = _pg("env", "build", "--repo", str(lib), "--rev", "HEAD", *offline,
              "--executor", gate.executor, "--json")  # fmt: skip
    assert env.returncode == 0, env.stdout + env.stderr
    built = json.loads(env.stdout)
    assert built["build_outputs"] == 1
    tree = Path(built["tree"])
    table = json.loads((tree / OVERLAY / "src/wordsy/_table.json").read_text())
    # made in the sandbox: not root, no network, none of patchgate's own packages
    assert table == {"words": ["apple", "fig", "pear"], "uid": table["uid"], "net": False,
                     "patchgate": False}  # fmt: skip
    assert table["uid"] != 0
    assert not (tree / OVERLAY / "scratch.log").exists()  # matches no output pattern
    assert not (lib / "src/wordsy/_table.json").exists()  # nothing written into the repository

    for argv in (["pin", "properties", "--from-pytest"], ["pin", "check"]):
        done = _pg(*argv, "--repo", str(lib))
        assert done.returncode == 0, done.stdout + done.stderr
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "base: pins")
    assert _pg("pin", "check", "--repo", str(lib), "--rev", "HEAD").returncode == 0
    repo = BillingRepo(lib)
    old = '    return table["words"].index(word)'

    honest = gate.check(repo, _replace(tmp_path, "honest", "src/wordsy/__init__.py", RANK, old,
                                       '    return list(table["words"]).index(word)'))  # fmt: skip
    assert honest.code == 0, honest.stdout + honest.stderr
    assert honest.receipt["environment"] != "executor"

    off = '    return table["words"].index(word) + 1'
    regression = gate.check(
        repo, _replace(tmp_path, "off", "src/wordsy/__init__.py", RANK, old, off)
    )
    assert regression.code == 1, regression.stdout + regression.stderr
    assert regression.receipt["admit"] is False

    words = gate.check(repo, _replace(tmp_path, "words", "data/words.txt", "pear apple fig\n",
                                      "pear apple fig", "pear apple fig kiwi"))  # fmt: skip
    assert words.code == 1, words.stdout + words.stderr
    assert "R7" in words.receipt["rejection_codes"]
    assert "environment moved" in words.stdout + words.stderr + json.dumps(words.receipt)

    forged = tmp_path / "forged.patch"
    forged.write_text(
        "diff --git a/src/wordsy/_table.json b/src/wordsy/_table.json\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/src/wordsy/_table.json\n@@ -0,0 +1 @@\n"
        '+{"words": ["apple", "fig", "pear"]}\n'
    )
    table_patch = gate.check(repo, forged)
    assert table_patch.code == 1, table_patch.stdout + table_patch.stderr
    assert "R7" in table_patch.receipt["rejection_codes"]
