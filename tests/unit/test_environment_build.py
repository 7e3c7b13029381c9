"""The environment's build step (``[tool.patchgate.environment.build]``, issue 24 item 1).

The step runs on an executor in a sandbox with no network (the integration test
``test_environment_build_e2e`` runs it there for real); here: its configuration, its patterns, the
client's checks of what comes back, the cache key, the overlay the executor lays onto the
workspace, and the R7 of a patch that edits what the build reads or makes. The builder is a fake
that answers as ``ExecutorClient.build`` does; pip runs from local wheels. No Docker.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from client.gate import steps
from client.gate.environment import build_for, build_inputs, overlay_problems
from client.gate.workspace import materialize
from executord.errors import FailedPrecondition, InvalidArgument, SandboxError
from executord.runs import build as build_module
from executord.runs.build import BuildInput, check_build
from executord.runs.environment import apply_overlay
from executord.runs.request import TreeItem
from executord.sandbox.container import ContainerExit
from patchgate.environment import OVERLAY, matches, overlay_files, parse_environment, tree_files
from patchgate.errors import EnvironmentBuildError, PinError, TransportError
from patchgate.executor_client import BuildReply, _build_chunk
from patchgate.pins import DirSource, GitSource, ProjectConfig, load_config, load_pins
from patchgate.v1 import executor_pb2
from tests.unit._pinning_helpers import git, make_library, prop, write, write_pins
from tests.wheelhouse import PYTEST_STACK, lock_line, repack

CLOCK = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
STEP = {
    "command": ["python", "tools/gen.py"],
    "inputs": ["tools/gen.py", "data/*.txt", "src/textkit/words.py"],
    "outputs": ["src/textkit/_table.json", "src/textkit/gen/**/*.py"],
}


def _config(**build: Any) -> ProjectConfig:
    table = {"requirements": "requirements-test.txt", "build": {**STEP, **build}}
    env = parse_environment(table, "pyproject.toml")
    return ProjectConfig(source_roots=("src",), environment=env)


# -- configuration -------------------------------------------------------------------------------


def test_a_build_step_parses_with_its_default_timeout() -> None:
    step = _config().environment.build  # type: ignore[union-attr]
    assert step is not None
    assert step.command == ("python", "tools/gen.py")
    assert step.timeout_s == 600
    assert step.reads("data/words.txt")
    assert not step.reads("data/sub/words.txt")
    assert step.makes("src/textkit/gen/a/b.py")
    assert step.makes("src/textkit/gen/c.py")
    assert not step.makes("src/textkit/core.py")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"command": []}, "list of arguments"),
        ({"command": "python tools/gen.py"}, "list of arguments"),
        ({"command": ["python", ""]}, "list of arguments"),
        ({"inputs": []}, "non-empty list"),
        ({"outputs": "src/x.json"}, "non-empty list"),
        ({"outputs": ["../x.json"]}, "'../x.json'"),
        ({"outputs": ["/abs/x.json"]}, "'/abs/x.json'"),
        ({"outputs": ["**"]}, "whole tree"),
        ({"outputs": [f"{OVERLAY}/x"]}, "overlay"),
        ({"timeout": 0}, "seconds"),
        ({"timeout": 99999}, "seconds"),
        ({"timeout": True}, "seconds"),
        ({"shell": True}, "unknown setting"),
    ],
)
def test_a_malformed_build_step_is_a_pin_error(change: dict[str, Any], why: str) -> None:
    with pytest.raises(PinError, match=why):
        _config(**change)


def test_a_build_step_in_pyproject_is_read_as_a_pin(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": (
        '[tool.patchgate.environment]\nrequirements = "r.txt"\n'
        '[tool.patchgate.environment.build]\ncommand = ["python", "gen.py"]\n'
        'inputs = ["gen.py"]\noutputs = ["src/p/_t.json"]\ntimeout = 30\n'
    )})  # fmt: skip
    env = load_config(DirSource(tmp_path)).environment
    assert env is not None
    assert env.build is not None
    assert (env.build.outputs, env.build.timeout_s) == (("src/p/_t.json",), 30)


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("a/*.mo", "a/x.mo", True),
        ("a/*.mo", "a/b/x.mo", False),
        ("a/**/*.mo", "a/x.mo", True),
        ("a/**/*.mo", "a/b/c/x.mo", True),
        ("a/**", "a/b/c", True),
        ("a/**", "b/a/c", False),
        ("*.txt", "x.txt", True),
        ("*.txt", "d/x.txt", False),
        ("a/?.py", "a/b.py", True),
        ("a/?.py", "a/bc.py", False),
    ],
)
def test_patterns_match_by_segment(pattern: str, path: str, hit: bool) -> None:
    assert matches(pattern, path) is hit


# -- what comes back -----------------------------------------------------------------------------


def _outputs(tmp_path: Path, *paths: str) -> dict[str, Path]:
    out = {}
    for p in paths:
        full = tmp_path / "o" / p
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text("{}\n")
        out[p] = full
    return out


def test_outputs_that_are_data_or_production_source_are_accepted(tmp_path: Path) -> None:
    """A compiled catalog beside its pinned source under the fixture root included."""
    config = _config(outputs=["src/textkit/*.json", "src/textkit/gen/*.py", "fixtures/**/*.mo"])
    files = _outputs(tmp_path, "src/textkit/_table.json", "src/textkit/gen/a.py",
                     "fixtures/fr/LC_MESSAGES/t.mo")  # fmt: skip
    base = frozenset({"src/textkit/core.py", "fixtures/fr/LC_MESSAGES/t.po"})
    assert overlay_problems(files, base, config, ("src",)) == []


@pytest.mark.parametrize(
    ("output", "outputs", "why"),
    [
        ("src/textkit/core.py", ["src/textkit/*.py"], "a file of the base tree"),
        ("src/textkit/other.json", None, "matches no output pattern"),
        ("fixtures/words.json", ["fixtures/*.json"], "a file of the base tree"),
        (f"{OVERLAY}/x.json", [f"{OVERLAY}x/*.json", "*/x.json"], "environment's own"),
        ("tests/test_gen.py", ["tests/*.py"], "oracle"),
        ("pins/fixtures.json", ["pins/*.json"], "pin"),
        ("src/textkit/conftest.py", ["src/textkit/*.py"], "harness"),
        ("src/evil.pth", ["src/*.pth"], "harness"),
        ("src/textkit/_speed.so", ["src/textkit/*.so"], "compiled"),
        ("src/textkit/__pycache__/x.pyc", ["src/textkit/**"], "compiled"),
        ("requirements-test.txt", ["*.txt"], "pin"),
    ],
)
def test_outputs_that_would_move_the_oracle_or_a_pin_are_refused(
    tmp_path: Path, output: str, outputs: list[str] | None, why: str
) -> None:
    config = _config(outputs=outputs) if outputs else _config()
    files = _outputs(tmp_path, output)
    base = frozenset({"src/textkit/core.py", "fixtures/words.json"})
    problems = overlay_problems(files, base, config, ("src",))
    assert len(problems) == 1, problems
    assert why in problems[0], problems


# -- build_for: the tree, the cache, the refusals ------------------------------------------------


@pytest.fixture(scope="module")
def lock(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("wheels")
    built = [repack(n, out) for n in PYTEST_STACK]
    return out, "\n".join(lock_line(w) for w in built) + "\n"


GEN = """\
import json, pathlib
words = pathlib.Path("data/words.txt").read_text().split()
pathlib.Path("src/textkit/_table.json").write_text(json.dumps(sorted(words)))
"""


def _repo(tmp_path: Path, lock: str, more_inputs: tuple[str, ...] = ()) -> Path:
    repo = make_library(tmp_path / "lib")
    inputs = [*STEP["inputs"], *more_inputs]
    table = (
        '\n[tool.patchgate.environment]\nrequirements = "requirements-test.txt"\n'
        "[tool.patchgate.environment.build]\n"
        f"command = {json.dumps(STEP['command'])}\ninputs = {json.dumps(inputs)}\n"
        f"outputs = {json.dumps(STEP['outputs'])}\n"
    )
    pyproject = (repo / "pyproject.toml").read_text()
    write(repo, {
        "pyproject.toml": pyproject.replace("[tool.pytest.ini_options]", table.lstrip() +
                                            "\n[tool.pytest.ini_options]"),
        "requirements-test.txt": lock,
        "tools/gen.py": GEN,
        "data/words.txt": "b a c\n",
        "src/textkit/words.py": "SEP = ' '\n",
        "src/textkit/gen/__init__.py": "",
    })  # fmt: skip
    write_pins(repo, [prop("p.slug", ["textkit.core.slugify"], "tests/test_core.py::test_count")])
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


class FakeBuilder:
    """Answers as ``ExecutorClient.build`` does: runs nothing, writes the scripted outputs."""

    def __init__(self, outputs: dict[str, bytes], exit_code: int = 0, stderr: str = "") -> None:
        self.outputs, self.exit_code, self.stderr = outputs, exit_code, stderr
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **request: Any) -> BuildReply:
        self.calls.append(request)
        dest: Path = request["dest"]
        dest.mkdir()
        files = {}
        for path, data in self.outputs.items():
            (dest / path).parent.mkdir(parents=True, exist_ok=True)
            (dest / path).write_bytes(data)
            files[path] = dest / path
        return BuildReply(exit_code=self.exit_code, timed_out=False, oom_killed=False,
                          files=files, ignored=0, stdout_tail="", stderr_tail=self.stderr,
                          run_ms=1)  # fmt: skip


def _build(repo: Path, wheels: Path, cache: Path, builder: Any, **kw: Any) -> Any:
    config = load_pins(GitSource(repo, "HEAD")).config
    return build_for(repo, "HEAD", config, has_src=True, cache=cache, find_links=[wheels],
                     no_index=True, builder=builder, **kw)  # fmt: skip


def test_the_build_outputs_go_into_the_digested_tree_and_the_cache_keys_on_the_inputs(
    tmp_path: Path, lock: tuple[Path, str]
) -> None:
    wheels, text = lock
    repo = _repo(tmp_path, text)
    builder = FakeBuilder({"src/textkit/_table.json": b'["a", "b", "c"]'})
    built = _build(repo, wheels, tmp_path / "c", builder)
    (call,) = builder.calls
    assert sorted(call["inputs"]) == ["data/words.txt", "src/textkit/words.py", "tools/gen.py"]
    assert call["argv"] == ("python", "tools/gen.py")
    assert call["source_roots"] == ("src",)
    assert f"{OVERLAY}/src/textkit/_table.json" not in call["environment"]  # the tree before
    assert overlay_files(built.tree) == {
        "src/textkit/_table.json": built.tree / OVERLAY / "src/textkit/_table.json"
    }
    assert f"{OVERLAY}/src/textkit/_table.json" in tree_files(built.tree)
    again = _build(repo, wheels, tmp_path / "c", builder)
    assert (again.digest, again.cached, len(builder.calls)) == (built.digest, True, 1)
    other = FakeBuilder({"src/textkit/_table.json": b'["a"]'})
    write(repo, {"data/words.txt": "a\n"})
    git(repo, "commit", "-qam", "fewer words")
    changed = _build(repo, wheels, tmp_path / "c", other)
    assert len(other.calls) == 1
    assert changed.digest != built.digest


@pytest.mark.parametrize(
    ("builder", "why"),
    [
        (None, "patchgate up"),
        (FakeBuilder({}, exit_code=3, stderr="Traceback\nKeyError: 'x'\n"), "exited 3.*KeyError"),
        (FakeBuilder({}), "made no file matching its outputs"),
        (FakeBuilder({"src/textkit/gen/__init__.py": b"x = 1\n"}), "a file of the base tree"),
        (FakeBuilder({"tests/test_x.py": b""}), "matches no output pattern"),
    ],
)
def test_a_build_that_failed_or_made_refused_outputs_caches_no_tree_with_outputs(
    tmp_path: Path, lock: tuple[Path, str], builder: Any, why: str
) -> None:
    wheels, text = lock
    repo = _repo(tmp_path, text)
    with pytest.raises(EnvironmentBuildError, match=why):
        _build(repo, wheels, tmp_path / "c", builder)
    env = tmp_path / "c" / "env"
    assert not list(env.glob("build-*"))  # no debris
    # at most the locked packages' own tree (collection's): nothing with build outputs
    trees = [p for p in env.iterdir() if p.name != "index"]
    assert len(trees) <= 1
    assert not [t for t in trees if (t / OVERLAY).exists()]


def test_an_unreachable_executor_is_transport_not_configuration(
    tmp_path: Path, lock: tuple[Path, str]
) -> None:
    wheels, text = lock
    repo = _repo(tmp_path, text)

    def down(**_: Any) -> BuildReply:
        raise TransportError("unavailable", "UNAVAILABLE: connect failed")

    with pytest.raises(TransportError, match="the build step could not run"):
        _build(repo, wheels, tmp_path / "c", down)


def test_inputs_are_the_revisions_files_and_none_is_an_error(
    tmp_path: Path, lock: tuple[Path, str]
) -> None:
    repo = _repo(tmp_path, lock[1])
    step = _config().environment.build  # type: ignore[union-attr]
    assert step is not None
    got = build_inputs(repo, "HEAD", step)
    assert got["data/words.txt"] == b"b a c\n"
    write(repo, {"data/extra.txt": "not committed\n"})
    assert "data/extra.txt" not in build_inputs(repo, "HEAD", step)
    none = _config(inputs=["nothing/*.txt"]).environment.build  # type: ignore[union-attr]
    assert none is not None
    with pytest.raises(EnvironmentBuildError, match="no file matches the build's inputs"):
        build_inputs(repo, "HEAD", none)


# -- the patch: what the build reads or makes is the environment (R7) ----------------------------


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        ("src/textkit/words.py", "SEP = ' '", "SEP = ','"),  # production source, but an input
        ("tools/gen.py", "import json, pathlib", "import json, pathlib, os"),
    ],
)
def test_a_patch_that_edits_a_build_input_moves_the_environment(
    tmp_path: Path, lock: tuple[Path, str], path: str, old: str, new: str
) -> None:
    repo = _repo(tmp_path, lock[1])
    text = (repo / path).read_text()
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line == old)
    body = "".join(
        (f"-{line}\n+{new}\n" if n == i else f" {line}\n") for n, line in enumerate(lines)
    )
    patch = (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
             f"@@ -1,{len(lines)} +1,{len(lines)} @@\n{body}").encode()  # fmt: skip
    found = _oracle(repo, patch)
    assert found.oracle_moved
    assert any("environment moved" in r and path in r for r in found.reasons), found.reasons


def test_a_patch_that_adds_a_build_output_moves_the_environment(
    tmp_path: Path, lock: tuple[Path, str]
) -> None:
    """A generated module the patch writes itself (production source by its place): the
    executor would refuse to lay the build's over it; the client says R7 first."""
    repo = _repo(tmp_path, lock[1])
    path = "src/textkit/gen/forged.py"
    patch = (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
             f"+++ b/{path}\n@@ -0,0 +1 @@\n+TABLE = ['a']\n").encode()  # fmt: skip
    found = _oracle(repo, patch)
    assert found.oracle_moved
    assert any("environment moved" in r and path in r for r in found.reasons), found.reasons


