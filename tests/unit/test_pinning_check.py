"""``pin check``: schema, parser and ``covers`` problems of a tree, every one at once."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from client.cli import main
from client.pinning.check import NO_FIXTURES, check_tree, covers_problems, schema_problems
from client.pinning.names import SymbolNames, tree_symbols
from client.pinning.tree import WorkTree, open_tree
from patchgate.errors import UsageError
from patchgate.pins import ProjectConfig
from tests.unit._pinning_helpers import (
    TESTS,
    fixture_pin,
    git,
    make_library,
    prop,
    write,
    write_pins,
)


@pytest.fixture
def lib(tmp_path: Path) -> Path:
    root = make_library(tmp_path / "lib")
    write(root, {"pyproject.toml": "[tool.patchgate]\nsource_roots = ['src']\n"})
    return root


def _problems(root: Path) -> tuple[str, ...]:
    return check_tree(WorkTree(root)).problems


def test_valid_pins_have_no_problem(lib: Path) -> None:
    """Module, function, class, method and nested names are all symbols of the tree."""
    covers = [
        "textkit",
        "textkit.core",
        "textkit.core.slugify",
        "textkit.core.Counter",
        "textkit.core.Counter.count",
        "textkit.core.Counter.count.<locals>.inner",
    ]
    write_pins(lib, [prop("p.a", covers)], flakes={"flakes": []})
    report = check_tree(WorkTree(lib))
    assert report.ok, report.problems
    assert (report.properties, report.covers, report.flakes) == (1, 6, 0)


def test_a_covers_typo_names_the_nearest_symbol(lib: Path) -> None:
    """The regression of issue 16: a covers entry that names nothing is an error, not R1 later."""
    write_pins(lib, [prop("p.a", ["textkit.core.slugfy"])])
    (line,) = _problems(lib)
    assert "properties[0].covers[0]: 'textkit.core.slugfy' names no symbol" in line
    assert line.endswith("did you mean textkit.core.slugify?")


def test_names_are_from_the_source_root_not_the_repo_root(lib: Path) -> None:
    """``src.textkit.core`` is the path, not the module: refused with the module suggested."""
    write_pins(lib, [prop("p.a", ["src.textkit.core.slugify"])])
    (line,) = _problems(lib)
    assert "did you mean textkit.core.slugify?" in line


def test_a_re_export_is_not_a_symbol(lib: Path) -> None:
    """``textkit.slugify`` is imported into the package, defined elsewhere: exact covers refuse."""
    write_pins(lib, [prop("p.a", ["textkit.slugify"])])
    (line,) = _problems(lib)
    assert "'textkit.slugify' names no symbol" in line
    assert line.endswith("did you mean textkit.core.slugify?")


def test_tests_and_pins_are_not_production_symbols(lib: Path) -> None:
    """A covers entry naming a test function names no production symbol."""
    write(lib, {"src/textkit/test_core_inside.py": "def test_x():\n    pass\n"})
    write_pins(lib, [prop("p.a", ["tests.test_core.test_count", "textkit.test_core_inside"])])
    assert len(_problems(lib)) == 2


def test_every_problem_of_every_file_at_once(lib: Path) -> None:
    """Schema, parser-only and covers problems of three files, one line each, no duplicate."""
    fixtures = fixture_pin(seed=-1)
    props = [
        prop("p.a", ["textkit.core.slugfy"]),
        {**prop("p.a", ["textkit"]), "class": "fast"},
        {**prop("p.c", ["textkit"]), "command": ["sh", "-c", "true"]},
    ]
    flakes = {"flakes": [{"id": "FLK-1", "signature": "x", "opened_on": "2026-02-30"}]}
    write_pins(lib, props, fixtures=fixtures, flakes=flakes)
    problems = _problems(lib)
    joined = "\n".join(problems)
    assert "fixtures.json: seed:" in joined
    assert "properties[1].class: 'fast' is not one of" in joined
    assert "properties[1].id: duplicate property id 'p.a'" in joined  # parser only
    assert "properties[2].command: not allowed by allowed_commands" in joined  # parser only
    assert "did you mean textkit.core.slugify?" in joined
    assert "flakes[0].expires_on: required" in joined
    assert "flakes[0].tests: required" in joined
    assert len([p for p in problems if "properties[1].class" in p]) == 1, problems
    assert len(problems) == len(set(problems))


def test_missing_pin_files_are_problems_and_flakes_is_optional(tmp_path: Path) -> None:
    """Neither fixtures.json nor properties.json: both named; no flakes.json is fine."""
    problems = _problems(tmp_path)
    assert [p.rsplit(": ", 1)[1] for p in problems] == ["missing", "missing"]


def test_invalid_json_is_one_problem(lib: Path) -> None:
    """Undecodable JSON: the parser's one line, no schema noise."""
    write_pins(lib, [])
    (lib / "pins" / "properties.json").write_text("{not json")
    (line,) = _problems(lib)
    assert "not valid JSON" in line


