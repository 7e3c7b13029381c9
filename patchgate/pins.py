"""Human pins of the target repository (docs/reference/pins.md), read from a directory or a git
revision.

The gate reads pins from the **base** revision, never the patched tree. Each problem is a PinError
that names the file, the field and why.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from patchgate.batching import positionals
from patchgate.digest import SHA256_HEX, FileEntry, Manifest, validate_path
from patchgate.environment import EnvironmentConfig, parse_environment, parse_lock
from patchgate.errors import PatchgateError, PinError, PinErrors, UnsafePathError

__all__ = [
    "ELIGIBLE_CLASSES",
    "PROPERTY_CLASSES",
    "DirSource",
    "FixturePin",
    "Flake",
    "GitSource",
    "PinSet",
    "PinSource",
    "ProjectConfig",
    "PropertyPin",
    "command_allowed",
    "load_config",
    "load_pins",
    "node_id_of",
    "parse_fixture_pin",
    "parse_flakes",
    "parse_properties",
]

PROPERTY_CLASSES = ("pure_fn", "idempotent_io", "bounded_time", "external_probe")
ELIGIBLE_CLASSES = ("pure_fn", "idempotent_io")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
MAX_PIN_BYTES = 4 << 20


class PinSource(Protocol):
    """Where pin files are read from."""

    def read(self, path: str) -> bytes | None:
        """The bytes of ``path`` (relative to the repo root), or None when it does not exist."""

    def describe(self, path: str) -> str:
        """How to name ``path`` in an error message."""


@dataclass(frozen=True)
class DirSource:
    """Pins from a directory (a checkout)."""

    root: Path

    def read(self, path: str) -> bytes | None:
        p = Path(self.root) / path
        try:
            if p.stat().st_size > MAX_PIN_BYTES:
                raise PinError(self.describe(path), "", "file too large")
            return p.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise PinError(self.describe(path), "", f"cannot read: {exc.strerror}") from None

    def describe(self, path: str) -> str:
        return str(Path(self.root) / path)


@dataclass(frozen=True)
class GitSource:
    """Pins from a git revision (the blob of ``REV:path``, no filter applied)."""

    repo: Path
    rev: str

    def read(self, path: str) -> bytes | None:
        from patchgate import git  # noqa: PLC0415 - only this source needs it; the CLI starts faster

        try:
            return git.read_blob(self.repo, self.rev, path, limit=MAX_PIN_BYTES)
        except PatchgateError as exc:
            raise PinError(self.describe(path), "", f"cannot read from git: {exc}") from None

    def describe(self, path: str) -> str:
        return f"{self.rev}:{path}"


@dataclass(frozen=True, kw_only=True)
class ProjectConfig:
    """``[tool.patchgate]`` of the target's pyproject.toml, or ``patchgate.toml``."""

    pins_dir: str = "pins"
    fixture_root: str = "fixtures"
    oracle_paths: tuple[str, ...] = ("tests/", "properties/", "pins/")
    exclude: tuple[str, ...] = ()
    #: Where production modules live, ``""`` being the repository root. Empty: not configured,
    #: which means ``src/`` when the base tree has that directory, else the root.
    source_roots: tuple[str, ...] = ()
    #: A check with the mutation stage off (``--mutants 0``) may be admitted only when the
    #: reviewed base configuration says so.
    allow_unmutated: bool = False
    #: ``[tool.patchgate.environment]``: the suite's own environment (None: the executor's).
    environment: EnvironmentConfig | None = None
    #: A check run with ``--judge off`` (one process: the patched code shares it with pytest and
    #: the reporter) may be admitted only when the reviewed base configuration says so.
    allow_judge_off: bool = False
    #: The mutation score (killed / (killed + survived) over the symbol's changed-line mutants)
    #: a covering property needs beside one kill to credit a symbol: a number in (0, 1].
    min_mutation_score: float = 0.5
    #: The CI files that run the gate (workflows, pipeline definitions, a directory with a
    #: trailing ``/``): pins like the gate's configuration, so a patch editing one is ``R8``.
    ci_files: tuple[str, ...] = ()

    def roots(self, *, has_src: bool) -> tuple[str, ...]:
        """The source roots in effect (``has_src``: the base tree has a ``src/`` directory)."""
        if self.source_roots:
            return self.source_roots
        return ("src",) if has_src else ("",)

    @property
    def pin_paths(self) -> tuple[str, str, str]:
        """Paths of fixtures.json, properties.json and flakes.json."""
        d = self.pins_dir.rstrip("/")
        return (f"{d}/fixtures.json", f"{d}/properties.json", f"{d}/flakes.json")


