"""The reference pages under docs/reference/ agree with the code: schemas, the receipt, the digest.

Every pin file under ``examples/`` validates against its JSON Schema; each broken variant is refused
by the schema *and* by the parser of ``patchgate.pins`` (the schemas follow the code); the rules
the pages say only the parser checks are exactly those; the receipt example on receipt.md
validates; the canonical bytes printed on digest.md hash to the test vector.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from client.verdict.receipt import ReceiptFacts, build_receipt, receipt_problems
from patchgate.digest import FileEntry, Manifest, canonical_bytes
from patchgate.errors import PinError
from patchgate.ledgers import Receipt
from patchgate.pins import FixturePin, parse_fixture_pin, parse_flakes, parse_properties

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
SCHEMAS = ROOT / "patchgate" / "schema"  # package data; the reference pages link it
PIN_KINDS = ("fixtures", "properties", "flakes")
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
H = "a" * 64
DROP = object()  # a variant that removes the field
VECTOR = "6ea8f3fe7ff21bd234d472a92daa33697534e140f1426d7981174b0181b87302"


def _validator(kind: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


VALIDATORS = {kind: _validator(kind) for kind in (*PIN_KINDS, "receipt")}
EXAMPLE_FIXTURES = parse_fixture_pin(
    (ROOT / "examples" / "billing" / "pins" / "fixtures.json").read_bytes(), "fixtures.json"
)


def _schema_accepts(kind: str, obj: object) -> bool:
    return VALIDATORS[kind].is_valid(obj)


def _parser_accepts(kind: str, obj: object, fixtures: FixturePin = EXAMPLE_FIXTURES) -> bool:
    raw = json.dumps(obj).encode()
    try:
        if kind == "fixtures":
            parse_fixture_pin(raw, "fixtures.json")
        elif kind == "properties":
            parse_properties(raw, "properties.json", fixtures)
        else:
            parse_flakes(raw, "flakes.json")
    except PinError:
        return False
    return True


def _fixtures() -> dict[str, Any]:
    return {
        "pin_id": "fixpin-a",
        "algorithm": "sha256",
        "files": {"fixtures/a.json": H},
        "seed": 7,
        "clock_bound_ms": 30000,
        "allowed_commands": [PYTEST],
    }


def _properties() -> dict[str, Any]:
    return {
        "properties": [
            {
                "id": "billing.x",
                "claim": "c",
                "class": "pure_fn",
                "covers": ["billing.x"],
                "command": [*PYTEST, "properties/test_x.py::test_x"],
            }
        ]
    }


def _flakes() -> dict[str, Any]:
    return {
        "flakes": [
            {
                "id": "FLK-1",
                "signature": "TimeoutError",
                "opened_on": "2026-09-02",
                "expires_on": "2026-10-16",
                "tests": ["tests/test_a.py::test_a"],
            }
        ]
    }


BASES = {"fixtures": _fixtures, "properties": _properties, "flakes": _flakes}


def _variant(kind: str, path: tuple[str | int, ...], value: object) -> dict[str, Any]:
    """The valid base pin of ``kind`` with the field at ``path`` set to ``value`` (or dropped)."""
    obj = BASES[kind]()
    target: Any = obj
    for key in path[:-1]:
        target = target[key]
    if value is DROP:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return obj


@pytest.mark.parametrize("kind", [*PIN_KINDS, "receipt"])
def test_schema_is_valid_draft_2020_12(kind: str) -> None:
    """Each schema file is itself a valid draft 2020-12 schema."""
    schema = json.loads((SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def _example_pins() -> list[Path]:
    return sorted((ROOT / "examples").glob("*/pins/*.json"))


def test_every_example_pin_file_is_found() -> None:
    """The examples hold all three pin files (so the parametrized test below is not empty)."""
    names = {p.name for p in _example_pins()}
    assert names >= {"fixtures.json", "properties.json", "flakes.json"}


@pytest.mark.parametrize("path", _example_pins(), ids=lambda p: str(p.relative_to(ROOT)))
def test_example_pin_validates_against_its_schema(path: Path) -> None:
    """Every pin file in examples/ validates against its schema and parses."""
    kind = path.stem
    obj = json.loads(path.read_text(encoding="utf-8"))
    errors = [e.message for e in VALIDATORS[kind].iter_errors(obj)]
    assert errors == []
    assert _parser_accepts(kind, obj)


@pytest.mark.parametrize("kind", PIN_KINDS)
def test_valid_base_pins_pass_both(kind: str) -> None:
    """The valid pins every broken variant starts from pass the schema and the parser."""
    assert _schema_accepts(kind, BASES[kind]())
    assert _parser_accepts(kind, BASES[kind]())


ACCEPTED = [
    ("fixtures", ("files",), {}),
    ("fixtures", ("files",), {"fixtures/.hidden/..b": H}),
    ("fixtures", ("seed",), 0),
    ("fixtures", ("seed",), 2**32 - 1),
    ("fixtures", ("clock_bound_ms",), 24 * 3600 * 1000),
    ("fixtures", ("allowed_commands",), [PYTEST, ["python", "-m", "pytest"]]),
    ("fixtures", ("pin_id",), "a" * 128),
    ("properties", ("properties",), []),
    ("properties", ("properties", 0, "claim"), DROP),
    ("properties", ("properties", 0, "covers"), []),
    ("properties", ("properties", 0, "class"), "external_probe"),
    ("flakes", ("flakes",), []),
    ("flakes", ("flakes", 0, "id"), "any id at all"),
    ("flakes", ("flakes", 0, "expires_on"), "2026-09-02"),
]


@pytest.mark.parametrize(("kind", "path", "value"), ACCEPTED)
def test_edge_variants_accepted_by_both(kind: str, path: tuple[Any, ...], value: object) -> None:
    """The schemas are not stricter than the parser on the edges the pages name."""
    obj = _variant(kind, path, value)
    assert _schema_accepts(kind, obj)
    assert _parser_accepts(kind, obj)


REFUSED = [
    ("fixtures", ("pin_id",), ""),
    ("fixtures", ("pin_id",), "bad id"),
    ("fixtures", ("pin_id",), "pin\n"),
    ("fixtures", ("pin_id",), "-leading-dash"),
    ("fixtures", ("pin_id",), "a" * 129),
    ("fixtures", ("pin_id",), DROP),
    ("fixtures", ("algorithm",), "sha512"),
    ("fixtures", ("algorithm",), DROP),
    ("fixtures", ("files",), ["fixtures/a.json"]),
    ("fixtures", ("files",), {"/fixtures/a.json": H}),
    ("fixtures", ("files",), {"fixtures/../a.json": H}),
    ("fixtures", ("files",), {"fixtures/./a.json": H}),
    ("fixtures", ("files",), {"fixtures//a.json": H}),
    ("fixtures", ("files",), {"fixtures/": H}),
    ("fixtures", ("files",), {"fixtures\\a.json": H}),
    ("fixtures", ("files",), {"fixtures/a\n.json": H}),
    ("fixtures", ("files",), {"fixtures/a\x00.json": H}),
    ("fixtures", ("files",), {"fixtures/a.json": "A" * 64}),
    ("fixtures", ("files",), {"fixtures/a.json": "a" * 63}),
    ("fixtures", ("files",), {"fixtures/a.json": H + "\n"}),
    ("fixtures", ("files",), {"fixtures/a.json": 5}),
    ("fixtures", ("seed",), -1),
    ("fixtures", ("seed",), 2**32),
    ("fixtures", ("seed",), True),
    ("fixtures", ("seed",), "7"),
    ("fixtures", ("seed",), DROP),
    ("fixtures", ("clock_bound_ms",), 0),
    ("fixtures", ("clock_bound_ms",), 24 * 3600 * 1000 + 1),
    ("fixtures", ("allowed_commands",), []),
    ("fixtures", ("allowed_commands",), [[]]),
    ("fixtures", ("allowed_commands",), [[""]]),
    ("fixtures", ("allowed_commands",), ["python -m pytest"]),
    ("fixtures", ("allowed_commands",), [PYTEST, PYTEST]),
    ("fixtures", ("allowed_commands",), [["python", "a\x00b"]]),
    ("fixtures", ("allowed_commands",), DROP),
    ("properties", ("properties",), DROP),
    ("properties", ("properties",), {"id": "x"}),
    ("properties", ("properties", 0), "billing.x"),
    ("properties", ("properties", 0, "id"), DROP),
    ("properties", ("properties", 0, "id"), "bad id"),
    ("properties", ("properties", 0, "class"), "fast"),
    ("properties", ("properties", 0, "class"), DROP),
    ("properties", ("properties", 0, "covers"), DROP),
    ("properties", ("properties", 0, "covers"), "billing.x"),
    ("properties", ("properties", 0, "covers"), [""]),
    ("properties", ("properties", 0, "command"), DROP),
    ("properties", ("properties", 0, "command"), "python -m pytest x.py"),
    ("properties", ("properties", 0, "command"), []),
    ("properties", ("properties", 0, "claim"), 5),
    ("flakes", ("flakes",), DROP),
    ("flakes", ("flakes", 0), "FLK-1"),
    ("flakes", ("flakes", 0, "id"), ""),
    ("flakes", ("flakes", 0, "signature"), ""),
    ("flakes", ("flakes", 0, "signature"), DROP),
    ("flakes", ("flakes", 0, "opened_on"), "2026-9-02"),
    ("flakes", ("flakes", 0, "opened_on"), "2026-02-30"),
    (
        "flakes",
        ("flakes", 0, "opened_on"),
        "\uff12\uff10\uff12\uff16-\uff10\uff19-\uff10\uff12",
    ),  # full-width digits
    ("flakes", ("flakes", 0, "opened_on"), 20260902),
    ("flakes", ("flakes", 0, "expires_on"), "2026-10-16\n"),
    ("flakes", ("flakes", 0, "expires_on"), "2026-10-16T00:00:00Z"),
    ("flakes", ("flakes", 0, "tests"), []),
    ("flakes", ("flakes", 0, "tests"), [""]),
    ("flakes", ("flakes", 0, "tests"), DROP),
]


@pytest.mark.parametrize(("kind", "path", "value"), REFUSED)
def test_broken_variant_refused_by_schema_and_parser(
    kind: str, path: tuple[Any, ...], value: object
) -> None:
    """Each broken pin is refused by its schema and by patchgate.pins alike."""
    obj = _variant(kind, path, value)
    assert not _schema_accepts(kind, obj)
    assert not _parser_accepts(kind, obj)


def _duplicate_property() -> dict[str, Any]:
    obj = _properties()
    obj["properties"].append(copy.deepcopy(obj["properties"][0]))
    return obj


def _duplicate_flake() -> dict[str, Any]:
    obj = _flakes()
    obj["flakes"].append(copy.deepcopy(obj["flakes"][0]))
    return obj


PARSER_ONLY = [
    ("fixtures", _variant("fixtures", ("files",), {"other/a.json": H}), "outside the root"),
    ("fixtures", _variant("fixtures", ("seed",), 7.0), "an integer written 7.0"),
    ("fixtures", _variant("fixtures", ("files",), {"fixtures/\ud800": H}), "not UTF-8"),
    ("properties", _duplicate_property(), "a duplicate id"),
    (
        "properties",
        _variant("properties", ("properties", 0, "command"), ["python", "x.py"]),
        "a command allowed_commands does not allow",
    ),
    ("flakes", _duplicate_flake(), "a duplicate id"),
    ("flakes", _variant("flakes", ("flakes", 0, "expires_on"), "2026-09-01"), "expires first"),
]


@pytest.mark.parametrize(
    ("kind", "obj"), [(k, o) for k, o, _ in PARSER_ONLY], ids=[w for _, _, w in PARSER_ONLY]
)
def test_rules_only_the_parser_checks(kind: str, obj: dict[str, Any]) -> None:
    """The rules pins.md marks "parser only" are exactly the ones JSON Schema cannot express."""
    assert _schema_accepts(kind, obj)
    assert not _parser_accepts(kind, obj)


_TRICKY = st.text(alphabet="aZ09._:-/ \\\n\x00é", max_size=12)


@given(_TRICKY)
def test_pin_id_schema_agrees_with_parser(pin_id: str) -> None:
    """For any string, the schema's pin_id pattern and the parser give the same answer."""
    obj = _variant("fixtures", ("pin_id",), pin_id)
    assert _schema_accepts("fixtures", obj) == _parser_accepts("fixtures", obj)


