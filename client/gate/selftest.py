"""``patchgate check --self-test``: the suite on the base tree alone, before any patch is blamed.

No patch, no provenance, no admission and no credit: the base's fixtures are hashed and signed as
usual, every pinned property but ``external_probe`` (and those a valid freeze citation quarantines,
as in a check) runs ``runs`` times on the local executors, and
each run's sandbox log goes to ``runs/`` of the ledger directory (``--out``: the self-test writes
nothing else, and nothing into the repository: the suite runs on an extraction of the base). The
first line of its report says what happened (:data:`CAUSES`), and the exit code says which kind
of cause it was:

* 0 ``SELF-TEST PASSED``: every property passed every run;
* 2 ``SELF-TEST FAILED: fixtures do not match their pin`` (the base's fixture bytes against its
  own pin), or ``... an executor refused the request``;
* 4 ``SELF-TEST FAILED: the signer is unreachable``, or ``... a run came back without an
  outcome`` (an executor unreachable, a deadline, a sandbox that did not start);
* 78 ``SELF-TEST FAILED: the operator signature does not verify``, or ``... N properties did not
  pass on the base: <ids>`` (a collection or import error, a missing ``pythonpath``, a test that
  is simply red) — a setup problem for the operator, not a verdict on any patch.

No receipt is written: a self-test judges no patch. Its report is rendered from a receipt-shaped
summary that says so (``decision`` ``self_test``, never admitted).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client.analysis.patch.roles import layout_of
from client.analysis.patch.touched import unpinned_reads
from client.gate import steps
from client.gate.environment import EXECUTOR_ENVIRONMENT, executor_builder, suite_environment
from client.gate.evidence import locate_properties, write_run_logs
from client.gate.settings import CheckSettings
from client.gate.workspace import base_pins, tree_at
from client.verdict.flakes import quarantined
from client.verdict.receipt import ReceiptFacts, build_receipt
from client.verdict.stability import assess_all
from patchgate import git
from patchgate.evidence import Evidence
from patchgate.ledgers import Receipt, now_utc
from patchgate.pins import PinSet, ProjectConfig, PropertyPin
from patchgate.receipt_parts import TransportEntry
from patchgate.vocabulary import Posture

__all__ = ["CAUSES", "SelfTestResult", "import_hint", "run_self_test"]

_SCORABLE = ("match", "not_applicable")
EXIT_PASSED, EXIT_UNSCORED, EXIT_UNAVAILABLE, EXIT_BROKEN = 0, 2, 4, 78
#: cause -> (exit code, the words after ``SELF-TEST FAILED: ``); ``passed`` is the one success.
CAUSES = {
    "passed": (EXIT_PASSED, ""),
    "fixtures": (EXIT_UNSCORED, "fixtures do not match their pin"),
    "refused": (EXIT_UNSCORED, "an executor refused the request"),
    "signer": (EXIT_UNAVAILABLE, "the signer is unreachable"),
    "transport": (EXIT_UNAVAILABLE, "a run came back without an outcome"),
    "signature": (EXIT_BROKEN, "the operator signature does not verify"),
    "properties": (EXIT_BROKEN, "properties did not pass on the base"),
}
_POSTURE: dict[int, Posture] = {
    EXIT_PASSED: "human_review",
    EXIT_BROKEN: "reject_property_miss",
    EXIT_UNSCORED: "reject_unscored",
    EXIT_UNAVAILABLE: "unavailable",
}


@dataclass(kw_only=True)
class SelfTestResult:
    """What the self-test found: the exit code, the report's receipt-shaped summary, why."""

    exit_code: int
    receipt: Receipt
    reasons: tuple[str, ...] = ()
    evidence: Evidence = field(default_factory=Evidence)
    verdict: str = ""  # the report's first line: SELF-TEST PASSED or SELF-TEST FAILED: <cause>


