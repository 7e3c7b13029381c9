"""``patchgate pin fixtures|properties|check``: make and check the pins of a repository.

The work is :mod:`client.pinning`; this module parses the flags and prints the result. Only
these operator commands (and ``init``) write into the pins directory; the gate never does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from client.commands._util import add_repo_option, print_json
from client.errors import ConfigError
from client.pinning.changes import Changes
from client.pinning.check import check_tree
from client.pinning.collect import repin_properties
from client.pinning.fixtures import repin_fixtures
from client.pinning.tree import open_tree
from patchgate.errors import UsageError

__all__ = ["register", "run", "run_check", "run_fixtures", "run_properties"]

_DESCRIPTION = """\
Make and check the pins of a repository:

  pin fixtures                 rehash the fixture tree into the files map of pins/fixtures.json
  pin properties --from-pytest the tests marked @pytest.mark.patchgate(...) become properties.json
  pin check [--rev REV]        validate the three pin files and every covers entry, all at once

Exit codes: 0 done / pins OK; 2 (pin fixtures) the fixture tree holds an unsafe file; 64 usage
(an unknown --rev included); 78 invalid pins or configuration, every problem on its own line
(pin fixtures: a fixture file git ignores or does not track, unless --skip-untracked).
"""

_FIXTURES = """\
Rewrite only the files map of pins/fixtures.json from the fixture tree (every file under the
fixture root, with its sha256) and print the paths added, removed and changed. pin_id, seed,
clock_bound_ms and allowed_commands are kept. A symlink that leaves the fixture tree, a linked
directory or a non-regular file refuses the rewrite (exit 2, nothing written), as for 'digest'.
A file git ignores or does not track refuses it too (exit 78, every file named): a check reads
its base from a commit, where that file is absent; --skip-untracked leaves such files out of the
pin and lists them. The file is rewritten only when a path or hash changed.
"""

_PROPERTIES = """\
Collect the tests marked @pytest.mark.patchgate(claim=..., kind=..., covers=[...], id=...) with
'python -m pytest --collect-only' (no test runs, but test modules and conftest.py are imported:
run it on your own reviewed code, never on an agent's patch; the interpreter is patchgate's)
and replace pins/properties.json by them: id from id= (else <module>.<test> of the node id),
class from kind=, command = the fixture pin's first allowed command + the node id. Prints the
property ids added, removed and changed. Refused with every problem listed and nothing written
(exit 78): a collection error, a bad or unknown mark argument, a parametrized test, two tests with
one id. PATH arguments limit collection (default: the project's testpaths).
"""

_CHECK = """\
Validate pins/fixtures.json, pins/properties.json and pins/flakes.json against their JSON Schemas
and the pin parser, and every covers entry against the symbols of the same tree (exact: a module
pkg.mod, a function pkg.mod.func, a class pkg.mod.Class; named from the source root, so
src/textkit/core.py is textkit.core), suggesting the nearest symbol. Every problem is listed at
once (exit 78); otherwise one line 'pins OK' (exit 0). Default: the working tree; --rev REV reads
the pins and the sources of that git revision instead, as 'check' reads its base.
"""


def _repo_flag(p: argparse.ArgumentParser) -> None:
    add_repo_option(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``pin`` command and its three sub-commands."""
    p = subparsers.add_parser(
        "pin", help="make and check pins: fixtures, properties, check", description=_DESCRIPTION
    )
    sub = p.add_subparsers(title="pin commands", dest="pin_command", metavar="PIN_COMMAND")
    sub.required = True
    fx = sub.add_parser("fixtures", help="rehash the fixture tree", description=_FIXTURES)
    _repo_flag(fx)
    fx.add_argument(
        "--skip-untracked",
        action="store_true",
        help="leave files git ignores or does not track out of the pin, and list them",
    )
    fx.set_defaults(func=run, pin_run=run_fixtures)
    pr = sub.add_parser(
        "properties", help="marked tests become properties.json", description=_PROPERTIES
    )
    _repo_flag(pr)
    pr.add_argument(
        "--from-pytest",
        action="store_true",
        required=True,
        help="collect the tests marked @pytest.mark.patchgate (the only source today)",
    )
    pr.add_argument(
        "paths", nargs="*", metavar="PATH", help="test paths to collect, relative to the repository"
    )
    pr.set_defaults(func=run, pin_run=run_properties)
    ck = sub.add_parser("check", help="validate the pins and covers", description=_CHECK)
    _repo_flag(ck)
    ck.add_argument("--rev", metavar="REV", help="check this git revision (default: working tree)")
    ck.set_defaults(func=run, pin_run=run_check)


def run(args: argparse.Namespace) -> int:
    """Run the ``pin`` sub-command named on the command line; returns its exit code."""
    code: int = args.pin_run(args)
    return code


def _repo(args: argparse.Namespace) -> Path:
    repo: Path = args.repo
    if not repo.is_dir():
        raise UsageError(f"--repo {repo}: not a directory")
    return repo


def _print_changes(path: Path, changes: Changes, total: int, what: str) -> None:
    for line in changes.lines():
        print(line)
    if changes.empty:
        print(f"{path}: up to date ({total} {what})")
    else:
        print(f"{path}: {changes.summary()}; {total} {what}")


def run_fixtures(args: argparse.Namespace) -> int:
    """``pin fixtures``: exit 0; 2 unsafe tree; 78 invalid pin or configuration."""
    update = repin_fixtures(_repo(args), skip_untracked=args.skip_untracked)
    if args.json:
        print_json(
            {
                "path": str(update.path),
                "files": update.files,
                "skipped_untracked": list(update.skipped),
                **update.changes.to_json(),
            }
        )
    else:
        for rel in update.skipped:
            print(f"skipped {rel} (git does not track it)")
        _print_changes(update.path, update.changes, update.files, "files")
    return 0


def run_properties(args: argparse.Namespace) -> int:
    """``pin properties --from-pytest``: exit 0; 78 with every problem, nothing written."""
    update = repin_properties(_repo(args), args.paths)
    if args.json:
        print_json(
            {"path": str(update.path), "properties": update.properties, **update.changes.to_json()}
        )
    else:
        _print_changes(update.path, update.changes, update.properties, "properties")
    return 0


def run_check(args: argparse.Namespace) -> int:
    """``pin check``: exit 0 and one line, or 78 with every problem (one line each)."""
    tree = open_tree(_repo(args), args.rev)
    report = check_tree(tree)
    if args.json:
        print_json({"tree": tree.name, **report.to_json()})
    else:
        for warning in report.warnings:
            sys.stderr.write(f"patchgate: warning: {' '.join(warning.split())}\n")
    if not report.ok:
        raise ConfigError(report.problems)
    if not args.json:
        print(
            f"pins OK ({tree.name}): {report.fixture_files} fixture files, "
            f"{report.properties} properties, {report.covers} covers entries, "
            f"{report.flakes} flakes"
        )
    return 0
