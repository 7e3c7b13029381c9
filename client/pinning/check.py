"""``pin check``: every problem of a tree's pins at once — schema, parser and ``covers``.

Each pin file is checked three ways, and every problem is one line ``FILE: FIELD: why``:

1. against its JSON Schema (:mod:`patchgate.schemas`, the schemas of the reference pages);
2. by the parser of :mod:`patchgate.pins`, which also checks what a schema cannot say (paths under
   the fixture root, unique ids, commands allowed by the fixture pin). A parser error on a field
   the schema already named is left out: one problem, one line;
3. every ``covers`` entry against the symbol names of the same tree (:mod:`client.pinning.names`;
   exact: a module, a function or a class), with the nearest name when one is close;
4. every pinned property's test function by the gate's classifier
   (:mod:`client.analysis.classify.assertions`): a predicate that cannot fail (``tautology``,
   e.g. ``assert True``) does not enter the pin — a problem naming the assertion; ``fixture_eq``
   and ``opaque`` are warnings (listed, exit 0): they run, but earn no credit.
5. every pinned fixture file against the same tree: absent, unsafe or with other bytes is a
   problem (``pin check --rev HEAD`` of a pin that holds a gitignored file fails); in a revision,
   a file of the fixture root the pin does not list is one too. Each would be ``R2`` there.
6. every pinned property's test file under an oracle path (``oracle_paths``);
7. the tree's ``.gitattributes``: a byte-changing attribute on a file the gate scores, which
   ``check`` refuses (:mod:`client.gate.attributes`).

``properties.json`` and ``fixtures.json`` are required, ``flakes.json`` is optional. An invalid
``[tool.patchgate]`` stops the check (it says where the pins are): that one problem is returned.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from client.analysis.classify.assertions import classify_properties
from client.gate.attributes import attribute_problems
from client.pinning.names import SymbolNames, tree_symbols
from client.pinning.tree import RevTree, SourceTree, tree_files
from patchgate.digest import hash_files, scan_fixture_tree
from patchgate.errors import FixtureScanError, PinError, PinErrors
from patchgate.pins import (
    FixturePin,
    PinSet,
    ProjectConfig,
    PropertyPin,
    load_config,
    load_pins,
    node_id_of,
    parse_fixture_pin,
    parse_flakes,
    parse_properties,
)
from patchgate.schemas import load_schema

__all__ = [
    "WARNED_CLASSES",
    "PinReport",
    "attributes_problems",
    "check_tree",
    "covers_problems",
    "fixture_problems",
    "outside_oracle",
    "predicate_problems",
    "schema_problems",
]

_MAX_WHY = 200


@dataclass(frozen=True, kw_only=True)
class PinReport:
    """What ``pin check`` found: every problem (one line each) and what it counted."""

    problems: tuple[str, ...]
    #: Pinned properties that run but can earn no credit (fixture_eq, opaque): never an error.
    warnings: tuple[str, ...] = ()
    fixture_files: int = 0
    properties: int = 0
    covers: int = 0
    flakes: int = 0

    @property
    def ok(self) -> bool:
        """No problem at all."""
        return not self.problems

    def to_json(self) -> dict[str, object]:
        """The report as JSON."""
        return {
            "ok": self.ok,
            "problems": list(self.problems),
            "warnings": list(self.warnings),
            "fixture_files": self.fixture_files,
            "properties": self.properties,
            "covers": self.covers,
            "flakes": self.flakes,
        }


def _field(path: Iterable[object]) -> str:
    """``properties[0].covers[1]``; a key that is not a plain name as ``files['a/b.json']``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _schema_error(error: ValidationError) -> tuple[str, str]:
    """(field, why) of one schema error, readable: no regex, no dump of a whole object."""
    path = list(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    desc = str(schema.get("description", "")).rstrip(".")
    wanted, instance = error.validator_value, error.instance
    if error.validator == "required" and isinstance(wanted, list) and isinstance(instance, dict):
        missing = [k for k in wanted if k not in instance]
        name = next((k for k in missing if repr(k) in error.message), "?")
        return _field([*path, name]), "required (schema)"
    if error.validator == "pattern":
        why = f"{_short(error.instance)} does not have the required form"
        return _field(path), why + (f": {desc}" if desc else "") + " (schema)"
    if error.validator == "propertyNames":
        return _field(path), f"{_short(error.instance)}: a name has not the required form (schema)"
    return _field(path), f"{error.message[:_MAX_WHY]} (schema)"


def schema_problems(kind: str, obj: object, where: str) -> list[PinError]:
    """Every violation of the JSON Schema of ``kind`` by ``obj``, in document order."""
    validator = Draft202012Validator(
        load_schema(kind), format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    return [PinError(where, *_schema_error(e)) for e in errors]


def _overlaps(field: str, seen: set[str]) -> bool:
    return any(field == s or field.startswith((s + ".", s + "[")) for s in seen)


def _checked(
    kind: str, raw: bytes, where: str, parse: Callable[[bytes], object]
) -> tuple[list[str], Any]:
    """Schema and parser problems of one file (deduplicated), and what the parser returned."""
    problems: list[PinError] = []
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        obj = None  # the parser names the problem
    if isinstance(obj, dict):
        problems.extend(schema_problems(kind, obj, where))
    seen = {p.field for p in problems}
    parsed: object = None
    try:
        parsed = parse(raw)
    except PinError as exc:
        found = exc.errors if isinstance(exc, PinErrors) else (exc,)
        problems.extend(e for e in found if not (seen and _overlaps(e.field, seen)))
    return [str(p) for p in problems], parsed


def covers_problems(obj: object, where: str, symbols: SymbolNames, tree_name: str) -> list[str]:
    """A line for every ``covers`` entry of a properties object that names no symbol."""
    items = obj.get("properties") if isinstance(obj, dict) else None
    out: list[str] = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        covers = item.get("covers") if isinstance(item, dict) else None
        for j, entry in enumerate(covers if isinstance(covers, list) else []):
            if not isinstance(entry, str) or not entry:
                continue  # the schema names a non-string
            field = f"{where}: properties[{i}].covers[{j}]"
            if entry in symbols.ambiguous:
                out.append(
                    f"{field}: {entry!r} is ambiguous in {tree_name}: it names a module and a "
                    "symbol of another module (a covers entry names one thing)"
                )
                continue
            if entry in symbols:
                continue  # a known name is fine
            line = f"{field}: {entry!r} names no symbol of {tree_name}"
            if (path := symbols.unparsable_module_of(entry)) is not None:
                line += f" ({path} does not parse)"
            elif (near := symbols.suggest(entry)) is not None:
                line += f"; did you mean {near}?"
            out.append(line)
    return out


#: The warning of a pin with no fixture files (``pin check``, ``init``): such a base can be checked
#: but never admitted (fixture status ``not_applicable``, docs/architecture.md).
NO_FIXTURES = (
    "pins/fixtures.json pins no file under the fixture root {root!r}: a check of this base is "
    "never admitted (nothing says which bytes the suite saw); commit one fixture that can "
    "falsify a claim under it (or set fixture_root) and run patchgate pin fixtures"
)

#: Assertion classes that are warnings in ``pin check``: the property runs, never credits.
WARNED_CLASSES = ("fixture_eq", "opaque")


def predicate_problems(
    tree: SourceTree, properties: Sequence[PropertyPin], where: str
) -> tuple[list[str], list[str]]:
    """(problems, warnings) of the pinned properties' test functions in ``tree``: a tautology is a
    problem naming its assertion (a predicate that cannot fail does not enter the pin); a
    fixture equality or an opaque test is a warning."""
    with tree.checkout() as root:
        reports = classify_properties(root, [(p.id, p.command) for p in properties])
    problems: list[str] = []
    warnings: list[str] = []
    for i, prop in enumerate(properties):
        report = reports[prop.id]
        line = f"{where}: properties[{i}]: {prop.id} ({report.node_id or 'no node id'})"
        if report.assertion_class == "tautology":
            problems.append(f"{line}: its predicate cannot fail (tautology): {report.detail}")
        elif report.assertion_class in WARNED_CLASSES:
            warnings.append(f"{line}: {report.assertion_class}, earns no credit: {report.detail}")
    return problems, warnings


def _entries(raw: bytes | None, key: str) -> tuple[object, int]:
    """The JSON object of a pin file and how many entries its list ``key`` holds (0: unreadable)."""
    try:
        obj = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (UnicodeDecodeError, ValueError):
        return None, 0
    items = obj.get(key) if isinstance(obj, dict) else None
    return obj, len(items) if isinstance(items, list | dict) else 0


def _covers_count(obj: object) -> int:
    items = obj.get("properties") if isinstance(obj, dict) else None
    return sum(
        len(i["covers"])
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict) and isinstance(i.get("covers"), list)
    )


def _commands_only(obj: object) -> FixturePin | None:
    """A fixture pin with only the valid ``allowed_commands`` of an otherwise invalid one, so that
    the properties' commands are still checked (every problem at once)."""
    cmds = obj.get("allowed_commands") if isinstance(obj, dict) else None
    if not isinstance(cmds, list) or not cmds:
        return None
    if not all(
        isinstance(c, list) and c and all(isinstance(a, str) and a for a in c) for c in cmds
    ):
        return None
    allowed = tuple(tuple(c) for c in cmds)
    return FixturePin(
        pin_id="", algorithm="", files={}, seed=0, clock_bound_ms=1, allowed_commands=allowed
    )


def _symbols(tree: SourceTree, config: ProjectConfig, root: Path) -> SymbolNames:
    """The tree's names under the layout of its pins (of its configuration alone if invalid)."""
    pins: PinSet | None = None
    try:
        pins = load_pins(tree.pins, config)
    except PinError:
        pins = None
    return tree_symbols(root, config, pins)


def fixture_problems(
    root: Path, pin: FixturePin, fixture_root: str, where: str, tree: SourceTree
) -> list[str]:
    """A line for every pinned fixture file the tree lacks or holds with other bytes, and (in a
    revision, which is what ``check`` reads) every file of its fixture root the pin does not list:
    each would be ``R2`` on every check of that tree."""
    try:
        found = scan_fixture_tree(root, fixture_root, pin.files)
        extra: list[str] = []
    except FixtureScanError as exc:
        out = [
            f"{where}: files[{p!r}]: a pinned file {tree.name} does not hold" for p in exc.missing
        ]
        out += [f"{root_rel}: unsafe in {tree.name} (a link or not a regular file)"
                for root_rel in exc.unsafe]  # fmt: skip
        bad = set(exc.missing) | set(exc.unsafe)
        found = {p: str(root / p) for p in pin.files if p not in bad}
        extra = exc.extra if isinstance(tree, RevTree) else []
        problems = out
    else:
        problems = []
    live = hash_files({p: f for p, f in found.items() if p in pin.files})
    problems += [
        f"{where}: files[{p!r}]: the pinned hash differs from the bytes in {tree.name}"
        for p, entry in sorted(live.items())
        if entry.sha256 != pin.files[p]
    ]
    problems += [f"{p}: in {tree.name} but not pinned in {where}" for p in extra]
    return problems


def outside_oracle(
    properties: Sequence[PropertyPin], config: ProjectConfig, where: str
) -> list[str]:
    """A line for every pinned property whose test file lies under no oracle path: collection
    (``pin properties --from-pytest``) would not find it, so ``oracle_paths`` must name it."""
    out: list[str] = []
    prefixes = [p.strip("/") + "/" for p in config.oracle_paths if p.strip("/")]
    for i, prop in enumerate(properties):
        node = node_id_of(prop.command)
        if node is None:
            continue
        path = node.split("::", 1)[0].removeprefix("./")
        if not any(path.startswith(prefix) for prefix in prefixes):
            out.append(
                f"{where}: properties[{i}]: {prop.id}: its test file {path} is under no oracle "
                f"path ({', '.join(config.oracle_paths)}): add its directory to oracle_paths"
            )
    return out


def attributes_problems(root: Path, config: ProjectConfig) -> tuple[str, ...]:
    """What ``check`` would refuse of this tree's ``.gitattributes`` (exit 78): a byte-changing
    attribute on a scored file (:mod:`client.gate.attributes`), said before any check runs."""

    def read(path: str) -> bytes | None:
        try:
            return (root / path).read_bytes()
        except OSError:
            return None

    return attribute_problems(tree_files(root), read, config)


def check_tree(tree: SourceTree, symbols: SymbolNames | None = None) -> PinReport:
    """Check the pins of ``tree`` (``symbols``: its names, computed when not given)."""
    source = tree.pins
    try:
        config: ProjectConfig = load_config(source)
    except PinError as exc:
        return PinReport(problems=(str(exc),))
    fx_path, prop_path, flake_path = config.pin_paths
    problems: list[str] = []
    fixtures: FixturePin | None = None
    raw_fx, raw_props, raw_flakes = (source.read(p) for p in config.pin_paths)
    for raw, rel in ((raw_fx, fx_path), (raw_props, prop_path)):
        if raw is None:
            problems.append(f"{source.describe(rel)}: missing")
    if raw_fx is not None:
        where = source.describe(fx_path)
        found, fixtures = _checked(
            "fixtures", raw_fx, where, lambda r: parse_fixture_pin(r, where, config.fixture_root)
        )
        problems.extend(found)
        fixtures = fixtures or _commands_only(_entries(raw_fx, "files")[0])
    warnings: list[str] = []
    if raw_props is not None:
        where = source.describe(prop_path)
        found, parsed = _checked(
            "properties", raw_props, where, lambda r: parse_properties(r, where, fixtures)
        )
        problems.extend(found)
        if parsed:
            problems.extend(outside_oracle(parsed, config, where))
            cannot_fail, weak = predicate_problems(tree, parsed, where)
            problems.extend(cannot_fail)
            warnings.extend(weak)
    props_obj, n_props = _entries(raw_props, "properties")
    n_covers = _covers_count(props_obj)
    with tree.checkout() as root:
        problems.extend(attributes_problems(root, config))
        if isinstance(fixtures, FixturePin) and fixtures.pin_id:  # a pin that parsed
            where = source.describe(fx_path)
            problems.extend(fixture_problems(root, fixtures, config.fixture_root, where, tree))
        if n_covers:
            names = symbols if symbols is not None else _symbols(tree, config, root)
            problems.extend(
                covers_problems(props_obj, source.describe(prop_path), names, tree.name)
            )
    if raw_flakes is not None:
        where = source.describe(flake_path)
        found, _ = _checked("flakes", raw_flakes, where, lambda r: parse_flakes(r, where))
        problems.extend(found)
    if raw_fx is not None and not _entries(raw_fx, "files")[1]:
        warnings.append(NO_FIXTURES.format(root=config.fixture_root))
    return PinReport(
        problems=tuple(problems),
        warnings=tuple(warnings),
        fixture_files=_entries(raw_fx, "files")[1],
        properties=n_props,
        covers=n_covers,
        flakes=_entries(raw_flakes, "flakes")[1],
    )
