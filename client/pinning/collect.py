"""``pin properties --from-pytest``: the tests marked ``@pytest.mark.patchgate`` become properties.

Collection runs in a subprocess, in the repository. With ``[tool.patchgate.environment]`` it runs
in the suite's environment (the base interpreter with ``-S``, the environment tree and the source
roots on ``PYTHONPATH``: what the sandbox has); without one, with the interpreter patchgate runs
under (so the project's own dependencies must be importable there, as for its tests)::

    python -m pytest --collect-only -q -p no:cacheprovider -p patchgate.pytest_collect
                     --rootdir REPO [PATH ...]

with ``PATCHGATE_COLLECT_OUT`` naming a temporary file the collector plugin writes the marked
items to (:mod:`patchgate.pytest_collect`) and ``PYTHONDONTWRITEBYTECODE`` set (no ``.pyc`` left
in the repository). No test runs, but collection imports the test modules and ``conftest.py``
files in the operator's environment, as pytest does: this is for the operator's own reviewed
code, never for an agent's patch. Each marked test becomes::

    {"id": <id= or <module>.<test>>, "claim": <claim= or "">, "class": <kind=>,
     "covers": <covers=>, "command": <first allowed command of the fixture pin> + [<node id>]}

where ``<module>.<test>`` is the node id's file as a dotted path and its names
(``tests/test_core.py::TestSlug::test_x`` → ``tests.test_core.TestSlug.test_x``).

The marked tests are the whole truth: ``properties.json`` is replaced, and what was added,
removed or changed (by id) is printed. Refused, every problem listed at once and nothing written
(exit 78): a collection error, a mark with positional arguments or an unknown keyword, no ``kind``
or an unknown one, ``covers`` missing or not a list of names, two tests with the same id, and
anything the pin parser refuses.

A parametrized test function is one property: all its cases (its command ends with the function's
node id, ``tests/test_a.py::test_f``, which pytest runs with every case; ``pass`` only when every
case passes). Its cases must all carry the same mark (refused: cases with different marks, or only
some cases marked — a ``pytest.param(..., marks=...)`` mark would leave the others unreviewed in
the property). The default id is the function's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client.errors import EXIT_CONFIG, CommandRefused, ConfigError
from client.pinning.changes import Changes, diff_maps, no_link_on_the_way
from client.pinning.fixtures import config_error
from patchgate import pytest_collect
from patchgate.atomicfile import atomic_write_bytes, json_bytes
from patchgate.environment import build_environment
from patchgate.errors import EnvironmentBuildError, PinError, PinErrors
from patchgate.pins import (
    PROPERTY_CLASSES,
    DirSource,
    ProjectConfig,
    load_config,
    parse_fixture_pin,
)
from patchgate.pins import parse_properties as parse_properties_pin
from patchgate.pytest_collect import OUT_ENV

__all__ = [
    "COLLECT_TIMEOUT_S",
    "PropertyUpdate",
    "build_properties",
    "default_id",
    "oracle_test_paths",
    "repin_properties",
    "run_collection",
]

COLLECT_TIMEOUT_S = 600
_KEYWORDS = ("claim", "kind", "covers", "id")
_TAIL_LINES = 15

Collector = Callable[[Path, Sequence[str]], list[dict[str, Any]]]


def _environment(repo: Path, tmp: Path) -> tuple[list[str], dict[str, str]]:
    """The interpreter prefix and environment variables collection runs with.

    With ``[tool.patchgate.environment]``: the base interpreter without its site-packages
    (``-S``), the environment tree (built or found in the cache from the working tree's lock),
    the source roots and a copy of the collector plugin on ``PYTHONPATH`` — never patchgate's own
    site-packages. Without: patchgate's own interpreter, as before.
    """
    config = load_config(DirSource(repo))
    if config.environment is None:
        return [sys.executable], {}
    lock = DirSource(repo).read(config.environment.requirements)
    if lock is None:
        raise CommandRefused(f"{repo / config.environment.requirements}: missing", EXIT_CONFIG)
    roots = config.roots(has_src=(repo / "src").is_dir())
    try:
        built = build_environment(
            lock=lock, lock_name=config.environment.requirements, source_roots=roots
        )
    except EnvironmentBuildError as exc:
        raise ConfigError([f"{exc} (patchgate env build makes it offline: --find-links)"]) from None
    plugin = tmp / "plugin" / "patchgate"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("", encoding="utf-8")
    here = Path(pytest_collect.__file__).parent
    for name in ("pytest_collect.py", "pytest_plugin.py"):
        shutil.copyfile(here / name, plugin / name)
    path = [str(plugin.parent), str(built.tree), *(str(repo.resolve() / r) for r in roots)]
    python = str(Path(sys.base_prefix) / "bin" / "python3")
    return [python, "-S"], {"PYTHONPATH": os.pathsep.join(path), "PYTHONNOUSERSITE": "1"}


def run_collection(repo: Path, paths: Sequence[str]) -> list[dict[str, Any]]:
    """The records of the marked tests of ``repo``; ConfigError with the tail of pytest's output."""
    with tempfile.TemporaryDirectory(prefix="patchgate-collect-") as tmp:
        out = Path(tmp) / "items.json"
        python, extra = _environment(repo, Path(tmp))
        argv = [*python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        argv += ["-p", "patchgate.pytest_collect", "--rootdir", str(repo.resolve()), *paths]
        try:
            proc = subprocess.run(
                argv,
                cwd=repo,
                env={**os.environ, **extra, OUT_ENV: str(out), "PYTHONDONTWRITEBYTECODE": "1"},
                capture_output=True,
                text=True,
                errors="replace",
                check=False,
                timeout=COLLECT_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise ConfigError([f"pytest collection took more than {COLLECT_TIMEOUT_S} s"]) from None
        except OSError as exc:
            raise ConfigError([f"cannot run pytest: {exc.strerror or exc}"]) from None
        if proc.returncode not in (0, 5) or not out.exists():  # 5: no test collected
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-_TAIL_LINES:]
            raise ConfigError(
                [f"pytest collection failed (exit {proc.returncode}); its output ends:", *tail]
            )
        data = json.loads(out.read_text(encoding="utf-8"))
    items: list[dict[str, Any]] = data["items"]
    counts = data.get("cases", {})
    for item in items:  # how many cases the function has, marked or not (see _functions)
        item["cases_collected"] = counts.get(item.get("function", ""), 0)
    return items


def default_id(nodeid: str) -> str:
    """``<module>.<test>``: ``tests/test_a.py::C::test_x`` → ``tests.test_a.C.test_x``."""
    path, *names = nodeid.split("::")
    module = path[:-3] if path.endswith(".py") else path
    return ".".join([module.replace("/", "."), *names])


def _property(item: dict[str, Any], command: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """One property from one collected record, and every problem of its mark."""
    nodeid = str(item.get("nodeid", "?"))
    kwargs: dict[str, Any] = item.get("kwargs") or {}
    problems: list[str] = []
    if item.get("args"):
        problems.append("the mark takes keyword arguments only (claim=, kind=, covers=, id=)")
    problems += [
        f"unknown argument {k}=; one of {', '.join(_KEYWORDS)}"
        for k in kwargs
        if k not in _KEYWORDS
    ]
    kind = kwargs.get("kind")
    if kind not in PROPERTY_CLASSES:
        problems.append(f"kind= is required, one of {', '.join(PROPERTY_CLASSES)} (got {kind!r})")
    covers = kwargs.get("covers")
    if not isinstance(covers, list) or not all(isinstance(c, str) and c for c in covers):
        problems.append("covers= is required, a list of qualified symbol names")
    claim = kwargs.get("claim", "")
    if not isinstance(claim, str):
        problems.append("claim= must be a string")
    pid = kwargs.get("id", default_id(nodeid))
    if not isinstance(pid, str):
        problems.append("id= must be a string")
    prop = {
        "id": pid,
        "claim": claim,
        "class": kind,
        "covers": covers,
        "command": [*command, nodeid],
    }
    return prop, [f"{nodeid}: {p}" for p in problems]


def _functions(items: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """One record per test function: a parametrized function's cases folded into one whose
    ``nodeid`` is the function's; a problem when its cases' marks differ or only some are marked."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    seen: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        if not item.get("parametrized"):
            out.append(item)
            continue
        function = str(item.get("function") or str(item.get("nodeid", "?")).split("[", 1)[0])
        if function not in seen:
            seen[function] = []
            out.append({**item, "nodeid": function, "parametrized": False})
        seen[function].append(item)
    for function, cases in seen.items():
        marks = {json.dumps([c.get("args"), c.get("kwargs")], sort_keys=True) for c in cases}
        if len(marks) > 1:
            problems.append(
                f"{function}: its cases carry different patchgate marks; a parametrized test is "
                "one property: mark the function once"
            )
        total = max((int(c.get("cases_collected") or 0) for c in cases), default=0)
        if total > len(cases):
            problems.append(
                f"{function}: only {len(cases)} of its {total} cases are marked; a parametrized "
                "test is one property with all its cases: mark the function"
            )
    return out, problems


def build_properties(
    items: Sequence[dict[str, Any]], command: Sequence[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The properties of the collected ``items`` (a parametrized function's cases: one property)
    and every problem (ids must be unique)."""
    props: list[dict[str, Any]] = []
    owner: dict[str, str] = {}
    functions, problems = _functions(items)
    for item in functions:
        prop, found = _property(item, command)
        problems += found
        nodeid = prop["command"][-1]
        pid = prop["id"]
        if isinstance(pid, str) and pid in owner:
            problems.append(f"{nodeid}: id {pid!r} is also the id of {owner[pid]}")
        elif isinstance(pid, str):
            owner[pid] = nodeid
        props.append(prop)
    return props, problems


@dataclass(frozen=True, kw_only=True)
class PropertyUpdate:
    """What ``pin properties`` did: the pin file, the changes by id, how many it pins now."""

    path: Path
    changes: Changes
    properties: int


def _by_id(raw: bytes | None) -> dict[str, object]:
    """The entries of an existing properties.json by id (anything unreadable: empty)."""
    try:
        obj = json.loads(raw.decode("utf-8")) if raw is not None else {}
    except (UnicodeDecodeError, ValueError):
        return {}
    items = obj.get("properties") if isinstance(obj, dict) else None
    return {
        str(i.get("id")): i
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict)
    }


def _parser_problems(
    data: bytes, where: str, props: list[dict[str, Any]], fixtures: Any
) -> list[str]:
    """The pin parser's problems of the new file, each named by the test it came from."""
    try:
        parse_properties_pin(data, where, fixtures)
    except PinError as exc:
        found = exc.errors if isinstance(exc, PinErrors) else (exc,)
        out = []
        for e in found:
            index = e.field.partition("]")[0].removeprefix("properties[")
            node = props[int(index)]["command"][-1] if index.isdigit() else where
            out.append(f"{node}: {e.field.partition('.')[2] or e.field}: {e.why}")
        return out
    return []


def oracle_test_paths(repo: Path, config: ProjectConfig) -> list[str]:
    """Where ``--from-pytest`` collects when no PATH is given: the oracle paths that exist (the
    pins directory aside), not the whole tree, whose other tests may need what the suite's
    environment lacks; ConfigError when none does (``oracle_paths`` must say where tests are)."""
    pins = config.pins_dir.strip("/")
    found = [
        p.rstrip("/")
        for p in config.oracle_paths
        if p.strip("/") != pins and (repo / p.strip("/")).exists() and p.strip("/")
    ]
    if not found:
        named = ", ".join(config.oracle_paths)
        raise ConfigError(
            [
                f"the oracle paths ({named}) hold no test directory or file of {repo}: set "
                "oracle_paths in [tool.patchgate] to where the tests are (e.g. 'pkg/tests/'), "
                "or name the paths to collect"
            ]
        )
    return found


def repin_properties(
    repo: Path, paths: Sequence[str] = (), collect: Collector = run_collection
) -> PropertyUpdate:
    """Replace ``repo``'s properties.json by its marked tests; ConfigError lists every problem."""
    source = DirSource(repo)
    try:
        config = load_config(source)
    except PinError as exc:
        raise config_error(exc) from None
    fx_rel, prop_rel, _ = config.pin_paths
    no_link_on_the_way(repo, prop_rel)
    raw_fx = source.read(fx_rel)
    if raw_fx is None:
        raise CommandRefused(
            f"{source.describe(fx_rel)}: missing; run 'patchgate init' first", EXIT_CONFIG
        )
    try:
        fixtures = parse_fixture_pin(raw_fx, source.describe(fx_rel), config.fixture_root)
    except PinError as exc:
        raise config_error(exc) from None
    props, problems = build_properties(
        collect(repo, paths or oracle_test_paths(repo, config)), fixtures.allowed_commands[0]
    )
    where = source.describe(prop_rel)
    data = json_bytes({"properties": props})
    if not problems:
        problems = _parser_problems(data, where, props, fixtures)
    if problems:
        raise ConfigError(problems)
    changes = diff_maps(_by_id(source.read(prop_rel)), {p["id"]: p for p in props})
    if not changes.empty:
        atomic_write_bytes(repo / prop_rel, data)
    return PropertyUpdate(path=repo / prop_rel, changes=changes, properties=len(props))