def load_config(source: PinSource) -> ProjectConfig:
    """Read the project configuration from ``patchgate.toml`` or ``pyproject.toml``.

    Every problem at once (PinErrors if several): each unknown setting, each bad value.
    """
    name = "patchgate.toml"
    raw = source.read(name)
    if raw is None:
        name = "pyproject.toml"
        raw = source.read(name)
    where = source.describe(name)
    doc = _toml(raw, where) if raw is not None else {}
    tool = doc.get("tool", {})
    if not isinstance(tool, dict):
        raise PinError(where, "tool", "expected a table")
    table = tool.get("patchgate", {})
    if name == "patchgate.toml" and not table:  # a patchgate.toml may hold the settings at its top
        table = {k: v for k, v in doc.items() if k != "tool"}
    if not isinstance(table, dict):
        raise PinError(where, "tool.patchgate", "expected a table")
    problems = _Problems()
    known = {
        "pins_dir",
        "fixture_root",
        "oracle_paths",
        "exclude",
        "source_roots",
        "allow_unmutated",
        "environment",
        "allow_judge_off",
        "min_mutation_score",
        "ci_files",
    }
    for key in table:
        if key not in known:
            problems.errors.append(PinError(where, f"tool.patchgate.{key}", "unknown setting"))
    kwargs: dict[str, Any] = {}
    for key in ("pins_dir", "fixture_root"):
        if key in table:
            with problems.check():
                kwargs[key] = _safe_path(table[key], where, f"tool.patchgate.{key}")
    for key in ("oracle_paths", "exclude"):
        if key in table:
            with problems.check():
                kwargs[key] = _paths(table[key], where, f"tool.patchgate.{key}")
    if "source_roots" in table:
        with problems.check():
            kwargs["source_roots"] = _source_roots(table["source_roots"], where)
    if "environment" in table:
        with problems.check():
            kwargs["environment"] = parse_environment(table["environment"], where)
    for key in ("allow_unmutated", "allow_judge_off"):
        if key not in table:
            continue
        if isinstance(table[key], bool):
            kwargs[key] = table[key]
        else:
            problems.errors.append(
                PinError(where, f"tool.patchgate.{key}", "expected true or false")
            )
    if "min_mutation_score" in table:
        with problems.check():
            kwargs["min_mutation_score"] = _score(table["min_mutation_score"], where)
    if "ci_files" in table:
        with problems.check():
            kwargs["ci_files"] = _ci_files(table["ci_files"], where)
    problems.raise_any()
    return ProjectConfig(**kwargs)


def _score(val: object, where: str) -> float:
    """``min_mutation_score``: a number in (0, 1] (an integer 1 reads as 1.0; a boolean is no
    number here)."""
    if isinstance(val, bool) or not isinstance(val, int | float) or not 0 < val <= 1:
        raise PinError(where, "tool.patchgate.min_mutation_score", "expected a number in (0, 1]")
    return float(val)


def _ci_files(val: object, where: str) -> tuple[str, ...]:
    """``ci_files``: safe relative paths of files, or of directories written with a trailing
    ``/`` (the slash is kept: it says "everything under")."""
    fieldname = "tool.patchgate.ci_files"
    if not isinstance(val, list) or not all(isinstance(v, str) and v for v in val):
        raise PinError(where, fieldname, "expected a list of paths")
    out = []
    for v in val:
        path = _safe_path(v, where, fieldname)
        out.append(path + "/" if str(v).endswith("/") else path)
    return tuple(dict.fromkeys(out))


def _paths(val: object, where: str, fieldname: str) -> tuple[str, ...]:
    if not isinstance(val, list) or not all(isinstance(v, str) and v for v in val):
        raise PinError(where, fieldname, "expected a list of paths")
    return tuple(val)


