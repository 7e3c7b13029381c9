"""The suite's environment: its digest (test vector), lock rules, configuration, the deterministic
build (offline wheels), the signed predicate field, the signer's form check, and the executor's
refusals and mounts (fake runtime)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from pathlib import Path

import pytest

from client.analysis.patch.roles import Layout
from executord.errors import FailedPrecondition
from executord.runs.environment import ENV, Bare
from executord.runs.executor import Executor
from executord.runs.fakeruntime import FakeRuntime
from executord.runs.request import ExecuteInput, PropertyRun, TreeItem
from executord.runs.sandboxspec import JudgeRun
from executord.sandbox.container import Mount, SandboxPolicy
from executord.store.blobstore import BlobStore, Chunk
from patchgate.digest import FileEntry, Manifest
from patchgate.envelope import fixture_statement, parse_fixture_statement, sign_envelope
from patchgate.environment import (
    ENVIRONMENT_INFO,
    build_environment,
    environment_digest,
    parse_environment,
    parse_lock,
    tree_files,
)
from patchgate.errors import EnvelopeError, EnvironmentBuildError, PinError
from patchgate.keys import Keyring, Signer
from patchgate.pins import DirSource, load_config, load_pins
from signerd.canonical import RawManifest, validate
from signerd.errors import InvalidArgument
from tests.unit._pinning_helpers import fixture_pin
from tests.wheelhouse import PYTEST_STACK, lock_line, make_wheel, repack

OPERATOR = Signer.generate("operator")
EXECUTOR_KEY = Signer.generate("executor")
CMD = ("python", "-m", "pytest", "-q")
VECTOR_FILES = {
    "pytest/__init__.py": b"version = 1\n",
    ENVIRONMENT_INFO: b'{"format":1,"python":"3.11","source_roots":["src"]}\n',
    "b/\u00e9.txt": b"",
}
VECTOR_DIGEST = "002696a6e0178849a14b1340646c88764f7b5c923f568faf94730a30e760c669"


def _entries(files: dict[str, bytes]) -> dict[str, FileEntry]:
    return {p: FileEntry(hashlib.sha256(d).hexdigest(), len(d)) for p, d in files.items()}


def test_environment_digest_test_vector_and_its_bytes() -> None:
    """docs/reference/digest.md's vector: the encoding written out by hand gives the same hex."""
    lines = [b"patchgate-environment-digest-v1\n"]
    for path in sorted(VECTOR_FILES, key=lambda p: p.encode()):
        data = VECTOR_FILES[path]
        sha = hashlib.sha256(data).hexdigest()
        lines.append(f"file {sha} {len(data)} {path}\n".encode())
    assert hashlib.sha256(b"".join(lines)).hexdigest() == VECTOR_DIGEST
    assert environment_digest(_entries(VECTOR_FILES)) == VECTOR_DIGEST
    moved = {**VECTOR_FILES, "pytest/__init__.py": b"version = 2\n"}
    assert environment_digest(_entries(moved)) != VECTOR_DIGEST


def _block(text: str, name: str) -> str:
    after = text.split(f"<!-- test: {name} -->\n```text\n", 1)[1]
    return after.split("```", 1)[0]


def test_the_documented_environment_test_vector_is_the_codes() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs/reference/digest.md").read_text("utf-8")
    lines, digest = _block(doc, "environment-bytes"), _block(doc, "environment-digest").strip()
    assert hashlib.sha256(lines.encode()).hexdigest() == digest
    files = {
        "pytest/__init__.py": b"version = 1\n",
        ENVIRONMENT_INFO: b'{"format":1,"python":"3.11","source_roots":["src"]}\n',
    }
    assert environment_digest(_entries(files)) == digest


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("pytest==8.0\n-e .\n", "options"),
        ("pytest==8.0\n--index-url http://example.invalid/simple\n", "options"),
        ("pytest==8.0\nlib @ file:///tmp/lib.whl\n", "options"),
        ("pytest>=8\n", "options"),
        ("pluggy==1.0\n", "pytest is not among"),
        ("pytest==8.0 --hash=sha256:" + "a" * 64 + "\npluggy==1.0\n", "all or none"),
        ("pytest==8.0\nPytest==8.1\n", "listed twice"),
    ],
)
def test_a_lock_that_is_not_exact_pins_is_refused(text: str, why: str) -> None:
    with pytest.raises(PinError, match=why):
        parse_lock(text, "lock.txt")