def test_a_pinned_fixture_that_is_a_build_input_stays_a_fixture_edit(
    tmp_path: Path, lock: tuple[Path, str]
) -> None:
    """A catalog both pinned and compiled by the build: the fixture digest judges it (R2, exit
    2), the environment rule does not pre-empt that with an R7 (exit 1)."""
    repo = _repo(tmp_path, lock[1], ("fixtures/*.json",))
    path = "fixtures/words.json"
    old = (repo / path).read_text().rstrip("\n")
    patch = (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n"
             f"-{old}\n+{old.replace('a', 'z')}\n").encode()  # fmt: skip
    found = _oracle(repo, patch)
    assert not any("environment moved" in r for r in found.reasons), found.reasons


def test_a_patch_elsewhere_is_not_an_environment_move(
    tmp_path: Path, lock: tuple[Path, str]
) -> None:
    repo = _repo(tmp_path, lock[1])
    path = "src/textkit/core.py"
    lines = (repo / path).read_text().splitlines()
    patch = (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
             f"@@ -1,{len(lines)} +1,{len(lines) + 1} @@\n+# a comment\n"
             + "".join(f" {line}\n" for line in lines)).encode()  # fmt: skip
    found = _oracle(repo, patch)
    assert not any("environment moved" in r for r in found.reasons), found.reasons


