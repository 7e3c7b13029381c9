"""``patchgate init``: a first ``pins/`` and ``[tool.patchgate]`` for a repository, no overwrite.

It writes ``pins/fixtures.json`` (every file under the fixture root hashed; seed 7, clock bound
30 s, the one allowed command ``python -m pytest -q -p no:cacheprovider``), an empty
``pins/properties.json`` and ``pins/flakes.json``, and a ``[tool.patchgate]`` table with
``source_roots`` guessed from the layout (``["src"]`` when ``src/`` is a directory, else
``["."]``, the repository root) and, when the tests live elsewhere than ``tests/`` (``pkg/tests/``
inside a package, ``test/``), ``oracle_paths`` naming where they are. The table is appended to
``pyproject.toml`` when there is one — its bytes are kept as they are, the table goes at the
end — else it is a new ``patchgate.toml``.

It refuses (exit 64, nothing written) when any file it would create exists, when
``patchgate.toml`` exists (the gate reads it before ``pyproject.toml``) or when ``pyproject.toml``
already has a ``[tool.patchgate]`` table: it names each. A fixture file git ignores or does not
track is refused (exit 78), or left out and listed with ``skip_untracked``. An unreadable
``pyproject.toml`` is a configuration error (exit 78). Before anything is written, the new
configuration is read back with :func:`patchgate.pins.load_config` and the new fixture pin with
the pin parser.
"""

from __future__ import annotations

import contextlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from client.errors import EXIT_USAGE, CommandRefused, ConfigError
from client.pinning.changes import no_link_on_the_way
from client.pinning.fixtures import config_error, scan_fixtures, tracked_fixtures
from client.pinning.tree import tree_files
from patchgate.atomicfile import atomic_write_bytes, json_bytes
from patchgate.digest import validate_path
from patchgate.environment import parse_lock
from patchgate.errors import PinError, UnsafePathError, UsageError
from patchgate.pins import ProjectConfig, load_config, parse_fixture_pin

__all__ = ["DEFAULT_COMMAND", "InitPlan", "apply_init", "plan_init"]

DEFAULT_COMMAND = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
DEFAULT_SEED = 7
DEFAULT_CLOCK_BOUND_MS = 30_000
_CONFIG_HEADER = (
    "# patchgate: where the pins are and what is production source (patchgate init --help).\n"
    "# The gate reads this table from the base revision; editing it in a patch is a pin mutation.\n"
)


@dataclass(frozen=True, kw_only=True)
class InitPlan:
    """The files ``init`` writes: (relative path, bytes, mode), in order; config last."""

    repo: Path
    writes: tuple[tuple[str, bytes, int], ...]
    config_file: str
    source_roots: tuple[str, ...]
    oracle_paths: tuple[str, ...] = ProjectConfig().oracle_paths
    fixture_files: int
    skipped: tuple[str, ...] = ()

    @property
    def created(self) -> list[str]:
        """The relative paths written (``pyproject.toml`` when the table was appended)."""
        return [rel for rel, _, _ in self.writes]


def _pin_id(repo: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._:-]+", "-", repo.resolve().name).strip("-._:")
    return f"fixpin-{name or 'main'}"[:128]


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's for a safe path (no control characters)."""
    return json.dumps(text, ensure_ascii=False)


_TEST_DIRS = frozenset({"tests", "test", "testing"})