@given(_TRICKY)
def test_fixture_path_schema_agrees_with_parser(tail: str) -> None:
    """For any path under the fixture root, the schema's path pattern and the parser agree."""
    obj = _variant("fixtures", ("files",), {f"fixtures/{tail}": H})
    assert _schema_accepts("fixtures", obj) == _parser_accepts("fixtures", obj)


# --- the receipt --------------------------------------------------------------------------------


def _page_block(page: str, marker: str) -> str:
    """The fenced code block right after ``<!-- test: marker -->`` on a reference page."""
    text = (REFERENCE / page).read_text(encoding="utf-8")
    found = re.search(
        rf"<!-- test: {re.escape(marker)} -->\n```[a-z]*\n(.*?)^```$", text, re.S | re.M
    )
    assert found is not None, f"{page}: no code block marked {marker!r}"
    return found.group(1)


def _receipt_example() -> dict[str, Any]:
    obj = json.loads(_page_block("receipt.md", "receipt-v2"))
    assert isinstance(obj, dict)
    return obj


def test_receipt_example_on_the_page_validates() -> None:
    """The v2 example receipt printed on receipt.md is valid against receipt.schema.json."""
    errors = [e.message for e in VALIDATORS["receipt"].iter_errors(_receipt_example())]
    assert errors == []