def _oracle(repo: Path, patch: bytes) -> steps.OracleResult:
    with materialize(repo, "HEAD", patch) as ws:
        pins = steps.resolve_pins(ws, load_pins(DirSource(ws.base_dir)))
        touched = steps.changed(ws, pins)
        reports = steps.classify(ws.patched_dir, pins.properties)
        base = steps.classify(ws.base_dir, pins.properties)
        return steps.oracle_and_pins(touched, pins, reports, base, CLOCK)


# -- the executor: the request's shape, the overlay ----------------------------------------------


def _item(path: str) -> TreeItem:
    return TreeItem(path=path, digest="a" * 64, size=1)


def _inp(**kw: Any) -> BuildInput:
    base: dict[str, Any] = {
        "request_id": "r",
        "environment": (_item("pytest/__init__.py"),),
        "inputs": (_item("tools/gen.py"),),
        "argv": ("python", "tools/gen.py"),
        "outputs": ("src/p/*.json",),
        "timeout_s": 60,
    }
    return BuildInput(**{**base, **kw})


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"environment": ()}, "needs the environment tree"),
        ({"environment": (_item(f"{OVERLAY}/x"),)}, "already holds"),
        ({"inputs": (_item("../x"),)}, "inputs"),
        ({"inputs": (_item("a"), _item("a"))}, "repeated path"),
        ({"argv": ()}, "argv"),
        ({"argv": ("python", "")}, "argv"),
        ({"outputs": ()}, "outputs"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"source_roots": ("../up",)}, "source root"),
    ],
)
def test_the_executor_refuses_a_malformed_build_request(change: dict[str, Any], why: str) -> None:
    check_build(_inp())
    with pytest.raises(InvalidArgument, match=why):
        check_build(_inp(**change))


