"""``min_mutation_score`` of the base's ``[tool.patchgate]`` (issue 21): read, refused when
invalid like the other keys, and a patch that edits it is a pin mutation (``R8``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from client.analysis.patch.roles import Layout
from client.analysis.patch.touched import judge
from client.analysis.patch.treediff import tree_changes
from patchgate.errors import PinError
from patchgate.pins import DirSource, load_config

LAYOUT = Layout(source_roots=("src",), oracle_paths=("tests/",), pins_dir="pins")


def _load(tmp_path: Path, body: str) -> float:
    (tmp_path / "pyproject.toml").write_text(f"[tool.patchgate]\n{body}")
    return load_config(DirSource(tmp_path)).min_mutation_score


@pytest.mark.parametrize(
    ("body", "value"),
    [("", 0.5), ("min_mutation_score = 0.8\n", 0.8), ("min_mutation_score = 1\n", 1.0),
     ("min_mutation_score = 0.001\n", 0.001)],
)  # fmt: skip
def test_min_mutation_score_is_read_with_its_default(
    tmp_path: Path, body: str, value: float
) -> None:
    got = _load(tmp_path, body)
    assert (got, type(got)) == (value, float)


def test_min_mutation_score_in_a_patchgate_toml(tmp_path: Path) -> None:
    (tmp_path / "patchgate.toml").write_text("min_mutation_score = 0.75\n")
    assert load_config(DirSource(tmp_path)).min_mutation_score == 0.75


@pytest.mark.parametrize(
    "raw", ["0", "0.0", "-0.5", "1.5", "2", "nan", "inf", "true", '"0.5"', "[0.5]"]
)
def test_an_invalid_min_mutation_score_is_a_configuration_error(tmp_path: Path, raw: str) -> None:
    with pytest.raises(PinError, match=r"min_mutation_score.*expected a number in \(0, 1\]"):
        _load(tmp_path, f"min_mutation_score = {raw}\n")


def test_an_invalid_min_mutation_score_is_reported_beside_other_problems(tmp_path: Path) -> None:
    with pytest.raises(PinError) as caught:
        _load(tmp_path, 'min_mutation_score = 3\nallow_unmutated = "yes"\n')
    text = str(caught.value)
    assert "min_mutation_score" in text
    assert "allow_unmutated" in text


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(
    ("name", "before", "after"),
    [
        ("pyproject.toml", "[tool.patchgate]\n", "[tool.patchgate]\nmin_mutation_score = 0.01\n"),
        ("pyproject.toml", "[tool.patchgate]\nmin_mutation_score = 0.9\n",
         "[tool.patchgate]\nmin_mutation_score = 0.1\n"),
        ("patchgate.toml", "min_mutation_score = 0.9\n", "min_mutation_score = 0.2\n"),
    ],
)  # fmt: skip
def test_a_patch_that_edits_min_mutation_score_is_a_pin_mutation(
    tmp_path: Path, name: str, before: str, after: str
) -> None:
    base = _tree(tmp_path / "base", {name: before, "src/m.py": "x = 1\n"})
    patched = _tree(tmp_path / "patched", {name: after, "src/m.py": "x = 1\n"})

    def reader(root: Path):  # type: ignore[no-untyped-def]
        return lambda rel: (root / rel).read_bytes() if (root / rel).is_file() else None

    touched = judge(tree_changes(base, patched), LAYOUT, reader(base), reader(patched))
    assert touched.pin_mutations == (name,)