def test_receipt_schema_names_every_receipt_field() -> None:
    """Every field of patchgate.ledgers.Receipt has a place in the schema (a new one needs it)."""
    schema = json.loads((SCHEMAS / "receipt.schema.json").read_text(encoding="utf-8"))
    names = {f.name for f in fields(Receipt)}
    assert names - set(schema["properties"]) == set()


def test_receipt_the_gate_builds_from_the_example_validates_and_is_consistent() -> None:
    """build_receipt on the page's example gives a v2 receipt the schema accepts, and the example
    agrees with itself by the gate's own rules (credits, coverage, codes, admit)."""
    example = _receipt_example()
    fields_in = {k: v for k, v in example.items() if k not in ("schema", "recorded_at")}
    receipt = build_receipt(ReceiptFacts(**fields_in))
    assert receipt.schema == example["schema"] == "patchgate/receipt/v2"
    errors = [e.message for e in VALIDATORS["receipt"].iter_errors(receipt.to_json())]
    assert errors == []
    assert receipt_problems(Receipt.from_json(example)) == []


RECEIPT_BROKEN = [
    ("schema", "patchgate/receipt/v1"),
    ("admit", "yes"),
    ("coverage", 1.5),
    ("credits", {"billing.prorate": 2}),
    ("rejection_codes", ["R10"]),
    ("rejection_codes", ["R1", "R1"]),
    ("posture", "admitted"),
    ("decision", "maybe"),
    ("fixture_status", "unknown"),
    ("fixture_digest", "A" * 64),
    ("patch_sha256", ""),
    ("transport", [{"kind": "timeout", "detail": ""}]),
    ("lanes", {"local": {}}),
    ("surprise", 1),
    ("uncredited", DROP),
    ("flake_observations", [{"flake_id": "FLK-1044"}]),
]