def _tree_with_overlay(tmp_path: Path, *paths: str) -> Path:
    tree = tmp_path / "tree"
    for p in paths:
        (tree / OVERLAY / p).parent.mkdir(parents=True, exist_ok=True)
        (tree / OVERLAY / p).write_text("made\n")
    (tree / "x.py").parent.mkdir(parents=True, exist_ok=True)
    (tree / "x.py").write_text("")
    return tree


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(src.read_bytes())


def test_the_executor_lays_the_overlay_onto_the_workspace(tmp_path: Path) -> None:
    tree = _tree_with_overlay(tmp_path, "src/p/_t.json", "src/p/gen/a.py", "fixtures/fr/t.mo")
    ws, fx = tmp_path / "ws", tmp_path / "fx"
    ws.mkdir()
    write(fx, {"fr/t.po": "pinned\n"})
    assert apply_overlay(tree, ws, ("fixtures", fx), _copy) == 3
    assert (ws / "src/p/_t.json").read_text() == "made\n"
    assert (ws / "src/p/gen/a.py").is_file()
    assert (fx / "fr/t.mo").read_text() == "made\n"  # beside the pinned catalog
    assert not (ws / "fixtures").exists()
    bare = tmp_path / "bare"
    (bare / "t").mkdir(parents=True)
    assert apply_overlay(bare / "t", ws, ("fixtures", fx), _copy) == 0  # no build: none laid


