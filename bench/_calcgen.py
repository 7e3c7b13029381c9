"""The generated target of bench_mutation.py: calc/gen.py, its tests, patches of N functions.

Twenty small helpers of the kind a real library has (arithmetic, comparisons, branches, loops),
each with a behaviour-keeping rewrite; ``properties/test_calc_gen.py`` holds one strong test per
function: exact expected values over a table of inputs that includes every boundary, computed
here from the base code when the file is written. ``make_repo`` lays the module out as a patchgate
target repository the way bench_scale.py's ``make_repo`` does (examples/billing's pins, fixtures
and ``[tool.patchgate]``, ``allow_unmutated = true`` so that ``--mutants 0`` is admitted, one
``pure_fn`` property per function pinned with ``covers = calc.gen.<name>``); ``write_patch``
rewrites the first N functions and returns the ``git diff``. Standard library only: the unit test
(tests/unit/test_bench_mutation.py) loads this file without Docker or daemons.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FUNCS",
    "MODULE",
    "PYTEST",
    "TESTS",
    "Func",
    "make_repo",
    "module",
    "tests",
    "write_patch",
]

ROOT = Path(__file__).resolve().parent.parent
BILLING = ROOT / "examples" / "billing"
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
MODULE = "calc/gen.py"
TESTS = "properties/test_calc_gen.py"

INTS = [*range(-12, 41), 99, 100, 101, 255, 256, 1000]
PAIRS = [(a, b) for a in (-7, -1, 0, 1, 2, 3, 5, 9, 12, 250) for b in (-4, 0, 1, 3, 6, 7, 10)]
TRIPLES = [(a, b, c) for a in (-2, 0, 4) for b in (-3, 0, 4, 9) for c in (-5, 0, 4, 10)]


@dataclass(frozen=True)
class Func:
    """One generated function: its signature, base body, behaviour-keeping rewrite, test inputs."""

    name: str
    params: str
    base: str
    refactor: str
    inputs: tuple[tuple[int, ...], ...]

    def source(self, refactored: bool) -> str:
        """The function's definition, base or rewritten."""
        body = self.refactor if refactored else self.base
        return f"def {self.name}({self.params}):\n{body}"


def _ones(values: list[int]) -> tuple[tuple[int, ...], ...]:
    return tuple((v,) for v in values)


# Bodies are indented four spaces; each rewrite keeps the function's value on every input.
FUNCS: tuple[Func, ...] = (
    Func("clamp", "x: int",
         "    if x < 0:\n        return 0\n    if x > 10:\n        return 10\n    return x\n",
         "    return min(max(x, 0), 10)\n", _ones(INTS)),
    Func("sign", "x: int",
         "    if x > 0:\n        return 1\n    if x < 0:\n        return -1\n    return 0\n",
         "    return (x > 0) - (x < 0)\n", _ones(INTS)),
    Func("abs_diff", "a: int, b: int",
         "    if a > b:\n        return a - b\n    return b - a\n",
         "    return abs(a - b)\n", tuple(PAIRS)),
    Func("is_even", "x: int",
         "    return x % 2 == 0\n",
         "    return not x % 2\n", _ones(INTS)),
    Func("triangle", "n: int",
         "    total = 0\n    for i in range(n + 1):\n        total += i\n    return total\n",
         "    if n <= 0:\n        return 0\n    return n * (n + 1) // 2\n", _ones(INTS)),
    Func("fizz", "x: int",
         "    if x % 15 == 0:\n        return 3\n    if x % 5 == 0:\n        return 2\n"
         "    if x % 3 == 0:\n        return 1\n    return 0\n",
         "    return (x % 3 == 0) + 2 * (x % 5 == 0)\n", _ones(INTS)),
    Func("max3", "a: int, b: int, c: int",
         "    m = a\n    if b > m:\n        m = b\n    if c > m:\n        m = c\n    return m\n",
         "    return max(a, b, c)\n", tuple(TRIPLES)),
    Func("digits", "n: int",
         "    n = abs(n)\n    count = 1\n    while n >= 10:\n        n //= 10\n        count += 1\n"
         "    return count\n",
         "    return len(str(abs(n)))\n", _ones(INTS)),
    Func("gcd", "a: int, b: int",
         "    while b:\n        a, b = b, a % b\n    return abs(a)\n",
         "    if b == 0:\n        return abs(a)\n    return gcd(b, a % b)\n", tuple(PAIRS)),
    Func("bucket", "x: int",
         "    if x < 10:\n        return 'low'\n    if x < 100:\n        return 'mid'\n"
         "    return 'high'\n",
         "    for limit, name in ((10, 'low'), (100, 'mid')):\n        if x < limit:\n"
         "            return name\n    return 'high'\n", _ones(INTS)),
    Func("percent", "part: int, whole: int",
         "    if whole == 0:\n        return 0\n    return part * 100 // whole\n",
         "    return (100 * part) // whole if whole else 0\n", tuple(PAIRS)),
    Func("leap", "y: int",
         "    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)\n",
         "    if y % 400 == 0:\n        return True\n    if y % 100 == 0:\n        return False\n"
         "    return y % 4 == 0\n",
         _ones([1600, 1700, 1800, 1900, 1996, 1999, 2000, 2001, 2004, 2023, 2024, 2100, 2400])),
    Func("collatz_step", "x: int",
         "    return x // 2 if x % 2 == 0 else 3 * x + 1\n",
         "    if x % 2:\n        return 3 * x + 1\n    return x // 2\n", _ones(INTS)),
    Func("saturating_add", "a: int, b: int",
         "    s = a + b\n    if s > 255:\n        return 255\n    return s\n",
         "    return min(a + b, 255)\n",
         tuple([*PAIRS, (250, 5), (250, 6), (255, 0), (255, 1)])),
    Func("midpoint", "a: int, b: int",
         "    return (a + b) // 2\n",
         "    return (a + b) >> 1\n", tuple(PAIRS)),
    Func("in_range", "x: int, lo: int, hi: int",
         "    return lo <= x and x < hi\n",
         "    return lo <= x < hi\n", tuple(TRIPLES)),
    Func("count_multiples", "n: int, d: int",
         "    count = 0\n    for i in range(1, n + 1):\n        if i % d == 0:\n"
         "            count += 1\n    return count\n",
         "    return n // d if n > 0 else 0\n",
         tuple((n, d) for n in (-3, 0, 1, 2, 5, 6, 7, 12, 30) for d in (1, 2, 3, 5, 7))),
    Func("power_of_two", "x: int",
         "    return x > 0 and x & (x - 1) == 0\n",
         "    return x > 0 and bin(x).count('1') == 1\n", _ones(INTS)),
    Func("tax", "cents: int",
         "    if cents <= 1000:\n        return 0\n    return (cents - 1000) * 20 // 100\n",
         "    return max(cents - 1000, 0) * 20 // 100\n",
         _ones([0, 500, 999, 1000, 1001, 1004, 1005, 1006, 1010, 1100, 2000, 12345])),
    Func("grade", "score: int",
         "    if score >= 90:\n        return 'A'\n    if score >= 80:\n        return 'B'\n"
         "    if score >= 70:\n        return 'C'\n    return 'F'\n",
         "    for bound, letter in ((90, 'A'), (80, 'B'), (70, 'C')):\n        if score >= bound:\n"
         "            return letter\n    return 'F'\n",
         _ones([0, 50, 69, 70, 71, 79, 80, 81, 89, 90, 91, 100])),
)  # fmt: skip