def test_a_lock_of_exact_pins_with_hashes_markers_and_comments_parses() -> None:
    text = (
        "# reviewed\npytest==8.0 \\\n    --hash=sha256:" + "a" * 64 + "\n"
        "colorama==0.4.6 ; sys_platform == 'win32' --hash=sha256:" + "b" * 64 + "  # win\n"
    )
    lock = parse_lock(text, "lock.txt")
    assert (lock.names, lock.hashed) == (("pytest", "colorama"), True)


def test_environment_configuration_refuses_a_malformed_build_step_and_unknown_keys() -> None:
    with pytest.raises(PinError, match="expected a table with 'command'"):
        parse_environment({"requirements": "r.txt", "build": [["make"]]}, "pyproject.toml")
    with pytest.raises(PinError, match="unknown setting"):
        parse_environment({"requirements": "r.txt", "index": "x"}, "pyproject.toml")
    with pytest.raises(PinError, match="requirements"):
        parse_environment({"requirements": "../r.txt"}, "pyproject.toml")


def test_pins_of_a_base_whose_lock_is_missing_or_invalid_are_refused(tmp_path: Path) -> None:
    """``pin check`` and ``check`` read the lock as a pin: missing or loose is a pin error (78)."""
    (tmp_path / "pins").mkdir()
    (tmp_path / "pins" / "fixtures.json").write_text(json.dumps(fixture_pin()))
    (tmp_path / "pins" / "properties.json").write_text('{"properties": []}')
    (tmp_path / "patchgate.toml").write_text('[environment]\nrequirements = "pins/env.txt"\n')
    with pytest.raises(PinError, match="missing"):
        load_pins(DirSource(tmp_path))
    (tmp_path / "pins" / "env.txt").write_text("pytest\n")
    with pytest.raises(PinError, match="name==version"):
        load_pins(DirSource(tmp_path))
    (tmp_path / "pins" / "env.txt").write_text("pytest==8.0\n")
    env = load_config(DirSource(tmp_path)).environment
    assert env is not None
    assert env.requirements == "pins/env.txt"


def test_a_patch_to_the_lock_file_is_a_pin_mutation() -> None:
    """The lock may live outside pins/: it is a pin wherever it is (R8), never a data file."""
    layout = Layout(
        source_roots=("src",),
        oracle_paths=("tests/",),
        pins_dir="pins",
        pin_files=frozenset({"requirements-test.txt"}),
    )
    assert layout.role("requirements-test.txt") == "pin"
    assert layout.role("requirements.txt") != "pin"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    out = tmp_path_factory.mktemp("wheels")
    built = [repack(n, out) for n in PYTEST_STACK]
    built.append(make_wheel(out, "tinydep", "1.0", {"tinydep/__init__.py": "X = 1\n"}))
    return out, ("\n".join(lock_line(w) for w in built) + "\n").encode()


def test_two_builds_of_one_lock_give_one_digest_and_a_normalized_tree(
    tmp_path: Path, wheels: tuple[Path, bytes]
) -> None:
    wheel_dir, lock = wheels
    kw = {"lock": lock, "lock_name": "lock", "source_roots": ("src",), "no_index": True}
    one = build_environment(cache=tmp_path / "a", find_links=[wheel_dir], **kw)  # type: ignore[arg-type]
    two = build_environment(cache=tmp_path / "b", find_links=[wheel_dir], **kw)  # type: ignore[arg-type]
    assert one.digest == two.digest
    assert not one.cached
    files = tree_files(one.tree)
    assert environment_digest({p: _entries({p: f.read_bytes()})[p] for p, f in files.items()}) == (
        one.digest
    )
    assert not [p for p in files if p.endswith(".pyc") or "/RECORD" in p or p.startswith("bin/")]
    assert {f.stat().st_mode & 0o777 for f in files.values()} == {0o644}
    assert json.loads((one.tree / ENVIRONMENT_INFO).read_text())["source_roots"] == ["src"]
    again = build_environment(cache=tmp_path / "a", **kw)  # type: ignore[arg-type]
    assert (again.digest, again.cached) == (one.digest, True)  # the cache, no index needed