@pytest.mark.parametrize(
    ("existing", "output", "why"),
    [
        ("ws/src/p/_t.json", "src/p/_t.json", "the patched workspace has"),
        ("fx/a.json", "fixtures/a.json", "the patched workspace has"),
    ],
)
def test_the_executor_refuses_an_overlay_that_would_replace_a_file(
    tmp_path: Path, existing: str, output: str, why: str
) -> None:
    tree = _tree_with_overlay(tmp_path, output)
    (tmp_path / "ws").mkdir()
    (tmp_path / "fx").mkdir()
    write(tmp_path, {existing: "the patch's own\n"})
    with pytest.raises(FailedPrecondition, match=why):
        apply_overlay(tree, tmp_path / "ws", ("fixtures", tmp_path / "fx"), _copy)
    assert (tmp_path / existing).read_text() == "the patch's own\n"


def _exit(code: int | None = 0, *, timed_out: bool = False) -> ContainerExit:
    return ContainerExit(exit_code=code, oom_killed=False, timed_out=timed_out, start_ms=0,
                         run_ms=0)  # fmt: skip


def test_the_executor_keeps_only_regular_files_matching_an_output_pattern(tmp_path: Path) -> None:
    work = tmp_path / "work"
    write(work, {"tools/gen.py": "x", "src/p/a.json": "{}", "src/p/b.txt": "scratch"})
    kept, ignored = build_module._collect(work, _inp(), _exit())
    assert [p for p, _ in kept] == ["src/p/a.json"]
    assert ignored == 1
    assert build_module._collect(work, _inp(), _exit(2)) == ((), 0)  # a failed build: nothing
    assert build_module._collect(work, _inp(), _exit(None, timed_out=True)) == ((), 0)
    (work / "src/p/link.json").symlink_to("/etc/passwd")
    with pytest.raises(SandboxError, match="not a regular file"):
        build_module._collect(work, _inp(), _exit())