def module(rewritten: int = 0) -> str:
    """calc/gen.py with the first ``rewritten`` functions in their rewritten form."""
    defs = [f.source(i < rewritten) for i, f in enumerate(FUNCS)]
    return '"""Small helpers (generated for bench_mutation.py)."""\n\n\n' + "\n\n".join(defs)


def _expected() -> dict[str, list[tuple[tuple[int, ...], object]]]:
    namespace: dict[str, object] = {}
    exec(compile(module(0), MODULE, "exec"), namespace)  # noqa: S102 - our own generated code
    return {f.name: [(args, namespace[f.name](*args)) for args in f.inputs] for f in FUNCS}


def tests() -> str:
    """properties/test_calc_gen.py: one exact-value test per function over its input table."""
    parts = ['"""Exact values of every calc.gen helper (generated for bench_mutation.py)."""\n\n'
             "from calc import gen\n"]  # fmt: skip
    for name, cases in _expected().items():
        parts.append(
            f"\n\ndef test_{name}():\n"
            f"    cases = {cases!r}\n"
            f"    for args, want in cases:\n"
            f"        assert gen.{name}(*args) == want, args\n"
        )
    return "".join(parts)


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True).stdout


def make_repo(tmp: Path, name: str = "calc-repo") -> Path:
    """examples/billing's layout with calc/gen.py and its 20 pinned properties, committed."""
    repo = tmp / name
    shutil.copytree(BILLING, repo, ignore=shutil.ignore_patterns("patches", "__pycache__"))
    (repo / "calc").mkdir()
    (repo / "calc" / "__init__.py").write_text('"""Generated helpers."""\n', encoding="utf-8")
    (repo / MODULE).write_text(module(0), encoding="utf-8")
    (repo / TESTS).write_text(tests(), encoding="utf-8")
    props = [
        {"id": f"calc.gen.{f.name}", "claim": f"{f.name} returns its table of exact values",
         "class": "pure_fn", "covers": [f"calc.gen.{f.name}"],
         "command": [*PYTEST, f"{TESTS}::test_{f.name}"]}
        for f in FUNCS
    ]  # fmt: skip
    (repo / "pins" / "properties.json").write_text(
        json.dumps({"properties": props}, indent=2) + "\n", encoding="utf-8"
    )
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(
        text.replace("[tool.patchgate]\n", "[tool.patchgate]\nallow_unmutated = true\n", 1),
        encoding="utf-8",
    )
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        _git(repo, *args)
    return repo


def write_patch(repo: Path, n: int, dest: Path) -> Path:
    """A patch rewriting the first ``n`` functions of calc/gen.py; the work tree is left at HEAD."""
    (repo / MODULE).write_text(module(n), encoding="utf-8")
    try:
        dest.write_bytes(_git(repo, "diff", "--", MODULE))
    finally:
        _git(repo, "checkout", "--", MODULE)
    return dest
