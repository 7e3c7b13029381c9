"""``patchgate init``: scaffold ``pins/`` and ``[tool.patchgate]`` in a repository; no overwrite.

The work is :mod:`client.pinning.scaffold`; this module parses the flags and prints what it wrote.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from client.commands._util import add_repo_option, print_json
from client.pinning.check import NO_FIXTURES, attributes_problems
from client.pinning.scaffold import apply_init, plan_init
from patchgate.errors import UsageError
from patchgate.pins import DirSource, load_config

__all__ = ["register", "run"]

_DESCRIPTION = """\
Scaffold the pins of a repository: pins/fixtures.json (every file under the fixture root hashed,
seed 7, clock bound 30000 ms, allowed command 'python -m pytest -q -p no:cacheprovider'), an empty
pins/properties.json and pins/flakes.json, and a [tool.patchgate] table with source_roots guessed
from the layout (["src"] when src/ exists, else ["."]) and, when the tests live elsewhere than
tests/ (pkg/tests/ inside a package, test/), oracle_paths naming where they are; a .gitattributes
that check would refuse is a warning. The table is appended to pyproject.toml
when there is one (the rest of the file is kept byte for byte), else written to patchgate.toml.

init never overwrites: when a pin file or patchgate.toml exists, or pyproject.toml already has
[tool.patchgate], it names them and writes nothing (exit 64). A fixture file git ignores or does
not track (never 'git add'-ed) is refused, every one named, nothing written (exit 78): a check
reads its base from a commit, where such a file is absent; --skip-untracked leaves them out and
lists them. Next: mark property tests with @pytest.mark.patchgate(...) and run 'patchgate pin
properties --from-pytest', then 'patchgate pin check'. 'patchgate explain' says what each code
means.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``init`` command."""
    p = subparsers.add_parser(
        "init",
        help="scaffold pins/ and [tool.patchgate] in a repository (never overwrites)",
        description=_DESCRIPTION,
    )
    add_repo_option(p)
    p.add_argument(
        "--fixture-root",
        default="fixtures",
        metavar="DIR",
        help="the fixture directory, relative to the repository (default: fixtures)",
    )
    p.add_argument(
        "--requirements",
        metavar="FILE",
        help="the suite's environment: a reviewed lock of exact pins (pytest and the tests' "
        "dependencies), relative to the repository; written as [tool.patchgate.environment]",
    )
    p.add_argument(
        "--skip-untracked",
        action="store_true",
        help="leave fixture files git ignores or does not track out of the pin, and list them "
        "(default: refuse, exit 78: a check reads its base from a commit, where they are absent)",
    )
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``patchgate init``; exit 0, or refused with nothing written."""
    repo: Path = args.repo
    if not repo.is_dir():
        raise UsageError(f"--repo {repo}: not a directory")
    plan = plan_init(
        repo,
        fixture_root=args.fixture_root,
        requirements=args.requirements,
        skip_untracked=args.skip_untracked,
    )
    apply_init(plan)
    if not plan.fixture_files:
        sys.stderr.write(f"patchgate: warning: {NO_FIXTURES.format(root=args.fixture_root)}\n")
    for problem in attributes_problems(plan.repo, load_config(DirSource(plan.repo))):
        sys.stderr.write(f"patchgate: warning: check will refuse this base (78): {problem}\n")
    if args.json:
        print_json(
            {
                "written": plan.created,
                "config_file": plan.config_file,
                "source_roots": list(plan.source_roots),
                "oracle_paths": list(plan.oracle_paths),
                "fixture_files": plan.fixture_files,
                "skipped_untracked": list(plan.skipped),
            }
        )
        return 0
    for rel in plan.skipped:
        print(f"skipped {rel} (git does not track it)")
    for rel in plan.created:
        print(f"wrote {rel}" + (" ([tool.patchgate] appended)" if rel == "pyproject.toml" else ""))
    roots = ", ".join(plan.source_roots)
    print(f"source_roots: {roots}; fixture files pinned: {plan.fixture_files}")
    print(f"oracle_paths: {', '.join(plan.oracle_paths)}")
    print("next: mark property tests @pytest.mark.patchgate(...), then")
    print("      patchgate pin properties --from-pytest && patchgate pin check")
    return 0