def test_a_build_pip_refuses_names_why(tmp_path: Path, wheels: tuple[Path, bytes]) -> None:
    wheel_dir, lock = wheels
    bad = lock.replace(b"tinydep==1.0", b"tinydep==2.0")
    with pytest.raises(EnvironmentBuildError, match="pip install from lock failed"):
        build_environment(
            lock=bad,
            lock_name="lock",
            source_roots=("src",),
            cache=tmp_path,
            find_links=[wheel_dir],
            no_index=True,
        )
    assert not list((tmp_path / "env").glob("build-*"))  # nothing half-built left


def _manifest(env: str | None) -> Manifest:
    return Manifest(pin_id="pin", seed=7, clock_bound_ms=5000, allowed_commands=(CMD,),
                    environment_digest=env)  # fmt: skip


def test_the_environment_digest_is_a_predicate_field_and_leaves_the_fixture_digest() -> None:
    legacy, with_env = _manifest(None), _manifest("c" * 64)
    assert legacy.digest() == with_env.digest()  # fixture digest v1 unchanged
    payload = fixture_statement(with_env, OPERATOR, "2026-01-01T00:00:00Z")
    assert json.loads(payload)["predicate"]["environment_digest"] == "c" * 64
    assert parse_fixture_statement(payload)[0].environment_digest == "c" * 64
    plain = fixture_statement(legacy, OPERATOR, "2026-01-01T00:00:00Z")
    assert "environment_digest" not in json.loads(plain)["predicate"]
    assert parse_fixture_statement(plain)[0].environment_digest is None
    forged = json.loads(payload)
    forged["predicate"]["environment_digest"] = "C" * 64
    with pytest.raises(EnvelopeError, match="environment_digest"):
        parse_fixture_statement(json.dumps(forged).encode())


@pytest.mark.parametrize("bad", ["c" * 63, "C" * 64, "g" * 64, "c" * 65, " " + "c" * 63])
def test_the_signer_refuses_an_environment_digest_of_another_form(bad: str) -> None:
    raw = RawManifest(pin_id="pin", algorithm="sha256", files=[], seed=7, clock_bound_ms=5000,
                      allowed_commands=[list(CMD)], environment_digest=bad)  # fmt: skip
    with pytest.raises(InvalidArgument, match="environment_digest"):
        validate(raw)
    ok = RawManifest(pin_id="pin", algorithm="sha256", files=[], seed=7, clock_bound_ms=5000,
                     allowed_commands=[list(CMD)], environment_digest="c" * 64)  # fmt: skip
    assert validate(ok).environment_digest == "c" * 64
    assert (
        validate(RawManifest(**{**ok.__dict__, "environment_digest": ""})).environment_digest
        is None
    )


ENV_FILES = {
    "pytest/__init__.py": b"x = 1\n",
    ENVIRONMENT_INFO: b'{"format":1,"python":"3.11","source_roots":["src"]}\n',
}
WS = {"src/lib/__init__.py": b"x = 1\n", "tests/test_x.py": b"def test_ok(): pass\n"}


def _put(store: BlobStore, data: bytes) -> str:
    d = hashlib.sha256(data).hexdigest()
    store.ingest([Chunk(d, len(data), 0, data)])
    return d


def _executor(tmp_path: Path, runtime: FakeRuntime) -> tuple[Executor, BlobStore]:
    store = BlobStore(tmp_path / "blobs", 1 << 20)
    for data in [*ENV_FILES.values(), *WS.values(), b"tampered = 1\n"]:
        _put(store, data)
    executor = Executor(
        store=store, runtime=runtime, signer=EXECUTOR_KEY,
        operator_keyring=Keyring([OPERATOR.keyring_entry()]), policy=SandboxPolicy(image="img"),
        host_mounts=(Mount("/venv", "/venv"),), path_dirs=("/venv/bin",),
        work_dir=tmp_path / "work", max_parallel=1, labels={"patchgate.executord": "t"},
        channels=runtime.channel,
        bare=Bare(mounts=(Mount("/base", "/base"),), path_dirs=("/base/bin",),
                  hidden=("/base/lib/site-packages",)),
    )  # fmt: skip
    return executor, store


