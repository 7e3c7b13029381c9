"""client.analysis.patch.roles: source, harness, oracle, pins and compiled code (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from client.analysis.patch.roles import Layout, layout_of, plugin_names, pyproject_roles
from patchgate.pins import DirSource, ProjectConfig, load_pins

ROOT = Layout(source_roots=("",), oracle_paths=("tests/", "properties/", "pins/"), pins_dir="pins")
SRC = Layout(
    source_roots=("src",),
    oracle_paths=("tests/", "properties/", "pins/"),
    pins_dir="pins",
    exclude=("gen/", "*_pb2.py"),
    property_files=frozenset({"qa/checks.py"}),
    plugins=frozenset({"helpers.plug"}),
)


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("src/textkit/core.py", "source"),
        ("src/textkit/__init__.py", "source"),
        ("src/textkit/test_core.py", "harness"),
        ("src/textkit/core_test.py", "harness"),
        ("src/textkit/conftest.py", "harness"),
        ("conftest.py", "harness"),
        ("deep/er/conftest.py", "harness"),
        ("pytest.ini", "harness"),
        ("sub/.pytest.ini", "harness"),
        ("pytest.toml", "harness"),
        ("tox.ini", "harness"),
        ("setup.cfg", "harness"),
        ("setup.py", "harness"),
        ("src/textkit.pth", "harness"),
        ("src/sitecustomize.py", "harness"),
        ("usercustomize.py", "harness"),
        ("evil-1.0.dist-info/entry_points.txt", "harness"),
        ("src/evil.egg-info/PKG-INFO", "harness"),
        ("qa/checks.py", "harness"),  # a pinned property's file outside the oracle paths
        ("helpers/plug.py", "harness"),  # a -p plugin module, from the repo root
        ("src/helpers/plug.py", "harness"),  # ... and from the source root
        ("src/helpers/__init__.py", "harness"),  # imported on the way to the plugin
        ("src/helpers/plug/inner.py", "harness"),
        ("src/helpers/other.py", "source"),
        ("textkit/__init__.py", "harness"),  # outside the source root: shadows src/textkit
        ("docs/conf.py", "harness"),
        ("tests/data.json", "oracle"),
        ("properties/test_p.py", "oracle"),
        ("pins/properties.json", "pin"),
        ("patchgate.toml", "pin"),
        ("sub/patchgate.toml", "pin"),
        ("pyproject.toml", "pyproject"),
        ("src/textkit/__pycache__/core.cpython-311.pyc", "compiled"),
        ("src/textkit/__pycache__/notes.txt", "compiled"),
        ("src/textkit/core.pyc", "compiled"),
        ("src/textkit/core.PYO", "compiled"),
        ("src/textkit/_speed.cpython-311-x86_64-linux-gnu.so", "compiled"),
        ("lib/libx.so.1", "compiled"),
        ("bin/x.dll", "compiled"),
        ("bin/x.dylib", "compiled"),
        ("src/textkit/_x.pyd", "compiled"),
        ("dist/textkit-1.0-py3-none-any.whl", "compiled"),
        ("dist/textkit.egg", "compiled"),
        ("vendor/lib.zip", "compiled"),
        ("tests/__pycache__/x.pyc", "compiled"),  # compiled wins over oracle: refused outright
        ("gen/api.py", "excluded"),
        ("src/textkit/api_pb2.py", "excluded"),
        ("src/textkit/core.pyi", "data"),
        ("README.md", "data"),
        ("src/textkit/data/words.txt", "data"),
    ],
)
def test_role_of_a_path(path: str, role: str) -> None:
    assert SRC.role(path) == role


def test_exclude_never_unmakes_harness() -> None:
    layout = Layout(source_roots=("",), oracle_paths=(), pins_dir="pins", exclude=("*",))
    assert layout.role("conftest.py") == "harness"
    assert layout.role("pkg/mod.py") == "excluded"


def test_root_layout_makes_every_other_py_production() -> None:
    assert ROOT.role("billing/orders.py") == "source"
    assert ROOT.role("setup.py") == "harness"
    assert ROOT.role("tests/helpers.py") == "oracle"


@pytest.mark.parametrize(
    ("layout", "path", "module"),
    [
        (SRC, "src/textkit/core.py", "textkit.core"),
        (SRC, "src/textkit/__init__.py", "textkit"),
        (ROOT, "pkg/__init__.py", "pkg"),
        (ROOT, "billing/orders.py", "billing.orders"),
        (ROOT, "top.py", "top"),
        (Layout(source_roots=("src", "src/vendored"), oracle_paths=(), pins_dir="pins"),
         "src/vendored/lib/a.py", "lib.a"),
    ],
)  # fmt: skip
def test_module_is_named_from_its_source_root(layout: Layout, path: str, module: str) -> None:
    assert layout.module(path) == module


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["python", "-m", "pytest", "-p", "no:cacheprovider"], set()),
        (["pytest", "-p", "evil", "-pother", "-p=third"], {"evil", "other", "third"}),
        (["pytest", "--pdb", "-q"], set()),
        (["pytest", "-p"], set()),
    ],
)
def test_plugin_names(argv: list[str], names: set[str]) -> None:
    assert plugin_names(argv) == names


@pytest.mark.parametrize(
    ("before", "after", "roles"),
    [
        (b"[tool.ruff]\nline-length = 99\n", b"[tool.ruff]\nline-length = 100\n", set()),
        (b"[tool.ruff]\nx = 1\n", b"# a comment\n[tool.ruff]\nx = 1\n", set()),
        (b"", b'[tool.pytest.ini_options]\naddopts = "-p evil"\n', {"harness"}),
        (b"[tool.patchgate]\noracle_paths = ['tests/']\n", b"[tool.patchgate]\n", {"pin"}),
        (b"[project]\nname = 'a'\n", b"[project]\nname = 'b'\n", {"harness"}),
        (b"", b"[project.entry-points.pytest11]\nevil = 'evil'\n", {"harness"}),
        (b"", b"[build-system]\nrequires = []\n", {"harness"}),
        (b"", b"[tool.coverage]\nx = 1\n", {"harness"}),  # not known to be inert
        (b"[tool.ruff]\n", b"[tool.ruff\n", {"harness"}),  # not TOML: pytest would fail on it
        (None, b"[tool.patchgate]\npins_dir = 'p'\n[tool.pytest]\n", {"pin", "harness"}),
    ],
)
def test_pyproject_change_is_judged_by_its_tables(
    before: bytes | None, after: bytes | None, roles: set[str]
) -> None:
    assert pyproject_roles(before, after) == roles


PINS = """{"pin_id": "p", "algorithm": "sha256", "files": {}, "seed": 1, "clock_bound_ms": 1000,
 "allowed_commands": [["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                      ["python", "-m", "pytest", "-p", "cmdplug"]]}"""
PROPS = """{"properties": [{"id": "a", "class": "pure_fn", "covers": ["m"],
 "command": ["python", "-m", "pytest", "-p", "cmdplug", "qa/prop_a.py::test_a"]}]}"""


def _repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"pins/fixtures.json": PINS, "pins/properties.json": PROPS, **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_layout_reads_plugins_and_test_patterns_from_the_base(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            "pytest.ini": "[pytest]\naddopts = -p iniplug -q\npython_files = check_*.py\n",
            "pyproject.toml": '[tool.pytest.ini_options]\naddopts = ["-p", "tomlplug"]\n',
            "conftest.py": 'pytest_plugins = ["confplug.sub", "other"]\n',
            "src/pkg/__init__.py": "",
        },
    )
    layout = layout_of(root, load_pins(DirSource(root)))
    assert layout.source_roots == ("src",)
    assert layout.plugins == {"cmdplug", "iniplug", "tomlplug", "confplug.sub", "other"}
    assert "qa/prop_a.py" in layout.property_files
    assert layout.role("src/pkg/check_x.py") == "harness"
    assert layout.role("src/confplug/sub.py") == "harness"
    assert layout.role("src/pkg/mod.py") == "source"


def test_no_src_directory_means_the_repository_root(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"pkg/__init__.py": ""})
    layout = layout_of(root, load_pins(DirSource(root)))
    assert layout.source_roots == ("",)
    assert layout.module("pkg/mod.py") == "pkg.mod"


def test_configured_source_roots_win(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {"src/a.py": "", "pyproject.toml": '[tool.patchgate]\nsource_roots = ["lib", "."]\n'},
    )
    pins = load_pins(DirSource(root))
    assert pins.config.source_roots == ("lib", "")
    assert layout_of(root, pins).module("lib/x/y.py") == "x.y"


@pytest.mark.parametrize("bad", ['"src"', "[]", '["/abs"]', '["../up"]', '["src", "src/"]', "[1]"])
def test_bad_source_roots_are_a_pin_error(tmp_path: Path, bad: str) -> None:
    from patchgate.errors import PinError  # noqa: PLC0415

    root = _repo(tmp_path, {"pyproject.toml": f"[tool.patchgate]\nsource_roots = {bad}\n"})
    with pytest.raises(PinError, match="source_roots"):
        load_pins(DirSource(root))


def test_default_config_has_no_source_roots() -> None:
    assert ProjectConfig().roots(has_src=True) == ("src",)
    assert ProjectConfig().roots(has_src=False) == ("",)


def test_files_named_by_property_commands_are_harness(tmp_path: Path) -> None:
    props = PROPS.replace(
        '"qa/prop_a.py::test_a"', '"-c", "qa/custom.cfg", "./qa/prop_a.py::test_a"'
    )
    root = _repo(
        tmp_path,
        {"qa/custom.cfg": "[pytest]\n", "src/pkg/__init__.py": "", "pins/properties.json": props},
    )
    layout = layout_of(root, load_pins(DirSource(root)))
    assert layout.role("qa/custom.cfg") == "harness"
    assert layout.role("qa/prop_a.py") == "harness"


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("pytest.py", "harness"),  # python -m pytest would run it instead of pytest
        ("src/pluggy/__init__.py", "harness"),
        ("src/json.py", "harness"),  # the standard library's json, hidden
        ("src/pkg/json.py", "source"),  # not top-level: pkg.json hides nothing
        ("src/typing.py", "source"),  # the base already has a top-level typing: a human's choice
    ],
)
def test_a_new_top_level_name_that_hides_the_runner_or_stdlib_is_harness(
    tmp_path: Path, path: str, role: str
) -> None:
    root = _repo(tmp_path, {"src/pkg/__init__.py": "", "src/typing.py": ""})
    assert layout_of(root, load_pins(DirSource(root))).role(path) == role


def test_root_layout_pytest_module_is_harness_not_production(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"pkg/__init__.py": ""})
    layout = layout_of(root, load_pins(DirSource(root)))
    assert (layout.role("pytest.py"), layout.role("_pytest/main.py")) == ("harness", "harness")
    assert layout.role("pkg/pytest.py") == "source"


def test_python_files_from_a_toml_list_are_test_modules(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            "src/pkg/__init__.py": "",
            "pyproject.toml": "[tool.pytest.ini_options]\n"
            'python_files = ["check_*.py", "*_spec.py"]\n',
        },
    )
    layout = layout_of(root, load_pins(DirSource(root)))
    assert layout.role("src/pkg/check_a.py") == "harness"
    assert layout.role("src/pkg/a_spec.py") == "harness"