def _source_roots(val: object, where: str) -> tuple[str, ...]:
    """``source_roots``: a non-empty list of safe directory paths; ``"."`` is the repo root."""
    fieldname = "tool.patchgate.source_roots"
    if not isinstance(val, list) or not val or not all(isinstance(v, str) and v for v in val):
        raise PinError(where, fieldname, "expected a non-empty list of directory paths")
    roots = tuple("" if v.rstrip("/") == "." else _safe_path(v, where, fieldname) for v in val)
    if len(set(roots)) != len(roots):
        raise PinError(where, fieldname, "duplicate source root")
    return roots


def _toml(raw: bytes, where: str) -> dict[str, Any]:
    import tomllib  # noqa: PLC0415 - only a tree with a TOML config pays for the parser

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PinError(where, "", f"not valid TOML: {exc}") from None


def _safe_path(value: object, where: str, fieldname: str) -> str:
    if not isinstance(value, str):
        raise PinError(where, fieldname, "expected a string path")
    try:
        return validate_path(value.rstrip("/"))
    except UnsafePathError as exc:
        raise PinError(where, fieldname, exc.why) from None


def command_allowed(argv: Sequence[str], allowed: Sequence[Sequence[str]]) -> bool:
    """True when some allowed command is a prefix of ``argv`` (docs/reference/pins.md)."""
    return any(len(a) <= len(argv) and tuple(argv[: len(a)]) == tuple(a) for a in allowed)


def node_id_of(command: Sequence[str]) -> str | None:
    """The pytest node id argument of ``command`` (the first word containing ``::`` that is
    neither an option nor an option's value, as pytest parses it), else None."""
    return next((arg for arg in positionals(command) if "::" in arg), None)


def _node_id(command: Sequence[str], where: str, fieldname: str) -> None:
    """A pytest node id of a property names a safe test file of the tree and a test name."""
    node_id = node_id_of(command)
    if node_id is None:
        return
    test_file, _, name = node_id.partition("::")
    while test_file.startswith("./"):  # pytest reads ``./tests/x.py`` as ``tests/x.py``
        test_file = test_file[2:]
    try:
        validate_path(test_file)
    except UnsafePathError as exc:
        raise PinError(where, fieldname, f"node id {node_id!r}: its file {exc.why}") from None
    if not name or any(not part for part in name.split("::")):
        raise PinError(where, fieldname, f"node id {node_id!r}: no test name after '::'")


@dataclass(frozen=True, kw_only=True)
class FixturePin:
    """``pins/fixtures.json``: pinned fixture hashes, seed, clock bound and allowed commands."""

    pin_id: str
    algorithm: str
    files: dict[str, str]
    seed: int
    clock_bound_ms: int
    allowed_commands: tuple[tuple[str, ...], ...]

    def allows(self, argv: Sequence[str]) -> bool:
        """True when ``argv`` is allowed by one of ``allowed_commands``."""
        return command_allowed(argv, self.allowed_commands)

    def manifest(self, live: dict[str, FileEntry]) -> Manifest:
        """The manifest of these pins with the ``live`` file entries (hashes must already match)."""
        return Manifest(
            pin_id=self.pin_id,
            algorithm=self.algorithm,
            files=dict(live),
            seed=self.seed,
            clock_bound_ms=self.clock_bound_ms,
            allowed_commands=self.allowed_commands,
        )


@dataclass(frozen=True, kw_only=True)
class PropertyPin:
    """One entry of ``pins/properties.json``."""

    id: str
    claim: str
    property_class: str
    covers: tuple[str, ...]
    command: tuple[str, ...]

    @property
    def eligible(self) -> bool:
        """Whether this class may earn credit or open a freeze."""
        return self.property_class in ELIGIBLE_CLASSES


@dataclass(frozen=True, kw_only=True)
class Flake:
    """One pre-listed flake of ``pins/flakes.json``."""

    id: str
    signature: str
    opened_on: dt.date
    expires_on: dt.date
    tests: tuple[str, ...]
    #: optional: a citation or observation is valid only before this date
    review_by: dt.date | None = None
    #: optional: the revision in which a person accepted the flake (recorded, never a condition)
    accepted_in: str = ""

    def valid_at(self, clock: dt.datetime) -> bool:
        """Unexpired: ``expires_on`` (and ``review_by``, when set) is later than the review
        clock's date."""
        today = clock.astimezone(dt.UTC).date()
        return self.expires_on > today and (self.review_by is None or self.review_by > today)

    def open_at(self, clock: dt.datetime) -> bool:
        """The review clock's date lies in ``[opened_on, expires_on)`` and before ``review_by``."""
        return self.opened_on <= clock.astimezone(dt.UTC).date() and self.valid_at(clock)


