"""``patchgate check``: the whole gate on one patch (docs/architecture.md).

Flags win over the settings of ``--lane`` (a lane ``patchgate up`` started), which win over
``[check]`` of a ``patchgate.toml`` in the current directory, which wins over the settings of the
default lane (``local``, when it is up), which win over the defaults. Exit codes: 0 admitted,
1 rejected (and nothing else), 2 refused to score (fixture digest), 3 fixture drift, 4 transport
failure (nothing scored), 64 usage (an unknown ``--base`` included), 78 configuration error
(invalid pins or ``[tool.patchgate]`` in the base: every problem, one line each).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import secrets
import sys
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from client.commands._output import (
    NO_PATCH,
    Progress,
    add_output_flags,
    check_report_flags,
    env_settings,
    report_check,
    report_self_test,
    require_patch,
)
from client.commands._util import add_repo_option, check_out_dir, parse_clock
from client.errors import ConfigError
from client.gate.attributes import base_attribute_problems
from client.gate.pipeline import run_check
from client.gate.selftest import run_self_test
from client.gate.settings import CheckSettings
from client.gate.workspace import resolve_rev
from client.lanes.state import DEFAULT_LANE, MARKER, lane_settings_file
from client.outpaths import guard_output
from patchgate.errors import PinError, PinErrors, UsageError
from patchgate.pins import GitSource, PinSet, load_pins
from patchgate.tls import ClientTLS
from patchgate.vocabulary import ISOLATIONS, Isolation

__all__ = [
    "base_config",
    "check_defaults",
    "load_defaults",
    "register",
    "run",
    "settings_from_args",
]

CONFIG_FILE = "patchgate.toml"
MAX_MUTANTS = 50
DEFAULT_MUTANTS = 16  # docs/mutation.md
_KNOWN = {
    "signer", "executor", "remote_executor", "operator_keyring", "executor_keyring", "out",
    "executor_concurrency", "isolation",
    "signer_tls_ca", "signer_tls_cert", "signer_tls_key",
    "executor_tls_ca", "executor_tls_cert", "executor_tls_key",
    "remote_tls_ca", "remote_tls_cert", "remote_tls_key",
}  # fmt: skip

_DESCRIPTION = """\
Run the gate on one patch: provenance -> changed symbols -> oracle and pins -> fixture digest ->
operator signature -> admission matrix -> every suite property twice on the executors -> ledgers ->
per-symbol credit -> receipt. Ledgers and receipt.json go to --out; a refused step writes no file;
receipt.json is written for every verdict. A summary table goes to stdout (--json: the receipt),
progress to stderr.

Defaults for --signer, --executor, --remote-executor, --operator-keyring, --executor-keyring, --out,
--executor-concurrency and the TLS files come from the lane `patchgate up` started (the lane
"local" when it is up, or --lane), or from a [check] table in ./patchgate.toml; flags win. A
property whose result is transport only is re-run once (on another executor address when there is
one).
"""

_EPILOG = """\
exit codes: 0 admitted · 1 rejected · 2 refused to score (fixture digest) · 3 fixture drift ·
            4 transport/infrastructure failure, nothing scored · 64 usage (unknown --base too) ·
            78 invalid pins or [tool.patchgate] in the base (every problem, one line each);
               with --self-test: a property fails or errors on the base