def test_an_invalid_configuration_stops_the_check(lib: Path) -> None:
    """An unknown [tool.patchgate] key: the only problem (it says where the pins are)."""
    write(lib, {"pyproject.toml": "[tool.patchgate]\npins_dirr = 'x'\n"})
    assert _problems(lib) == (
        f"{lib / 'pyproject.toml'}: tool.patchgate.pins_dirr: unknown setting",
    )


def test_an_unparsable_module_is_named(lib: Path) -> None:
    """A covers entry inside a module that does not parse says so instead of guessing."""
    write(lib, {"src/textkit/broken.py": "def f(:\n"})
    write_pins(lib, [prop("p.a", ["textkit.broken", "textkit.broken.f"])])
    (line,) = _problems(lib)
    assert "'textkit.broken.f'" in line
    assert line.endswith("(src/textkit/broken.py does not parse)")


def _words_pin() -> dict[str, object]:
    """The fixture pin of the library's one fixture file, as committed."""
    data = b'{"words": ["a", "b"]}\n'
    return fixture_pin({"fixtures/words.json": hashlib.sha256(data).hexdigest()})


def test_rev_reads_pins_and_sources_of_that_revision(lib: Path) -> None:
    """A typo committed and fixed in the working tree: --rev still reports it, the tree does not."""
    write_pins(lib, [prop("p.a", ["textkit.core.slugfy"])], fixtures=_words_pin())
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "base")
    write_pins(lib, [prop("p.a", ["textkit.core.slugify"])], fixtures=_words_pin())
    assert _problems(lib) == ()
    (line,) = check_tree(open_tree(lib, "HEAD")).problems
    assert line.startswith("HEAD:pins/properties.json: properties[0].covers[0]")
    assert "of revision HEAD; did you mean textkit.core.slugify?" in line


def test_rev_fails_on_a_pinned_file_the_revision_lacks(lib: Path) -> None:
    """Issue 24: a gitignored fixture hashed into the pin is present in the working tree and absent
    from every commit: ``pin check --rev HEAD`` names it (and a changed and an unpinned file),
    where it said "pins OK" before; the working tree checks the same bytes."""
    write(lib, {".gitignore": "*.mo\n", "fixtures/de.mo": b"\x00catalog"})
    pin = _words_pin()
    pin["files"]["fixtures/de.mo"] = hashlib.sha256(b"\x00catalog").hexdigest()  # type: ignore[index]
    write_pins(lib, [], fixtures=pin)
    assert _problems(lib) == ()
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "base")
    (absent,) = check_tree(open_tree(lib, "HEAD")).problems
    assert absent == (
        "HEAD:pins/fixtures.json: files['fixtures/de.mo']: "
        "a pinned file revision HEAD does not hold"
    )
    write(lib, {"fixtures/words.json": "changed", "fixtures/new.json": "{}"})
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "edit")
    problems = check_tree(open_tree(lib, "HEAD")).problems
    assert len(problems) == 3
    assert "the pinned hash differs from the bytes in revision HEAD" in problems[1]
    assert (
        problems[2]
        == "fixtures/new.json: in revision HEAD but not pinned in HEAD:pins/fixtures.json"
    )
    (changed,) = _problems(lib)  # the working tree: the changed bytes (an extra file is not
    assert "fixtures/words.json" in changed  # committed yet, so not named there)


def test_rev_must_be_a_commit(lib: Path) -> None:
    """An unknown revision or an option-like one is a usage error."""
    git(lib, "init", "-q")
    with pytest.raises(UsageError, match="not a commit"):
        open_tree(lib, "no-such-rev")
    with pytest.raises(UsageError, match="not a revision"):
        open_tree(lib, "--all")


def test_schema_messages_are_one_readable_line() -> None:
    """A pattern error names the value and the rule in words, never the regex."""
    (error,) = schema_problems("properties", {"properties": [prop("bad id!", [])]}, "f.json")
    assert error.field == "properties[0].id"
    assert "(?!" not in str(error)
    assert "Letters, digits" in str(error)