@dataclass(kw_only=True)
class _Seen:
    """What the receipt-shaped summary of a self-test shows."""

    fixture_status: str = ""
    fixture_digest: str = ""
    lanes: dict[str, Any] = field(default_factory=dict)
    transport: list[TransportEntry] = field(default_factory=list)
    environment: str = ""
    source_roots_src: bool = False

    def result(
        self, cause: str, reasons: list[str], evidence: Evidence, detail: str = ""
    ) -> SelfTestResult:
        code, words = CAUSES[cause]
        verdict = "SELF-TEST PASSED" if cause == "passed" else f"SELF-TEST FAILED: {words}"
        summary = build_receipt(
            ReceiptFacts(
                review_clock=now_utc(),
                patch_sha256="",
                decision="self_test",
                posture=_POSTURE[code],
                admit=False,
                fixture_status=self.fixture_status,
                fixture_digest=self.fixture_digest,
                lanes=self.lanes,
                transport=self.transport,
                environment=self.environment,
            )
        )
        return SelfTestResult(
            exit_code=code,
            receipt=summary,
            reasons=tuple(reasons),
            evidence=evidence,
            verdict=verdict + detail,
        )


def _suite(s: CheckSettings, pins: PinSet, root: Path) -> tuple[list[PropertyPin], dict[str, str]]:
    """What runs (every property but ``external_probe``) and what a valid freeze citation holds
    back, exactly as in a check."""
    reports = steps.classify(root, pins.properties)
    held = quarantined(
        properties=pins.properties,
        assertion_classes={pid: r.assertion_class for pid, r in reports.items()},
        citations={pid: r.freeze_ids for pid, r in reports.items() if r.freeze_ids},
        flakes=pins.flakes,
        clock=s.clock or dt.datetime.now(dt.UTC),
    )
    runs = [p for p in pins.properties if p.property_class != "external_probe" and p.id not in held]
    return runs, held


_NO_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def _under(root: str, dotted: str) -> str:
    """The repository path of a dotted name under a source root (``""`` is the top)."""
    return "/".join([*([root] if root else []), *dotted.split(".")])


def _uncommitted_module(repo: Path, rev: str, roots: Sequence[str], dotted: str) -> str | None:
    """The path of module ``dotted`` under a source root when the working tree has it and the
    revision does not (a generated ``_version.py``, a file git ignores), with why; else None."""
    for root in roots:
        base = _under(root, dotted)
        for path in (f"{base}.py", f"{base}/__init__.py"):
            if not (repo / path).is_file():
                continue
            if git.run(repo, "cat-file", "-e", f"{rev}:{path}").returncode == 0:
                return None
            ignored = git.run(repo, "check-ignore", "-q", "--", path).returncode == 0
            return f"{path} ({'git ignores it' if ignored else 'never committed'})"
    return None


def _committed_package(repo: Path, rev: str, roots: Sequence[str], name: str) -> str | None:
    """The directory of top-level package ``name`` under a source root in ``rev``, or None."""
    for root in roots:
        path = _under(root, name)
        if git.run(repo, "cat-file", "-e", f"{rev}:{path}/__init__.py").returncode == 0:
            return path
    return None


def import_hint(
    texts: Sequence[str],
    config: ProjectConfig,
    *,
    has_src: bool,
    repo: Path | None = None,
    rev: str | None = None,
) -> str | None:
    """The likely cause of an import error on the base, in one line (None: no import error).
    With ``repo`` and ``rev``: a module the working tree has and the revision lacks is named."""
    names = list(dict.fromkeys(m.group(1) for t in texts for m in _NO_MODULE.finditer(t)))
    if not names:
        return None
    source_roots = config.roots(has_src=has_src)
    if repo is not None and rev is not None:
        for dotted in names:
            missing = _uncommitted_module(repo, rev, source_roots, dotted)
            if missing is not None:
                return (
                    f"cannot import {dotted!r} in the sandbox: {missing} is in the working tree "
                    f"but not in {rev}, and the suite runs on the committed tree; commit it (git "
                    "add -f for an ignored, generated file such as a version file or compiled "
                    "catalogs)"
                )
    dotted = names[0]
    name = dotted.split(".")[0]
    roots = ", ".join(r or "." for r in source_roots)
    if repo is not None and rev is not None and "." in dotted:
        home = _committed_package(repo, rev, source_roots, name)
        if home is not None:
            return (
                f"cannot import {dotted!r} in the sandbox: the package {name} is in {home} "
                f"but {rev} has no module {dotted}; a file the project's build generates "
                "(a version file, compiled catalogs) must be committed for the sandbox"
            )
    if config.environment is None:
        return (
            f"cannot import {name!r} in the sandbox: the base configures no environment, so "
            "the suite runs with the executor's own Python; name the tests' dependencies in "
            "a lock ([tool.patchgate.environment] requirements; patchgate init "
            f"--requirements) — or, if {name} is the project's own package, check "
            f"source_roots ({roots})"
        )
    return (
        f"cannot import {name!r} in the sandbox: it is neither in the environment's lock "
        f"({config.environment.requirements}) nor under the source roots ({roots})"
    )


