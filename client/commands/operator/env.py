"""``patchgate env build``: the suite's pinned environment of a revision, built and digested.

The work is :mod:`client.gate.environment` and :mod:`patchgate.environment`; this module parses
the flags and prints the digest. The tree goes into the cache (``$PATCHGATE_CACHE_DIR``, else the
user's cache directory), where ``check`` finds it by digest instead of building it again.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from client.commands._output import env_settings
from client.commands._util import add_repo_option, print_json
from client.commands.check import check_defaults
from client.commands.check import tls_settings as check_tls
from client.errors import ConfigError
from client.gate.environment import build_for, executor_builder
from client.gate.workspace import resolve_rev
from patchgate import git
from patchgate.environment import overlay_files
from patchgate.errors import PinError, PinErrors, UsageError
from patchgate.pins import GitSource, ProjectConfig, load_pins

__all__ = ["register", "run"]

_DESCRIPTION = """\
Build the suite's environment of a revision ([tool.patchgate.environment] of its pins):

  pip install --target TREE --only-binary :all: --no-deps --no-compile -r LOCK
  (--require-hashes when the lock has hashes)

from the lock file that [tool.patchgate.environment] of REV names, read from REV itself. The
target is never installed: its source roots go on the sandbox's path. The tree is normalized (no
bytecode, no scripts, no install records, fixed modes) and digested (environment digest v1:
per-file sha256, size and path); the digest is what the signer signs beside the fixture digest.

With a build step ([tool.patchgate.environment.build]: a command, the input patterns it reads, the
output patterns it makes), the command runs on an executor (--executor, or the lane `patchgate up`
started), in a sandbox with no network and only its inputs from REV, never on this host; the
files it makes go into the tree (patchgate-overlay/), are digested and signed with the rest, and
the executor lays them onto the workspace of every run. A patch that touches an input or an output
moves the suite's environment (R7).

Exit codes: 0 built (or found in the cache; with --if-configured also when REV configures no
environment: nothing built, and the suite runs with the executor's own pytest); 64 usage; 78 no
environment configured, an invalid lock file, pip could not install it, or the build step failed or
made outputs that are refused (the reason printed); 4 the executor for the build step was
unreachable.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``env`` command and its ``build`` sub-command."""
    p = subparsers.add_parser(
        "env", help="the suite's pinned environment: env build", description=_DESCRIPTION
    )
    sub = p.add_subparsers(title="env commands", dest="env_command", metavar="ENV_COMMAND")
    sub.required = True
    b = sub.add_parser(
        "build",
        help="build and digest the environment of a revision",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_repo_option(b)
    b.add_argument("--rev", required=True, metavar="REV", help="the (base) revision to build")
    b.add_argument("--out", type=Path, metavar="DIR", help="also copy the tree here (a new dir)")
    b.add_argument(
        "--find-links",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a local directory of wheels (repeatable); with --no-index: offline",
    )
    b.add_argument("--no-index", action="store_true", help="do not use a package index")
    b.add_argument("--rebuild", action="store_true", help="build even when the cache has it")
    b.add_argument("--cache", type=Path, metavar="DIR", help="cache directory (see above)")
    b.add_argument(
        "--if-configured",
        action="store_true",
        help="exit 0 with a note when REV configures no environment (for CI recipes that serve "
        "repositories with and without one); without it that is exit 78",
    )
    b.add_argument(
        "--executor",
        metavar="ADDR",
        help="the executor that runs a build step (default: the lane's, see --lane)",
    )
    b.add_argument(
        "--lane",
        metavar="NAME",
        help="take the executor of the lane `patchgate up --lane NAME` started (default: the "
        "lane 'local', when it is up)",
    )
    for part in ("ca", "cert", "key"):
        b.add_argument(f"--executor-tls-{part}", type=Path, metavar="FILE", help=argparse.SUPPRESS)
    b.add_argument("--json", action="store_true", help="print the result as JSON")
    b.set_defaults(func=run)


def _config(repo: Path, commit: str) -> ProjectConfig:
    """The revision's configuration, its pins valid (the lock file included); else 78."""
    try:
        return load_pins(GitSource(repo, commit)).config
    except PinErrors as exc:
        raise ConfigError([str(e) for e in exc.errors]) from None
    except PinError as exc:
        raise ConfigError([str(exc)]) from None


def _has_src(repo: Path, commit: str) -> bool:
    proc = git.run(repo, "cat-file", "-t", f"{commit}:src")
    return proc.returncode == 0 and proc.stdout.strip() == b"tree"


def run(args: argparse.Namespace) -> int:
    """Run ``patchgate env build``; exit 0, 64 or 78 (nothing copied to ``--out`` on failure)."""
    repo: Path = args.repo
    if not repo.is_dir():
        raise UsageError(f"--repo {repo}: not a directory")
    out: Path | None = args.out
    if out is not None and out.exists():
        raise UsageError(f"--out {out}: already exists (give a new directory)")
    for d in args.find_links:
        if not Path(d).is_dir():
            raise UsageError(f"--find-links {d}: not a directory")
    commit = resolve_rev(repo, args.rev)
    config = _config(repo, commit)
    if config.environment is None and args.if_configured:
        note = f"{args.rev} configures no environment: nothing built (the executor's own pytest)"
        if args.json:
            print_json({"digest": "", "configured": False, "note": note})
        else:
            print(f"patchgate: {note}")
        return 0
    builder = None
    if config.environment is not None and config.environment.build is not None:
        conf = {**check_defaults(args.lane), **env_settings()}
        lane = conf.get("executor") or []
        executors = [args.executor] if args.executor else [lane] if isinstance(lane, str) else lane
        builder = executor_builder(executors, check_tls(args, conf, "executor"))
    built = build_for(
        repo,
        commit,
        config,
        has_src=_has_src(repo, commit),
        cache=args.cache,
        find_links=tuple(args.find_links),
        no_index=args.no_index,
        rebuild=args.rebuild,
        builder=builder,
        say=None if args.json else lambda line: print(f"patchgate: {line}", flush=True),
    )
    if out is not None:
        shutil.copytree(built.tree, out)
    result = {
        "digest": built.digest,
        "build_outputs": len(overlay_files(built.tree)),
        "tree": str(built.tree),
        "files": built.files,
        "cached": built.cached,
        "source_roots": list(config.roots(has_src=_has_src(repo, commit))),
    }
    if args.json:
        print_json(result)
    else:
        how = "found in the cache" if built.cached else "built"
        print(
            f"{built.digest}  environment of {args.rev} ({how}, {built.files} files: {built.tree})"
        )
    return 0