@pytest.mark.parametrize(("key", "value"), RECEIPT_BROKEN)
def test_receipt_schema_refuses_broken_receipt(key: str, value: object) -> None:
    """A receipt with one field wrong, missing or unknown is refused by the schema."""
    obj = _receipt_example()
    if value is DROP:
        del obj[key]
    else:
        obj[key] = value
    assert not VALIDATORS["receipt"].is_valid(obj)


# --- the digest ---------------------------------------------------------------------------------


def test_digest_page_canonical_bytes_hash_to_the_vector() -> None:
    """digest.md's canonical bytes are what the code computes and hash to the vector it prints."""
    block = _page_block("digest.md", "canonical-bytes").encode("utf-8")
    printed = _page_block("digest.md", "digest").strip()

    def entry(data: bytes) -> FileEntry:
        return FileEntry(hashlib.sha256(data).hexdigest(), len(data))

    manifest = Manifest(
        pin_id="vector",
        files={"fixtures/b.txt": entry(b"hello"), "fixtures/a.json": entry(b'{"x": 1}\n')},
        seed=7,
        clock_bound_ms=30000,
        allowed_commands=(
            ("python", "-m", "pytest", "-q"),
            ("python", "-m", "pytest", "-q", "-k", "prorate"),
        ),
    )
    assert block == canonical_bytes(manifest)
    assert hashlib.sha256(block).hexdigest() == printed == VECTOR


# --- links and pointers -------------------------------------------------------------------------

_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """A heading's anchor: lowercase, punctuation dropped, a hyphen for each space."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


_PAGES = sorted([*REFERENCE.glob("*.md"), ROOT / "docs" / "architecture.md", ROOT / "README.md"])


@pytest.mark.parametrize("page", _PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    """Every relative link of the reference pages, architecture.md and the README names a file
    (or folder) that exists, and every #anchor a heading of that file."""
    broken = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # an absolute URL
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        missing = not dest.exists()
        if missing or (anchor and (dest.is_dir() or anchor not in _anchors(dest))):
            broken.append(target)
    assert broken == []


def test_no_help_points_at_a_page_an_installed_copy_lacks() -> None:
    """Issue 24: ``--help`` pointed at docs/reference/*.md, which an installed package does not
    have; every command's help now points at ``patchgate explain`` or its own text instead, and
    ``check --help`` ends with that pointer."""
    from client.cli import build_parser  # noqa: PLC0415 - only this test needs the CLI

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    texts = {"patchgate": parser.format_help()}
    for name, command in sub.choices.items():  # type: ignore[union-attr]
        texts[name] = command.format_help()
        for action in command._actions:
            if action.dest in ("pin_command",) and action.choices:
                texts.update({f"{name} {k}": v.format_help() for k, v in action.choices.items()})
    pointing = {name: t for name, t in texts.items() if re.search(r"docs/|\.md\b", t)}
    assert pointing == {}
    tail = texts["check"].rstrip("\n").splitlines()[-2:]
    assert any("patchgate explain" in line for line in tail)


def test_the_reference_schema_folder_is_the_packaged_one() -> None:
    """docs/reference/schema/ (where a reader of the reference pages looks) is a link to the one
    packaged copy, never a second copy that could drift."""
    docs = ROOT / "docs" / "reference" / "schema"
    assert docs.is_symlink()
    assert docs.resolve() == SCHEMAS.resolve()
    assert sorted(p.name for p in docs.iterdir()) == sorted(p.name for p in SCHEMAS.iterdir())