def run_self_test(s: CheckSettings, say: Callable[[str], None]) -> SelfTestResult:
    """Run the base's suite; see the module docstring for the exit codes."""
    s.out.mkdir(parents=True, exist_ok=True)
    pins = base_pins(s.repo, s.base)
    with tree_at(s.repo, s.base) as root:
        suite, held = _suite(s, pins, root)
        layout = layout_of(root, pins)
        for pid, why in held.items():
            say(f"{pid}: {why}")
        evidence = Evidence(properties=locate_properties(root, suite))
        fixture = steps.fixture_step(root, pins, s.out)
        seen = _Seen(fixture_status=fixture.status, fixture_digest=fixture.digest)
        if fixture.status not in _SCORABLE or fixture.manifest is None:
            return seen.result("fixtures", list(fixture.reasons), evidence)
        seen.source_roots_src = (root / "src").is_dir()
        builder = executor_builder(s.executors, s.executor_tls)
        env = suite_environment(s.repo, s.base, pins.config, root, say, builder=builder)
        seen.environment = env or EXECUTOR_ENVIRONMENT
        manifest = dataclasses.replace(fixture.manifest, environment_digest=env)
        sig = steps.signature_step(s, manifest, s.out)
        if sig.transport is not None:
            return seen.result("signer", list(sig.reasons), evidence)
        if sig.envelope is None:
            return seen.result("signature", [sig.problem or "no operator signature"], evidence)
        signed = steps.signed_suite(s, sig, fixture.digest, root, pins.config.fixture_root)
        lane = steps.execute(s, signed, "local", suite, say)
    write_run_logs(s.out, lane.logs)
    # Which files each property's run read comes from the judge's audit hook (issue 20); without
    # that record (None, every run today) the self-test cannot tell, and warns about nothing.
    for warning in unpinned_reads(None, frozenset(pins.fixtures.files), layout) or ():
        say(f"warning: {warning}")
    stab = assess_all([p.id for p in suite], lane.outcomes, s.runs)
    evidence = Evidence(
        outcomes=tuple(lane.outcomes), logs=tuple(lane.logs), properties=evidence.properties
    )
    statuses = {pid: v.status for pid, v in stab.items()}
    seen.lanes = {"local": lane.summary(statuses)}
    seen.transport = [t.to_json() for t in lane.transport]
    reasons = [*lane.refusals, *(f"{pid}: {why}" for pid, why in held.items())]
    if lane.refusals:
        return seen.result("refused", reasons, evidence)
    if lane.transport or any(v.status == "incomplete" for v in stab.values()):
        return seen.result("transport", reasons, evidence)
    broken = sorted(pid for pid, v in stab.items() if not v.passed_both)
    reasons += [f"{pid} did not pass every run on the base: {statuses[pid]}" for pid in broken]
    hint = import_hint(
        [o.failure_signature for o in lane.outcomes if o.property_id in broken]
        + [t for log in lane.logs for t in (log.stdout, log.stderr)],
        pins.config,
        has_src=seen.source_roots_src,
        repo=s.repo,
        rev=s.base,
    )
    if broken and hint:
        reasons.append(hint)
    if not broken:
        return seen.result("passed", reasons, evidence)
    return seen.result("properties", reasons, evidence, f" ({len(broken)}: {', '.join(broken)})")