def test_the_executor_caps_the_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "work", {"src/p/a.json": "{}", "src/p/b.json": "{}"})
    monkeypatch.setattr(build_module, "MAX_OUTPUT_FILES", 1)
    with pytest.raises(SandboxError, match="over the cap"):
        build_module._collect(tmp_path / "work", _inp(), _exit())


def test_output_directories_are_made_up_to_the_first_wildcard() -> None:
    dirs = build_module._output_dirs(("src/p/*.json", "a/**/x.mo", "*.txt", "b/c/d.py"))
    assert dirs == {"src/p", "a", "b/c"}


def _chunk(path: str, size: int, offset: int, data: bytes) -> executor_pb2.BuildFile:
    return executor_pb2.BuildFile(path=path, size=size, offset=offset, data=data)


def test_the_client_writes_only_well_formed_output_chunks_under_its_directory(
    tmp_path: Path,
) -> None:
    """What an executor sends back is checked like any reply: a path that leaves the directory,
    chunks out of order or more bytes than announced are transport failures, never files."""
    files: dict[str, Path] = {}
    cur = _build_chunk(_chunk("src/a.json", 4, 0, b"ab"), None, files, tmp_path)
    assert _build_chunk(_chunk("src/a.json", 4, 2, b"cd"), cur, files, tmp_path) is None
    assert files["src/a.json"].read_bytes() == b"abcd"
    assert _build_chunk(_chunk("e.txt", 0, 0, b""), None, files, tmp_path) is None
    for bad, why in [
        (_chunk("../escape", 1, 0, b"x"), "build output"),
        (_chunk("/etc/x", 1, 0, b"x"), "build output"),
        (_chunk("src/b.json", 2, 1, b"x"), "out of order"),
        (_chunk("src/a.json", 1, 0, b"x"), "out of order"),  # the same path twice
        (_chunk("src/c.json", 1, 0, b"xy"), "more bytes"),
    ]:
        with pytest.raises(TransportError, match=why):
            _build_chunk(bad, None, files, tmp_path)
    assert not (tmp_path.parent / "escape").exists()