def test_dirs(repo: Path) -> tuple[str, ...]:
    """Where the repository's tests are: every directory named ``tests``, ``test`` or ``testing``
    (at any depth: ``pkg/tests/`` inside a package too) holding a ``test_*.py``, ``*_test.py`` or
    ``conftest.py``, outermost only, as oracle path prefixes (``tests/``)."""
    found: set[str] = set()
    for rel in tree_files(repo):
        parts = rel.split("/")
        name = parts[-1]
        if not (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"):
            continue
        if not name.endswith(".py"):
            continue
        for i, part in enumerate(parts[:-1]):
            if part in _TEST_DIRS:
                found.add("/".join(parts[: i + 1]) + "/")
                break
    return tuple(sorted(found))


def oracle_paths(repo: Path) -> tuple[str, ...]:
    """The oracle paths ``init`` writes: the default's, or the test directories found plus
    ``properties/`` and ``pins/`` when the tests are elsewhere than ``tests/``."""
    default = ProjectConfig().oracle_paths
    found = test_dirs(repo)
    if not found or found == ("tests/",):
        return default
    return tuple(dict.fromkeys([*found, *(p for p in default if p != "tests/")]))


def _table(
    source_roots: tuple[str, ...],
    fixture_root: str,
    requirements: str | None,
    oracle: tuple[str, ...] = ProjectConfig().oracle_paths,
) -> str:
    roots = ", ".join(_toml_string(r) for r in source_roots)
    lines = ["[tool.patchgate]", f"source_roots = [{roots}]"]
    if oracle != ProjectConfig().oracle_paths:
        lines.append(f"oracle_paths = [{', '.join(_toml_string(o) for o in oracle)}]")
    if fixture_root != "fixtures":
        lines.append(f"fixture_root = {_toml_string(fixture_root)}")
    if requirements is not None:
        lines += [
            "",
            "[tool.patchgate.environment]",
            f"requirements = {_toml_string(requirements)}",
        ]
    return "\n".join(lines) + "\n"


def _requirements(repo: Path, requirements: str | None) -> str | None:
    """``--requirements FILE``: a safe path to a regular file of exact pins (pytest among them)."""
    if requirements is None:
        return None
    try:
        rel = validate_path(requirements)
    except UnsafePathError as exc:
        raise UsageError(f"--requirements: {exc.why}") from None
    no_link_on_the_way(repo, rel)
    path = repo / rel
    if not path.is_file():
        raise UsageError(f"--requirements {rel}: not a file in the repository")
    try:
        parse_lock(path.read_text(encoding="utf-8"), rel)
    except UnicodeDecodeError:
        raise UsageError(f"--requirements {rel}: not UTF-8") from None
    except PinError as exc:
        raise config_error(exc) from None
    return rel


def _config(repo: Path, table: str) -> tuple[str, bytes, int]:
    """(file, new bytes, mode) of the configuration; refuses what must not be overwritten."""
    if (repo / "patchgate.toml").exists() or (repo / "patchgate.toml").is_symlink():
        raise CommandRefused(
            "patchgate.toml exists; init never overwrites (edit its [tool.patchgate])", EXIT_USAGE
        )
    pyproject = repo / "pyproject.toml"
    if not pyproject.exists():
        return "patchgate.toml", (_CONFIG_HEADER + table).encode("utf-8"), 0o644
    try:
        raw = pyproject.read_bytes()
        doc = tomllib.loads(raw.decode("utf-8"))
        mode = pyproject.stat().st_mode & 0o777
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError([f"{pyproject}: cannot read as TOML: {exc}"]) from None
    tool = doc.get("tool")
    if isinstance(tool, dict) and "patchgate" in tool:
        raise CommandRefused(
            "pyproject.toml already has [tool.patchgate]; init never overwrites it", EXIT_USAGE
        )
    sep = b"" if not raw else (b"\n" if raw.endswith(b"\n") else b"\n\n")
    return "pyproject.toml", raw + sep + (_CONFIG_HEADER + table).encode("utf-8"), mode


class _Bytes:
    """A PinSource over the planned files: the plan is read back before it is written."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def read(self, path: str) -> bytes | None:
        return self.files.get(path)

    def describe(self, path: str) -> str:
        return path


def plan_init(
    repo: Path,
    *,
    fixture_root: str = "fixtures",
    requirements: str | None = None,
    skip_untracked: bool = False,
) -> InitPlan:
    """What ``init`` would write in ``repo``; CommandRefused naming every file that exists."""
    try:
        fixture_root = validate_path(fixture_root.rstrip("/"))
    except UnsafePathError as exc:
        raise UsageError(f"--fixture-root: {exc.why}") from None
    pins_dir = ProjectConfig().pins_dir
    pin_files = ProjectConfig().pin_paths
    existing = [p for p in pin_files if (repo / p).exists() or (repo / p).is_symlink()]
    if existing:
        raise CommandRefused(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
            "init never overwrites (update with 'patchgate pin fixtures' or "
            "'patchgate pin properties --from-pytest')",
            EXIT_USAGE,
        )
    for rel in (*pin_files, "pyproject.toml"):
        no_link_on_the_way(repo, rel)
    has_src = (repo / "src").is_dir() and not (repo / "src").is_symlink()
    roots = ("src",) if has_src else (".",)
    lock = _requirements(repo, requirements)
    oracle = oracle_paths(repo)
    config_file, config_bytes, config_mode = _config(
        repo, _table(roots, fixture_root, lock, oracle)
    )
    files, skipped = tracked_fixtures(
        repo, fixture_root, scan_fixtures(repo, fixture_root), skip_untracked=skip_untracked
    )
    fixtures = {
        "pin_id": _pin_id(repo),
        "algorithm": "sha256",
        "files": files,
        "seed": DEFAULT_SEED,
        "clock_bound_ms": DEFAULT_CLOCK_BOUND_MS,
        "allowed_commands": [list(DEFAULT_COMMAND)],
    }
    writes = (
        (pin_files[0], json_bytes(fixtures), 0o644),
        (pin_files[1], json_bytes({"properties": []}), 0o644),
        (pin_files[2], json_bytes({"flakes": []}), 0o644),
        (config_file, config_bytes, config_mode),
    )
    try:
        config = load_config(_Bytes({config_file: config_bytes}))
        if (config.pins_dir, config.fixture_root, config.oracle_paths) != (
            pins_dir,
            fixture_root,
            oracle,
        ):
            raise ConfigError([f"{config_file}: the new [tool.patchgate] does not read back"])
        parse_fixture_pin(writes[0][1], pin_files[0], config.fixture_root)
    except PinError as exc:
        raise config_error(exc) from None
    return InitPlan(
        repo=repo,
        writes=writes,
        config_file=config_file,
        source_roots=roots,
        oracle_paths=oracle,
        fixture_files=len(files),
        skipped=skipped,
    )


def apply_init(plan: InitPlan) -> None:
    """Write the plan, each file atomically; on a failure remove the pin files written so far."""
    written: list[Path] = []
    try:
        for rel, data, mode in plan.writes:
            atomic_write_bytes(plan.repo / rel, data, mode=mode)
            written.append(plan.repo / rel)
    except BaseException:
        for path in written:
            if path.name != "pyproject.toml":
                with contextlib.suppress(OSError):
                    path.unlink()
        raise