def _request(env_digest: str | None, tree: dict[str, bytes]) -> ExecuteInput:
    envelope = sign_envelope(
        fixture_statement(_manifest(env_digest), OPERATOR, "2026-01-01T00:00:00Z"), OPERATOR
    )
    items = tuple(TreeItem(p, hashlib.sha256(b).hexdigest(), len(b)) for p, b in tree.items())
    return ExecuteInput(
        request_id="req",
        envelope=envelope,
        workspace=tuple(TreeItem(p, hashlib.sha256(b).hexdigest(), len(b)) for p, b in WS.items()),
        fixture_root="fixtures",
        properties=(PropertyRun("p", (*CMD, "tests/test_x.py::test_ok")),),
        runs=1,
        environment=items,
    )


def test_the_executor_refuses_an_environment_that_is_not_the_signed_one(tmp_path: Path) -> None:
    runtime = FakeRuntime()
    executor, _ = _executor(tmp_path, runtime)
    signed = environment_digest(_entries(ENV_FILES))
    tampered = {**ENV_FILES, "pytest/__init__.py": b"tampered = 1\n"}
    for env, tree, why in [
        (signed, tampered, "environment digest of the mounted bytes"),
        (signed, {}, "carries no environment tree"),
        (None, ENV_FILES, "names no environment"),
        (signed, {**ENV_FILES, "extra.py": b"x = 1\n"}, "mounted bytes"),
    ]:
        with pytest.raises(FailedPrecondition, match=why):
            executor.prepare(_request(env, tree))
    assert runtime.created == []
    assert list((tmp_path / "work").iterdir()) == []  # nothing materialized is left


def test_an_environment_run_mounts_the_tree_not_the_executor_venv(tmp_path: Path) -> None:
    runtime = FakeRuntime()
    executor, _ = _executor(tmp_path, runtime)
    signed = environment_digest(_entries(ENV_FILES))
    # judge off: the one process gets the environment and the source roots on its path
    prepared = executor.prepare(dataclasses.replace(_request(signed, ENV_FILES), judge="off"))
    try:
        report, _ = executor.run(prepared, lambda _p: None, threading.Event())
        # judge on: the judge's path is the same; the subject's is the environment (it adds the
        # source roots itself)
        judge = JudgeRun(source_roots=("src",), production=("pkg",), bound_ms=1000, deadline_ms=1)
        config = executor._layout(prepared)._config(judge, CMD, 7, with_targets=False, batch=False)
    finally:
        executor.cleanup(prepared)
    assert report.environment == signed
    (spec,) = runtime.created
    targets = {m.target: m for m in spec.mounts}
    assert "/venv" not in targets
    assert "/base" in targets
    assert targets[ENV].read_only
    assert targets["/base/lib/site-packages"].read_only
    assert spec.env["PYTHONPATH"].split(":")[1:] == [ENV, "/workspace/src"]
    assert spec.env["PATH"].split(":")[0] == "/base/bin"
    roles: dict[str, dict[str, dict[str, str]]] = config  # type: ignore[assignment]
    assert roles["judge"]["env"]["PYTHONPATH"].split(":")[1:] == [ENV, "/workspace/src"]
    assert roles["subject"]["env"]["PYTHONPATH"] == ENV

    legacy = FakeRuntime()
    old, _ = _executor(tmp_path / "legacy", legacy)
    prepared = old.prepare(_request(None, {}))
    try:
        report, _ = old.run(prepared, lambda _p: None, threading.Event())
    finally:
        old.cleanup(prepared)
    assert report.environment == "executor"
    assert "/venv" in {m.target for m in legacy.created[0].mounts}