what each rejection code (R1-R9), admission decision and posture means, and what to do next:
  patchgate explain CODE (every name: patchgate explain)
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``check`` command."""
    p = subparsers.add_parser(
        "check",
        help="gate one patch: admission, two runs, credit, receipt",
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    add_repo_option(p, "target git repository")
    p.add_argument(
        "--base", required=True, metavar="REV", help="base revision the patch applies to"
    )
    p.add_argument(
        "--patch", type=Path, metavar="FILE", help="unified diff (required but with --self-test)"
    )
    p.add_argument("--draft-id", metavar="ID", help="the draft's id (provenance)")
    p.add_argument("--drafter", metavar="{human,model_lane}", help="who drafted it (provenance)")
    p.add_argument("--signer", metavar="ADDR", help="signer daemon (unix:/path or host:port)")
    p.add_argument(
        "--executor",
        action="append",
        metavar="ADDR",
        help="local-lane executor; repeat to spread properties across several",
    )
    p.add_argument("--remote-executor", metavar="ADDR", help="remote lane: confirms, never credits")
    p.add_argument(
        "--remote-only",
        action="store_true",
        help="run on the remote lane alone (no --executor): a confirmation run that is never "
        "admitted; symbols only the remote lane passed get R6",
    )
    p.add_argument(
        "--executor-concurrency",
        type=int,
        metavar="N",
        help="properties in flight per executor address (default: 2 for a dns:/// fleet "
        "address, else 1)",
    )
    p.add_argument(
        "--isolation",
        choices=("run", "property"),
        help="run (default): each run of the properties sharing a command prefix is one fresh "
        "sandbox; property: each run of each property is its own sandbox",
    )
    p.add_argument(
        "--judge",
        choices=("on", "off"),
        default="on",
        help="on (default): each sandbox run keeps the property's predicate (the judge: pytest, "
        "the pinned properties, the executor's reporter) apart from the patched code (the "
        "subject), two processes and two users, only values crossing; off: the old "
        "single-process run, for properties that cannot be judged: such a check is scored but "
        "not admitted unless the base's reviewed configuration says allow_judge_off = true",
    )
    p.add_argument(
        "--mutants",
        type=_mutants,
        default=os.environ.get("PATCHGATE_MUTANTS") or str(DEFAULT_MUTANTS),
        metavar="K",
        help=f"the cap on mutants per changed symbol that would earn credit (default "
        f"{DEFAULT_MUTANTS}, or $PATCHGATE_MUTANTS): every mutant on the lines the patch wrote "
        "runs, up to K drawn at random (the seed is in the receipt); a covering property credits "
        "the symbol when its own predicate kills one and its mutation score reaches the base's "
        "min_mutation_score. 0 turns the stage off: such a check is not admitted unless the "
        "reviewed configuration says allow_unmutated = true",
    )
    p.add_argument(
        "--second-pin",
        type=Path,
        metavar="FILE",
        help="a second fixture pin: run again on it and write drift.json",
    )
    _add_statement_flags(p)
    p.add_argument("--clock", metavar="ISO8601", help="review clock (default: now, UTC)")
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="ledger directory (default: a new directory under the lane's state, or under the "
        "system's temp directory, printed; never inside the repository unless given)",
    )
    add_output_flags(p)  # --self-test, --format, --json, --junit, --quiet
    p.add_argument(
        "--lane",
        metavar="NAME|DIR",
        help="take the daemon settings of the lane `patchgate up --lane NAME` (or "
        "`--state DIR`) started (default: the lane 'local', when it is up)",
    )
    p.add_argument(
        "--operator-keyring",
        type=Path,
        metavar="FILE",
        help="operator public keyring; without it the signer's GetKeyring is trusted "
        "on first use and admission.json says so",
    )
    p.add_argument(
        "--executor-keyring",
        type=Path,
        metavar="FILE",
        help="executor public keyring for result envelopes (default: the key each "
        "executor reports, trust on first use)",
    )
    for who in ("signer", "executor", "remote"):
        for part in ("ca", "cert", "key"):
            p.add_argument(
                f"--{who}-tls-{part}",
                type=Path,
                metavar="FILE",
                help=f"mTLS {part} for the {who} connection",
            )
    p.set_defaults(func=run)


def _add_statement_flags(p: argparse.ArgumentParser) -> None:
    """The second pin's bytes, provenance the operator states, and a person's override."""
    p.add_argument(
        "--second-pin-tree",
        type=Path,
        metavar="DIR",
        help="the second pin's own fixture tree (stands in for the fixture root; needs "
        "--second-pin)",
    )
    p.add_argument(
        "--second-pin-rev",
        metavar="REV",
        help="take the second pin's fixture tree (and, without --second-pin, its pin file) "
        "from this revision of --repo",
    )
    p.add_argument(
        "--model",
        metavar="TEXT",
        help="the model that drafted the patch (provenance; blank unless given, never read "
        "from the patch)",
    )
    p.add_argument(
        "--interface",
        metavar="TEXT",
        help="the lane or tool that returned the patch (provenance)",
    )
    p.add_argument(
        "--override-by",
        metavar="ID",
        help="who overrides the verdict: recorded in the receipt, never applied (needs "
        "--override-reason)",
    )
    p.add_argument("--override-reason", metavar="TEXT", help="why (needs --override-by)")


def _statements(args: argparse.Namespace) -> dict[str, Any]:
    """The settings of :func:`_add_statement_flags`, each pair checked (usage errors, 64)."""
    by, reason = args.override_by, args.override_reason
    if (by is None) != (reason is None):
        raise UsageError("--override-by and --override-reason go together")
    for flag, value in (("--override-by", by), ("--override-reason", reason)):
        if value is not None and (
            not value.strip() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
        ):
            raise UsageError(f"{flag}: one line of text, not empty")
    if args.second_pin_tree is not None and args.second_pin_rev is not None:
        raise UsageError("--second-pin-tree and --second-pin-rev name the same thing; give one")
    if args.second_pin_tree is not None and args.second_pin is None:
        raise UsageError("--second-pin-tree needs --second-pin (the pin of those bytes)")
    return {
        "second_pin_tree": args.second_pin_tree,
        "second_pin_rev": args.second_pin_rev,
        "model": args.model or "",
        "interface": args.interface or "",
        "override_by": by.strip() if by is not None else None,
        "override_reason": reason.strip() if reason is not None else None,
    }


def check_defaults(
    lane: str | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The ``[check]`` settings below the flags: the default lane's (when it is up) < a
    ``./patchgate.toml`` ``[check]`` table < the lane named by ``--lane`` (which must be up)."""
    if lane is None:
        try:
            default = lane_settings_file(None, environ)
        except UsageError:  # no home directory: there is no default lane to read
            return load_defaults()
        return {**load_defaults(default), **load_defaults()}
    named = lane_settings_file(lane, environ)
    if not named.is_file():
        raise UsageError(f"--lane {lane}: no lane settings at {named}; is the lane up?")
    return {**load_defaults(), **load_defaults(named)}