def test_covers_problems_skip_non_strings() -> None:
    """Non-string entries are the schema's to report; only names are looked up."""
    obj = {"properties": [{"covers": [1, "", "a.b", "a.c"]}]}
    lines = covers_problems(obj, "f", SymbolNames(frozenset({"a", "a.b"})), "T")
    assert lines == ["f: properties[0].covers[3]: 'a.c' names no symbol of T; did you mean a.b?"]


def test_repo_root_layout_names_modules_from_the_root(tmp_path: Path) -> None:
    """Without src/, modules are named from the repository root; tests/ is not source."""
    write(tmp_path, {"pkg/mod.py": "def f(): pass\n", "tests/test_a.py": "def test_a(): pass\n"})
    names = tree_symbols(tmp_path, ProjectConfig())
    assert {"pkg.mod", "pkg.mod.f"} <= names.names
    assert not any(n.startswith("tests") for n in names.names)


def test_json_report_shape(lib: Path) -> None:
    """The JSON report lists the problems and the counts."""
    write_pins(lib, [prop("p.a", ["textkit"])])
    data = check_tree(WorkTree(lib)).to_json()
    warning, no_fixtures = data.pop("warnings")  # type: ignore[misc]
    assert warning.endswith(
        "p.a (tests/test_core.py::test_x): opaque, earns no credit: "
        "tests/test_core.py has no test function test_x."
    )
    assert no_fixtures == NO_FIXTURES.format(root="fixtures")
    assert json.loads(json.dumps(data)) == {
        "ok": True,
        "problems": [],
        "fixture_files": 0,
        "properties": 1,
        "covers": 1,
        "flakes": 0,
    }


# issue 23 item 4: a predicate that cannot fail does not enter the pin ----------------------------

CANNOT_FAIL = """\
from textkit.core import slugify


def test_true():
    slugify("a")
    assert True


def test_same():
    x = slugify("a")
    assert x == x


def test_constants():
    assert 1 < 2


def test_fixture():
    import json
    assert slugify("a b") == json.load(open("fixtures/words.json"))["words"]


def test_real():
    assert slugify("A b") == "a-b"
"""


@pytest.mark.parametrize("name", ["test_true", "test_same", "test_constants"])
def test_pin_check_refuses_a_tautology_with_78_naming_the_assertion(
    lib: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write(lib, {"tests/test_cannot.py": CANNOT_FAIL})
    node = f"tests/test_cannot.py::{name}"
    write_pins(lib, [prop("p.real", ["textkit.core.slugify"], "tests/test_cannot.py::test_real"),
                     prop("p.taut", ["textkit.core.slugify"], node)])  # fmt: skip
    assert main(["pin", "check", "--repo", str(lib)]) == 78
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "p.taut" in x]
    assert "cannot fail (tautology)" in line
    assert "line " in line  # the assertion, by its line
    assert node in line
    assert "p.real" not in err


