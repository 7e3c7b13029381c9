"""Signed run results: the executor's ExecutionReport in an in-toto test-result Statement (DSSE).

The statement's subject is ``{"name": request_id, "digest": {"sha256": observed_fixture_digest}}``;
its predicate holds the report (``MessageToDict``, proto field names) under ``"report"`` plus the
in-toto test-result fields ``result``, ``passedTests`` and ``failedTests``. Only this predicate type
is ever signed with an executor key: ``sign_result`` refuses any other role, and there is no way to
hand it a fixture manifest.

The predicate also carries a ``binding`` (issue 43; older fields unchanged): the digest of the
workspace tree the runs mounted (:func:`workspace_digest`: every file's sha256, length and path, so
it binds the base tree *and* the patch applied to it) and, for mutation requests, each variant's
path, source sha256 and scope. A verifier that rebuilds the tree from ``--base`` and ``--patch``
recomputes both (``patchgate verify-receipt --recompute``, docs/reference/receipt.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from google.protobuf import json_format

from patchgate.envelope import (
    TEST_RESULT_PREDICATE_TYPE,
    Envelope,
    build_statement,
    parse_statement,
    sign_envelope,
    verify_envelope,
)
from patchgate.errors import EnvelopeError, VerificationError
from patchgate.keys import Keyring, Signer
from patchgate.v1 import common_pb2, executor_pb2

__all__ = [
    "BINDING_SCHEMA",
    "VerifiedResult",
    "result_predicate",
    "result_statement",
    "run_binding",
    "sign_result",
    "verify_result",
    "workspace_digest",
]

BINDING_SCHEMA = "patchgate/run-binding/v1"


def workspace_digest(entries: Iterable[tuple[str, str, int]]) -> str:
    """sha256 of ``"patchgate-workspace-v1\n"`` then ``"file <sha256> <size> <path>\n"`` per
    (path, sha256, size), in order of the paths' UTF-8 bytes (the fixture digest's form:
    docs/reference/digest.md)."""
    lines = ["patchgate-workspace-v1\n"]
    for path, sha, size in sorted(entries, key=lambda e: e[0].encode()):
        lines.append(f"file {sha} {int(size)} {path}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def run_binding(
    workspace: Iterable[tuple[str, str, int]],
    variants: Sequence[tuple[str, bytes, Sequence[str]]] = (),
    *,
    properties: Sequence[tuple[str, Sequence[str]]] = (),
    targets: Sequence[tuple[str, int, int, str]] = (),
    source_roots: Sequence[str] = (),
    production: Sequence[str] = (),
) -> dict[str, Any]:
    """What a signed result binds besides the report: the workspace tree's digest; each variant
    (path, sha256 of its source, the properties whose outcomes it has), in request order (an
    outcome's ``variant`` is the 1-based index into this list); each property's argv (an id
    cannot be made to name another test); the code targets whose execution ``executed`` reports;
    the judge's source roots and production names."""
    return {
        "schema": BINDING_SCHEMA,
        "workspace_digest": workspace_digest(workspace),
        "variants": [
            {"path": path, "sha256": hashlib.sha256(source).hexdigest(), "scope": list(scope)}
            for path, source, scope in variants
        ],
        "properties": [[pid, list(argv)] for pid, argv in properties],
        "targets": [[path, first, last, name] for path, first, last, name in targets],
        "source_roots": list(source_roots),
        "production": list(production),
    }


def _run_name(o: common_pb2.RunOutcome) -> str:
    return f"{o.property_id}#{o.run_index}"


def result_predicate(
    report: executor_pb2.ExecutionReport, binding: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The test-result predicate of ``report`` (and its ``binding``, when given)."""
    passed = [_run_name(o) for o in report.outcomes if o.outcome == common_pb2.OUTCOME_PASS]
    failed = [_run_name(o) for o in report.outcomes if o.outcome != common_pb2.OUTCOME_PASS]
    ok = bool(report.outcomes) and not failed and not report.transport
    out: dict[str, Any] = {
        "result": "PASSED" if ok else "FAILED",
        "passedTests": passed,
        "failedTests": failed,
        "report": json_format.MessageToDict(report, preserving_proto_field_name=True),
    }
    if binding is not None:
        out["binding"] = binding
    return out


def result_statement(
    report: executor_pb2.ExecutionReport, binding: dict[str, Any] | None = None
) -> bytes:
    """The in-toto Statement bytes of ``report``."""
    return build_statement(
        report.request_id,
        report.observed_fixture_digest,
        TEST_RESULT_PREDICATE_TYPE,
        result_predicate(report, binding),
    )


def sign_result(
    report: executor_pb2.ExecutionReport, signer: Signer, binding: dict[str, Any] | None = None
) -> Envelope:
    """Sign ``report`` (and what it ran on, ``binding``) with an executor key; any other role is
    refused."""
    if signer.role != "executor":
        raise VerificationError(
            f"run results are signed only by an executor key, not {signer.role!r}"
        )
    return sign_envelope(result_statement(report, binding), signer)


class VerifiedResult:
    """A result envelope whose executor signature verified; the report parsed from it."""

    def __init__(
        self,
        report: executor_pb2.ExecutionReport,
        keyid: str,
        subject_digest: str,
        binding: dict[str, Any] | None = None,
    ) -> None:
        self.report = report
        self.keyid = keyid
        self.subject_digest = subject_digest
        #: what the runs ran on (:func:`run_binding`); empty from an executor older than it
        self.binding: dict[str, Any] = binding or {}


def verify_result(envelope: Envelope, executor_keyring: Keyring) -> VerifiedResult:
    """Verify by an executor key, then parse the statement and the report inside it."""
    verified = verify_envelope(envelope, executor_keyring, "executor")
    obj = parse_statement(verified.payload, TEST_RESULT_PREDICATE_TYPE)
    subject = obj["subject"][0]
    digest = (
        subject.get("digest", {}).get("sha256", "")
        if isinstance(subject.get("digest"), dict)
        else ""
    )
    raw = obj["predicate"].get("report")
    if not isinstance(raw, dict):
        raise EnvelopeError("result statement: predicate.report must be an object")
    report = executor_pb2.ExecutionReport()
    try:
        json_format.ParseDict(raw, report)
    except json_format.ParseError as exc:
        raise EnvelopeError(f"result statement: malformed report: {exc}") from None
    if subject.get("name") != report.request_id or digest != report.observed_fixture_digest:
        raise EnvelopeError("result statement: subject does not match the report")
    binding = obj["predicate"].get("binding")
    if binding is not None and not isinstance(binding, dict):
        raise EnvelopeError("result statement: predicate.binding must be an object")
    return VerifiedResult(report, verified.keyid, str(digest), binding)