def load_defaults(path: Path = Path(CONFIG_FILE)) -> dict[str, Any]:
    """The ``[check]`` table of one settings file (empty if the file is absent).

    A ``./patchgate.toml`` written by an older ``patchgate up`` is refused: that is the name of the
    project's own configuration, and a committed copy breaks the gate's reading of it.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    if path.name == CONFIG_FILE and raw.startswith(MARKER.encode()):
        raise UsageError(
            f"{path} was written by an older `patchgate up`; delete it: `patchgate up` now keeps "
            "the lane's settings in STATE/check.toml, which `check` reads by itself"
        )
    try:
        table = tomllib.loads(raw.decode("utf-8")).get("check", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [check] must be a table")
    unknown = sorted(set(table) - _KNOWN)
    if unknown:
        raise UsageError(f"{path}: [check]: unknown settings {', '.join(unknown)}")
    return table


def tls_settings(args: argparse.Namespace, conf: dict[str, Any], who: str) -> ClientTLS | None:
    parts = {}
    for part in ("ca", "cert", "key"):
        val = getattr(args, f"{who}_tls_{part}") or conf.get(f"{who}_tls_{part}")
        parts[part] = Path(val) if val else None
    given = [k for k, v in parts.items() if v is not None]
    if not given:
        return None
    if len(given) != 3:
        raise UsageError(f"--{who}-tls-ca, --{who}-tls-cert and --{who}-tls-key go together")
    return ClientTLS(ca_cert=parts["ca"], cert=parts["cert"], key=parts["key"])  # type: ignore[arg-type]


def _path(flag: Path | None, conf: dict[str, Any], key: str) -> Path | None:
    val = flag if flag is not None else conf.get(key)
    return Path(val) if val else None


def base_config(repo: Path, commit: str) -> PinSet:
    """The pins of the base commit; any problem is a ConfigError listing every one found (78)."""
    try:
        return load_pins(GitSource(repo, commit))
    except PinErrors as exc:
        raise ConfigError([str(e) for e in exc.errors]) from None
    except PinError as exc:
        raise ConfigError([str(exc)]) from None


def _mutants(text: str) -> int:
    """``--mutants K``: a whole number from 0 to 50."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if not 0 <= k <= MAX_MUTANTS:
        raise argparse.ArgumentTypeError(f"expected 0 to {MAX_MUTANTS}, not {k}")
    return k


def _isolation(value: object) -> Isolation:
    for name in ISOLATIONS:
        if value == name:
            return name
    raise UsageError(f"isolation must be run or property, not {value!r}")