def test_pin_check_warns_of_fixture_equality_and_opaque_tests_and_passes(
    lib: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(lib, {"tests/test_cannot.py": CANNOT_FAIL})
    write_pins(lib, [
        prop("p.fx", ["textkit.core.slugify"], "tests/test_cannot.py::test_fixture"),
        prop("p.none", ["textkit.core.slugify"], "tests/test_cannot.py::test_missing"),
        prop("p.real", ["textkit.core.slugify"], "tests/test_cannot.py::test_real"),
    ])  # fmt: skip
    assert main(["pin", "check", "--repo", str(lib)]) == 0
    captured = capsys.readouterr()
    warnings = [x for x in captured.err.splitlines() if x.startswith("patchgate: warning:")]
    assert len(warnings) == 3
    assert "pins no file under the fixture root 'fixtures'" in warnings[2]
    assert "p.fx" in warnings[0]
    assert "fixture_eq" in warnings[0]
    assert "p.none" in warnings[1]
    assert "opaque" in warnings[1]
    assert "pins OK" in captured.out


def test_pin_check_reads_review_by_and_accepted_in_of_the_flake_pin(lib: Path) -> None:
    """Issue 23: the flake pin's review_by and accepted_in are known fields, checked."""
    flake = {"id": "FLK-1", "signature": "E", "opened_on": "2026-09-02",
             "expires_on": "2026-10-16", "tests": ["tests/test_core.py::test_count"]}  # fmt: skip
    write_pins(lib, [], flakes={"flakes": [{**flake, "review_by": "2026-09-30",
                                            "accepted_in": "4f3dbb7"}]})  # fmt: skip
    assert check_tree(WorkTree(lib)).ok
    write_pins(lib, [], flakes={"flakes": [{**flake, "review_by": "2026-09-01",
                                            "accepted_in": "a b"}]})  # fmt: skip
    problems = check_tree(WorkTree(lib)).problems
    assert any("review_by" in p and "earlier than opened_on" in p for p in problems), problems
    assert any("accepted_in" in p for p in problems), problems


@pytest.mark.parametrize(
    ("node", "why"),
    [
        ("../../../../etc/passwd::test_x", "segment"),
        ("/etc/passwd::test_x", "absolute"),
        ("tests/test_\u202ecore.py::test_x", "control"),
        ("tests/test_core.py::", "no test name"),
    ],
)
def test_an_unsafe_node_id_is_a_pin_problem(lib: Path, node: str, why: str) -> None:
    """``pin check`` refuses the node id ``check`` could never run (issue 25): 78, named."""
    write_pins(lib, [prop("p.a", ["textkit.core.slugify"], node=node)])
    problems = _problems(lib)
    assert any("node id" in p and why in p for p in problems), problems


def test_an_unsafe_property_id_is_a_pin_problem(lib: Path) -> None:
    write_pins(lib, [prop("../p", ["textkit.core.slugify"])])
    assert any("properties[0].id" in p for p in _problems(lib)), _problems(lib)


def test_a_pin_of_no_fixture_files_is_a_warning_and_one_file_silences_it(
    lib: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """humanize has no fixtures/: ``init`` pinned 0 files and every check was then refused
    admission (fixture status not_applicable) with nothing said before; now both say it."""
    write_pins(lib, [prop("p.a", ["textkit"])])
    assert main(["pin", "check", "--repo", str(lib)]) == 0
    err = capsys.readouterr().err
    assert "a check of this base is never admitted" in err
    write(lib, {"fixtures/rates.json": "{}\n"})
    assert main(["pin", "fixtures", "--repo", str(lib)]) == 0
    capsys.readouterr()
    assert main(["pin", "check", "--repo", str(lib)]) == 0
    assert "never admitted" not in capsys.readouterr().err


def test_pin_check_names_a_byte_changing_attribute_on_a_scored_file(lib: Path) -> None:
    """Real libraries, second round: what check would refuse (78) is said by pin check first."""
    write_pins(lib, [prop("p.a", ["textkit.core.slugify"])], flakes={"flakes": []})
    (lib / ".gitattributes").write_text("*.py export-subst\n")
    problems = _problems(lib)
    assert any(".gitattributes (line 1) gives it export-subst" in p for p in problems), problems
    assert all(p.split(":")[0].endswith(".py") for p in problems), problems


def test_pin_check_accepts_attributes_on_files_the_gate_never_scores(lib: Path) -> None:
    """A changelog's eol=crlf and the docs' *.bat files (a real library's base) are fine."""
    write_pins(lib, [prop("p.a", ["textkit.core.slugify"])], flakes={"flakes": []})
    (lib / "CHANGES.rst").write_text("c\n")
    (lib / "docs").mkdir()
    (lib / "docs" / "make.bat").write_text("@echo off\n")
    (lib / ".gitattributes").write_text("CHANGES.rst eol=crlf\n*.bat text eol=crlf\n")
    assert _problems(lib) == ()


def test_a_property_under_no_oracle_path_is_a_problem_until_oracle_paths_name_it(
    lib: Path,
) -> None:
    """Real libraries, second round: tests in the package (textkit/tests/) with the default
    oracle paths are found by nothing; pin check says to add the directory, and once
    oracle_paths holds it the same pin is fine."""
    write(lib, {"src/textkit/tests/__init__.py": "", "src/textkit/tests/test_in.py": TESTS})
    node = "src/textkit/tests/test_in.py::test_slugify_idempotent"
    write_pins(lib, [prop("p.in", ["textkit.core.slugify"], node)], flakes={"flakes": []})
    (line,) = _problems(lib)
    assert "its test file src/textkit/tests/test_in.py is under no oracle path" in line
    pyproject = lib / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + 'oracle_paths = ["src/textkit/tests/", "tests/", "pins/"]\n'
    )
    assert _problems(lib) == ()
