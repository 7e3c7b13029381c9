"""A lock runs nothing on the host (issue 41): a lock line is a requirement, an optional marker and
``--hash=`` entries, nothing else; pip is given only what the parser re-serialized, wheels only.

The attack: an option after a marker (``pkg==1.0 ; python_version >= "3" --no-binary pkg``) made
pip build the source distribution, and its build backend ran on the host. Here the source
distribution is a local one whose backend writes a marker file when it is imported: the marker
file is the proof that a backend ran.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from patchgate import environment
from patchgate.environment import build_environment, parse_lock
from patchgate.errors import EnvironmentBuildError, PinError
from tests.wheelhouse import PYTEST_STACK, lock_line, make_wheel, repack

H = "a" * 64


def _sdist(out: Path, name: str, version: str, marker: Path) -> Path:
    """A source distribution whose in-tree build backend writes ``marker`` when imported."""
    backend = (
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('a build backend ran on the host')\n"
        "def get_requires_for_build_wheel(config_settings=None):\n    return []\n"
        "def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):\n"
        "    raise RuntimeError('no wheel')\n"
    )
    files = {
        "pyproject.toml": (
            '[build-system]\nrequires = []\nbuild-backend = "evilbackend"\nbackend-path = ["."]\n'
        ),
        "evilbackend.py": backend,
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    path = out / f"{name}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{rel}")
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(scope="module")
def house(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """A find-links dir: the pytest stack as wheels, ``evil`` only as a source distribution."""
    out = tmp_path_factory.mktemp("links")
    marker = tmp_path_factory.mktemp("proof") / "backend-ran"
    built = [repack(n, out) for n in PYTEST_STACK]
    built.append(make_wheel(out, "tinydep", "1.0", {"tinydep/__init__.py": "X = 1\n"}))
    sdist = _sdist(out, "evil", "1.0", marker)
    sdist_hash = hashlib.sha256(sdist.read_bytes()).hexdigest()
    lines = "\n".join(lock_line(w) for w in built)
    return out, lines + f"\n@EVIL@ --hash=sha256:{sdist_hash}\n", marker


SMUGGLED = [
    'evil==1.0 ; python_version >= "3" --no-binary evil',
    'evil==1.0 ; python_version >= "3" --no-binary :all:',
    'evil==1.0 ; python_version >= "3" --config-settings x=y',
    'evil==1.0 ; python_version >= "3" --index-url http://example.invalid/simple',
    'evil==1.0 ; python_version >= "3" -r other.txt',
    "evil==1.0 --no-binary evil",
    'evil==1.0 ; platform_release == "x --no-binary evil"',
]


@pytest.mark.parametrize("line", SMUGGLED)
def test_an_option_after_a_marker_is_refused_and_no_build_backend_runs(
    tmp_path: Path, house: tuple[Path, str, Path], line: str
) -> None:
    links, text, marker = house
    marker.unlink(missing_ok=True)
    lock = text.replace("@EVIL@", line).encode()
    with pytest.raises(EnvironmentBuildError) as err:
        build_environment(
            lock=lock,
            lock_name="lock",
            source_roots=("src",),
            cache=tmp_path,
            find_links=[links],
            no_index=True,
        )
    assert not marker.exists(), "a build backend ran on the host"
    assert "lock: line 7: " in str(err.value)


@pytest.mark.parametrize("pip_no_binary", ["", "evil", ":all:"])
def test_a_source_only_distribution_is_never_built_even_from_an_honest_line(
    tmp_path: Path,
    house: tuple[Path, str, Path],
    monkeypatch: pytest.MonkeyPatch,
    pip_no_binary: str,
) -> None:
    """Wheels only, always: not even the operator's pip settings turn a source build on (the
    source-only entry first, so pip reaches it before any other entry can fail)."""
    links, text, marker = house
    marker.unlink(missing_ok=True)
    if pip_no_binary:
        monkeypatch.setenv("PIP_NO_BINARY", pip_no_binary)
    evil = next(ln for ln in text.splitlines() if "@EVIL@" in ln).replace("@EVIL@", "evil==1.0")
    rest = [ln for ln in text.splitlines() if "@EVIL@" not in ln]
    with pytest.raises(EnvironmentBuildError, match="pip install from lock failed"):
        build_environment(
            lock=("\n".join([evil, *rest]) + "\n").encode(),
            lock_name="lock",
            source_roots=("src",),
            cache=tmp_path,
            find_links=[links],
            no_index=True,
        )
    assert not marker.exists(), "a build backend ran on the host"


@pytest.mark.parametrize(
    "line",
    [
        "-r other.txt",
        "-c constraints.txt",
        "-e .",
        "--index-url http://example.invalid/simple",
        "--extra-index-url http://example.invalid/simple",
        "--no-binary :all:",
        "--config-settings x=y",
        "--find-links /tmp",
        "--trusted-host example.invalid",
        "--pre",
        'evil==1.0 ; python_version >= "3" --no-binary evil',
        'evil==1.0 ; python_version >= "3" --hash=sha256:' + H + " --no-binary evil",
        "evil==1.0 --hash=sha256:" + H + ' ; python_version >= "3"',
        "evil==1.0 ; --no-binary evil",
        'evil==1.0 ; python_version >= "3" and',
        'evil==1.0 ; python_version >= "3" )',
        'evil==1.0 ; python_version >= "3" evil',
        'evil==1.0 ; no_such_variable == "1"',
        'evil==1.0 ; platform_release == "x -r /etc/passwd"',
        "evil==1.0 --global-option=x",
        "evil==1.0 --install-option=x",
    ],
)
def test_any_token_but_a_requirement_marker_and_hashes_is_a_configuration_error(
    line: str,
) -> None:
    with pytest.raises(PinError, match=r"line 2: "):
        parse_lock(f"pytest==8.0\n{line}\n", "lock.txt")


def test_an_honest_lock_with_markers_hashes_extras_and_continuations_parses() -> None:
    text = (
        "# reviewed\n"
        "pytest==8.0 \\\n    --hash=sha256:" + H + "\n"
        "colorama==0.4.6 ; sys_platform == 'win32' --hash=sha256:" + "b" * 64 + "  # win\n"
        'tomli==2.0.1 ; python_version < "3.11" and (platform_machine != "arm64" or '
        'implementation_name == "cpython") \\\n'
        "    --hash=sha256:" + "c" * 64 + " \\\n    --hash=sha256:" + "d" * 64 + "\n"
        "exceptiongroup[test]==1.2.0; python_full_version >= '3.7' --hash=sha256:" + "e" * 64 + "\n"
    )
    lock = parse_lock(text, "lock.txt")
    assert lock.names == ("pytest", "colorama", "tomli", "exceptiongroup")
    assert lock.hashed
    assert lock.requirements == (
        "pytest==8.0 --hash=sha256:" + H,
        'colorama==0.4.6 ; sys_platform == "win32" --hash=sha256:' + "b" * 64,
        'tomli==2.0.1 ; python_version < "3.11" and ( platform_machine != "arm64" or '
        'implementation_name == "cpython" ) --hash=sha256:'
        + "c" * 64
        + " --hash=sha256:"
        + "d" * 64,
        'exceptiongroup==1.2.0 ; python_full_version >= "3.7" --hash=sha256:' + "e" * 64,
    )


def test_pip_is_given_only_the_re_serialized_requirements_and_fixed_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What pip reads: a file the parser wrote (never the lock's bytes), wheels only, no deps."""
    seen: dict[str, object] = {}

    def fake_run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        req = Path(argv[argv.index("-r") + 1])
        seen["argv"] = argv
        seen["requirements"] = req.read_text(encoding="utf-8")
        return subprocess.CompletedProcess(argv, 1, "", "stop here")

    monkeypatch.setattr(environment.subprocess, "run", fake_run)
    lock = (
        "pytest==8.0 ; python_version >= '3' --hash=sha256:" + H + "  # the runner\n"
        "tinydep==1.0 \\\n  --hash=sha256:" + "b" * 64 + "\n"
    ).encode()
    with pytest.raises(EnvironmentBuildError, match="stop here"):
        build_environment(lock=lock, lock_name="lock", source_roots=(), cache=tmp_path)
    assert seen["requirements"] == (
        'pytest==8.0 ; python_version >= "3" --hash=sha256:' + H + "\n"
        "tinydep==1.0 --hash=sha256:" + "b" * 64 + "\n"
    )
    argv = seen["argv"]
    assert isinstance(argv, list)
    # wheels only, after anything a configuration could say; the requirements file is the parser's
    assert argv[argv.index("--only-binary") + 1] == ":all:"
    assert "--no-deps" in argv
    assert "--require-hashes" in argv
    assert "--no-binary" not in argv
    assert argv.count("-r") == 1


def test_an_honest_lock_with_markers_and_hashes_still_builds(
    tmp_path: Path, house: tuple[Path, str, Path]
) -> None:
    """The control: markers pip evaluates (one true, one false for a distribution the links do
    not have), hashes, comments and continuations; the tree holds what the true markers name."""
    links, text, marker = house
    lines = [ln for ln in text.splitlines() if "@EVIL@" not in ln]
    tiny = next(i for i, ln in enumerate(lines) if ln.startswith("tinydep=="))
    name, hashes = lines[tiny].split(" ", 1)
    lines[tiny] = f'{name} ; python_version >= "3" and os_name != "nonexistent" \\\n    {hashes}'
    lines.append('absent==1.0 ; sys_platform == "no-such-platform" --hash=sha256:' + H + "  # off")
    built = build_environment(
        lock=("# reviewed\n" + "\n".join(lines) + "\n").encode(),
        lock_name="lock",
        source_roots=("src",),
        cache=tmp_path,
        find_links=[links],
        no_index=True,
    )
    assert (built.tree / "tinydep" / "__init__.py").read_text() == "X = 1\n"
    assert (built.tree / "pytest").is_dir()
    assert not (built.tree / "absent").exists()
    assert not marker.exists()