@dataclass(frozen=True, kw_only=True)
class PinSet:
    """All pins of one revision."""

    config: ProjectConfig
    fixtures: FixturePin
    properties: tuple[PropertyPin, ...]
    flakes: tuple[Flake, ...] = field(default_factory=tuple)

    def flake(self, flake_id: str) -> Flake | None:
        """The flake with this id, if pre-listed."""
        return next((f for f in self.flakes if f.id == flake_id), None)


def _json(raw: bytes, where: str) -> dict[str, Any]:
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise PinError(where, "", f"not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise PinError(where, "", "expected a JSON object at the top level")
    return obj


def _str(obj: dict[str, Any], key: str, where: str, prefix: str = "") -> str:
    val = obj.get(key)
    if not isinstance(val, str) or not val:
        raise PinError(where, prefix + key, "required, a non-empty string")
    return val


def _int(obj: dict[str, Any], key: str, where: str, lo: int, hi: int) -> int:
    val = obj.get(key)
    if isinstance(val, bool) or not isinstance(val, int) or not lo <= val <= hi:
        raise PinError(where, key, f"required, an integer from {lo} to {hi}")
    return val


def _argv(val: object, where: str, fieldname: str) -> tuple[str, ...]:
    if not isinstance(val, list) or not val or not all(isinstance(a, str) and a for a in val):
        raise PinError(where, fieldname, "expected a non-empty argv list of non-empty strings")
    if any("\x00" in a for a in val):
        raise PinError(where, fieldname, "an argument contains NUL")
    return tuple(val)


class _Problems:
    """Collects the PinErrors of independent checks, so that every problem is reported at once.

    ``with problems.check():`` swallows a PinError (a PinErrors adds each of its errors);
    :meth:`raise_any` raises the one error, or a :class:`PinErrors` of several.
    """

    def __init__(self) -> None:
        self.errors: list[PinError] = []

    @contextmanager
    def check(self) -> Iterator[None]:
        try:
            yield
        except PinErrors as exc:
            self.errors.extend(exc.errors)
        except PinError as exc:
            self.errors.append(exc)

    def raise_any(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise PinErrors(self.errors)


def _pin_id(obj: dict[str, Any], key: str, where: str, prefix: str = "") -> str:
    val = _str(obj, key, where, prefix)
    if not _ID.fullmatch(val):
        raise PinError(where, prefix + key, "letters, digits and . _ : - only, at most 128")
    return val


def _algorithm(obj: dict[str, Any], where: str) -> str:
    algorithm = _str(obj, "algorithm", where)
    if algorithm != "sha256":
        raise PinError(where, "algorithm", f"unsupported {algorithm!r}; only 'sha256'")
    return algorithm


def _fixture_files(obj: dict[str, Any], where: str, fixture_root: str) -> dict[str, str]:
    files_obj = obj.get("files")
    if not isinstance(files_obj, dict):
        raise PinError(where, "files", "required, an object of path -> sha256 hex")
    problems = _Problems()
    files: dict[str, str] = {}
    for path, digest in files_obj.items():
        with problems.check():
            files[path] = _fixture_file(path, digest, where, fixture_root)
    problems.raise_any()
    return files


def _fixture_file(path: str, digest: object, where: str, fixture_root: str) -> str:
    try:
        validate_path(path)
    except UnsafePathError as exc:
        raise PinError(where, f"files[{path!r}]", exc.why) from None
    if not path.startswith(fixture_root.rstrip("/") + "/"):
        raise PinError(where, f"files[{path!r}]", f"not under the fixture root {fixture_root!r}")
    if not isinstance(digest, str) or not SHA256_HEX.fullmatch(digest):
        raise PinError(where, f"files[{path!r}]", "expected 64 lowercase hex characters")
    return digest


def _allowed_commands(obj: dict[str, Any], where: str) -> tuple[tuple[str, ...], ...]:
    cmds = obj.get("allowed_commands")
    if not isinstance(cmds, list) or not cmds:
        raise PinError(where, "allowed_commands", "required, a non-empty list of argv lists")
    allowed = tuple(_argv(c, where, f"allowed_commands[{i}]") for i, c in enumerate(cmds))
    if len(set(allowed)) != len(allowed):
        raise PinError(where, "allowed_commands", "duplicate command")
    return allowed


def parse_fixture_pin(raw: bytes, where: str, fixture_root: str = "fixtures") -> FixturePin:
    """Parse and validate ``pins/fixtures.json``; every problem at once (PinErrors if several)."""
    obj = _json(raw, where)
    problems = _Problems()
    pin_id = algorithm = ""
    files: dict[str, str] = {}
    seed = bound = 0
    allowed: tuple[tuple[str, ...], ...] = ()
    with problems.check():
        pin_id = _pin_id(obj, "pin_id", where)
    with problems.check():
        algorithm = _algorithm(obj, where)
    with problems.check():
        files = _fixture_files(obj, where, fixture_root)
    with problems.check():
        seed = _int(obj, "seed", where, 0, 2**32 - 1)
    with problems.check():
        bound = _int(obj, "clock_bound_ms", where, 1, 24 * 3600 * 1000)
    with problems.check():
        allowed = _allowed_commands(obj, where)
    problems.raise_any()
    return FixturePin(
        pin_id=pin_id,
        algorithm=algorithm,
        files=files,
        seed=seed,
        clock_bound_ms=bound,
        allowed_commands=allowed,
    )


def _property(
    item: object, i: int, where: str, fixtures: FixturePin | None, seen: set[str]
) -> PropertyPin:
    """One entry of properties.json; every problem of the entry at once."""
    if not isinstance(item, dict):
        raise PinError(where, f"properties[{i}]", "expected an object")
    pre = f"properties[{i}]."
    problems = _Problems()
    pid = cls = claim = ""
    covers: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    with problems.check():
        pid = _pin_id(item, "id", where, pre)
        if pid in seen:
            raise PinError(where, pre + "id", f"duplicate property id {pid!r}")
        seen.add(pid)
    with problems.check():
        cls = _str(item, "class", where, pre)
        if cls not in PROPERTY_CLASSES:
            raise PinError(
                where, pre + "class", f"unknown class {cls!r}; one of {PROPERTY_CLASSES}"
            )
    with problems.check():
        raw_covers = item.get("covers")
        if not isinstance(raw_covers, list) or not all(
            isinstance(c, str) and c for c in raw_covers
        ):
            raise PinError(where, pre + "covers", "required, a list of qualified symbol names")
        covers = tuple(raw_covers)
    with problems.check():
        command = _argv(item.get("command"), where, pre + "command")
        if fixtures is not None and not fixtures.allows(command):
            raise PinError(
                where, pre + "command", "not allowed by allowed_commands of the fixture pin"
            )
    with problems.check():
        _node_id(command, where, pre + "command")
    with problems.check():
        claim = item.get("claim", "")
        if not isinstance(claim, str):
            raise PinError(where, pre + "claim", "expected a string")
    problems.raise_any()
    return PropertyPin(id=pid, claim=claim, property_class=cls, covers=covers, command=command)


def parse_properties(
    raw: bytes, where: str, fixtures: FixturePin | None
) -> tuple[PropertyPin, ...]:
    """Parse and validate ``pins/properties.json`` against the fixture pin's allowed commands.

    Every problem at once (PinErrors if several). ``fixtures`` None (the fixture pin is itself
    invalid): the allowed-command check is left out, every other check still runs.
    """
    obj = _json(raw, where)
    items = obj.get("properties")
    if not isinstance(items, list):
        raise PinError(where, "properties", "required, a list")
    problems = _Problems()
    out: list[PropertyPin] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        with problems.check():
            out.append(_property(item, i, where, fixtures, seen))
    problems.raise_any()
    return tuple(out)


def _date(item: dict[str, Any], key: str, where: str, pre: str) -> dt.date:
    val = item.get(key)
    if not isinstance(val, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", val):
        raise PinError(where, pre + key, "required, a date YYYY-MM-DD")
    try:
        return dt.date.fromisoformat(val)
    except ValueError:
        raise PinError(where, pre + key, f"not a real date: {val!r}") from None


def _flake(item: object, i: int, where: str, seen: set[str]) -> Flake:
    """One entry of flakes.json; every problem of the entry at once."""
    if not isinstance(item, dict):
        raise PinError(where, f"flakes[{i}]", "expected an object")
    pre = f"flakes[{i}]."
    problems = _Problems()
    fid = signature = ""
    opened = expires = dt.date.min
    tests: tuple[str, ...] = ()
    with problems.check():
        fid = _str(item, "id", where, pre)
        if fid in seen:
            raise PinError(where, pre + "id", f"duplicate flake id {fid!r}")
        seen.add(fid)
    with problems.check():
        opened = _date(item, "opened_on", where, pre)
    with problems.check():
        expires = _date(item, "expires_on", where, pre)
        if opened != dt.date.min and expires < opened:
            raise PinError(where, pre + "expires_on", "earlier than opened_on")
    with problems.check():
        raw_tests = item.get("tests")
        if (
            not isinstance(raw_tests, list)
            or not raw_tests
            or not all(isinstance(t, str) and t for t in raw_tests)
        ):
            raise PinError(where, pre + "tests", "required, a non-empty list of test ids")
        tests = tuple(raw_tests)
    with problems.check():
        signature = _str(item, "signature", where, pre)
    review_by: dt.date | None = None
    accepted_in = ""
    if "review_by" in item:
        with problems.check():
            review_by = _date(item, "review_by", where, pre)
            if opened != dt.date.min and review_by < opened:
                raise PinError(where, pre + "review_by", "earlier than opened_on")
    if "accepted_in" in item:
        with problems.check():
            accepted_in = _str(item, "accepted_in", where, pre)
            if len(accepted_in) > 200 or any(c.isspace() for c in accepted_in):
                raise PinError(
                    where, pre + "accepted_in", "a revision: at most 200 characters, no spaces"
                )
    problems.raise_any()
    return Flake(
        id=fid,
        signature=signature,
        opened_on=opened,
        expires_on=expires,
        tests=tests,
        review_by=review_by,
        accepted_in=accepted_in,
    )


def parse_flakes(raw: bytes, where: str) -> tuple[Flake, ...]:
    """Parse and validate ``pins/flakes.json``; every problem at once (PinErrors if several)."""
    obj = _json(raw, where)
    items = obj.get("flakes")
    if not isinstance(items, list):
        raise PinError(where, "flakes", "required, a list")
    problems = _Problems()
    out: list[Flake] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        with problems.check():
            out.append(_flake(item, i, where, seen))
    problems.raise_any()
    return tuple(out)


def _required(source: PinSource, path: str) -> bytes:
    raw = source.read(path)
    if raw is None:
        raise PinError(source.describe(path), "", "missing")
    return raw


def load_pins(source: PinSource, config: ProjectConfig | None = None) -> PinSet:
    """Load all three pin files (flakes.json is optional: no flakes).

    Every problem of the three files at once (PinErrors if several): a broken fixture pin does not
    hide a broken property pin. An invalid configuration stops here (it says where the pins are).
    """
    config = config or load_config(source)
    fx_path, prop_path, flake_path = config.pin_paths
    problems = _Problems()
    fixtures: FixturePin | None = None
    properties: tuple[PropertyPin, ...] = ()
    flakes: tuple[Flake, ...] = ()
    with problems.check():
        raw = _required(source, fx_path)
        fixtures = parse_fixture_pin(raw, source.describe(fx_path), config.fixture_root)
    with problems.check():
        raw = _required(source, prop_path)
        properties = parse_properties(raw, source.describe(prop_path), fixtures)
    with problems.check():
        raw_flakes = source.read(flake_path)
        if raw_flakes is not None:
            flakes = parse_flakes(raw_flakes, source.describe(flake_path))
    if config.environment is not None:
        with problems.check():
            lock = config.environment.requirements
            try:
                parse_lock(_required(source, lock).decode("utf-8"), source.describe(lock))
            except UnicodeDecodeError:
                raise PinError(source.describe(lock), "", "not UTF-8") from None
    problems.raise_any()
    if fixtures is None:  # unreachable: raise_any raised the fixture pin's error
        raise PinError(source.describe(fx_path), "", "missing")
    return PinSet(config=config, fixtures=fixtures, properties=properties, flakes=flakes)