def settings_from_args(
    args: argparse.Namespace, conf: dict[str, Any], *, lane: str = ""
) -> CheckSettings:
    """Flags > ``PATCHGATE_*`` environment > lane / patchgate.toml [check] > defaults,
    validated once. ``lane``: the lane the defaults came from (named when a daemon is down)."""
    require_patch(args)
    from_lane = conf.get("signer")
    conf = {**conf, **env_settings()}
    signer = args.signer or conf.get("signer")
    executors = args.executor or conf.get("executor") or []
    if isinstance(executors, str):
        executors = [executors]
    if not signer:
        raise UsageError(
            "no signer: start a local lane with `patchgate up` (check then reads its signer and "
            "executor by itself), or pass --signer ADDR --executor ADDR"
        )
    remote = args.remote_executor or conf.get("remote_executor")
    if args.remote_only:
        if not remote:
            raise UsageError("--remote-only needs --remote-executor")
        if args.executor:
            raise UsageError("--remote-only runs no local executor; drop --executor")
        executors = []
    elif not executors:
        raise UsageError(
            "no executor: start a local lane with `patchgate up`, or pass --executor ADDR "
            "(for a confirmation run on the remote lane alone: --remote-only)"
        )
    concurrency = (
        args.executor_concurrency
        if args.executor_concurrency is not None
        else conf.get("executor_concurrency")
    )
    if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
        raise UsageError("--executor-concurrency must be a positive integer")
    repo = Path(args.repo)
    if not (repo / ".git").exists() and not repo.is_dir():
        raise UsageError(f"--repo {repo}: not a directory")
    out = _path(args.out, conf, "out") or default_out(repo, getattr(args, "lane", None))
    # The commit, resolved once: an unknown --base is a usage error (64), and the check runs on
    # exactly the commit whose pins were validated here.
    base = resolve_rev(repo, args.base)
    config = base_config(repo, base).config
    attributes = base_attribute_problems(repo, base, config)
    if attributes:  # the tree scored would not be the tree merged
        raise ConfigError(attributes)
    inputs = _inputs(args, conf)
    check_out_dir(out, repo=repo, config=config, inputs=inputs)
    if getattr(args, "junit", None) is not None:
        guard_output(args.junit, flag="--junit", repo=repo, config=config, inputs=inputs)
    return CheckSettings(
        repo=repo,
        base=base,
        patch=args.patch or NO_PATCH,
        draft_id=args.draft_id,
        drafter=args.drafter,
        signer=str(signer),
        executors=tuple(str(e) for e in executors),
        remote_executor=remote,
        second_pin=args.second_pin,
        clock=parse_clock(args.clock) if args.clock else None,
        out=out,
        signer_tls=tls_settings(args, conf, "signer"),
        executor_tls=tls_settings(args, conf, "executor"),
        remote_tls=tls_settings(args, conf, "remote"),
        operator_keyring=_path(args.operator_keyring, conf, "operator_keyring"),
        executor_keyring=_path(args.executor_keyring, conf, "executor_keyring"),
        executor_concurrency=concurrency,
        isolation=_isolation(args.isolation or conf.get("isolation") or "run"),
        judge=getattr(args, "judge", "on"),
        mutants=args.mutants,
        lane=lane if signer == from_lane else "",
        **_statements(args),
    )


def _inputs(args: argparse.Namespace, conf: dict[str, Any]) -> list[Path]:
    """Every file ``check`` reads besides the repository: no output may land on one."""
    given = [getattr(args, "patch", None), getattr(args, "second_pin", None)]
    keys = ("operator_keyring", "executor_keyring")
    given += [_path(getattr(args, k, None), conf, k) for k in keys]
    return [Path(p) for p in given if p is not None and Path(p) != NO_PATCH]


def default_out(repo: Path, lane: str | None) -> Path:
    """``--out`` when none is given: a new directory under the lane's state
    (``STATE/ledgers/<stamp>``) when the lane is up and its state lies outside ``repo``, else
    under the system's temp directory; never inside the target repository."""
    stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        settings = lane_settings_file(lane)
    except UsageError:
        settings = None
    if settings is not None and settings.is_file():
        state = settings.parent.resolve()
        top = repo.resolve()
        if not (state == top or state.is_relative_to(top)):
            return state / "ledgers" / stamp
    return Path(tempfile.gettempdir()) / f"patchgate-check-{stamp}"


def _lane_name(lane: str | None) -> str:
    """The lane whose settings ``check`` reads: ``--lane``, else ``local`` when it is up."""
    if lane is not None:
        return lane
    try:
        return DEFAULT_LANE if lane_settings_file(None).is_file() else ""
    except UsageError:
        return ""


def run(args: argparse.Namespace) -> int:
    """Run the gate; print the summary (or the receipt); return the verdict's exit code."""
    conf = check_defaults(args.lane)
    settings = settings_from_args(args, conf, lane=_lane_name(args.lane))
    if args.out is None and not {**conf, **env_settings()}.get("out") and not args.quiet:
        sys.stderr.write(f"patchgate: ledgers go to {settings.out} (no --out given)\n")
    check_report_flags(args, settings)  # a contradiction is a usage error before anything runs
    progress = Progress(verbose=bool(getattr(args, "verbose", False)), quiet=args.quiet)
    try:
        if args.self_test:
            tested = run_self_test(settings, progress)
        else:
            result = run_check(settings, progress)
    except PinErrors as exc:  # the base's pins, found invalid only against its tree (covers)
        raise ConfigError([str(e) for e in exc.errors]) from None
    except PinError as exc:
        raise ConfigError([str(exc)]) from None
    finally:
        progress.end()
    if args.self_test:
        return report_self_test(args, settings, tested)
    return report_check(args, settings, result)
