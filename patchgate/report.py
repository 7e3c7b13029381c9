"""Signed run results: the executor's ExecutionReport in an in-toto test-result Statement (DSSE).

The statement's subject is ``{"name": request_id, "digest": {"sha256": observed_fixture_digest}}``;
its predicate holds the report (``MessageToDict``, proto field names) under ``"report"`` plus the
in-toto test-result fields ``result``, ``passedTests`` and ``failedTests``. Only this predicate type
is ever signed with an executor key: ``sign_result`` refuses any other role, and there is no way to
hand it a fixture manifest.
"""

from __future__ import annotations

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
    "VerifiedResult",
    "result_predicate",
    "result_statement",
    "sign_result",
    "verify_result",
]


def _run_name(o: common_pb2.RunOutcome) -> str:
    return f"{o.property_id}#{o.run_index}"


def result_predicate(report: executor_pb2.ExecutionReport) -> dict[str, Any]:
    """The test-result predicate of ``report``."""
    passed = [_run_name(o) for o in report.outcomes if o.outcome == common_pb2.OUTCOME_PASS]
    failed = [_run_name(o) for o in report.outcomes if o.outcome != common_pb2.OUTCOME_PASS]
    ok = bool(report.outcomes) and not failed and not report.transport
    return {
        "result": "PASSED" if ok else "FAILED",
        "passedTests": passed,
        "failedTests": failed,
        "report": json_format.MessageToDict(report, preserving_proto_field_name=True),
    }


def result_statement(report: executor_pb2.ExecutionReport) -> bytes:
    """The in-toto Statement bytes of ``report``."""
    return build_statement(
        report.request_id,
        report.observed_fixture_digest,
        TEST_RESULT_PREDICATE_TYPE,
        result_predicate(report),
    )


def sign_result(report: executor_pb2.ExecutionReport, signer: Signer) -> Envelope:
    """Sign ``report`` with an executor key; any other role is refused."""
    if signer.role != "executor":
        raise VerificationError(
            f"run results are signed only by an executor key, not {signer.role!r}"
        )
    return sign_envelope(result_statement(report), signer)


class VerifiedResult:
    """A result envelope whose executor signature verified; the report parsed from it."""

    def __init__(
        self, report: executor_pb2.ExecutionReport, keyid: str, subject_digest: str
    ) -> None:
        self.report = report
        self.keyid = keyid
        self.subject_digest = subject_digest


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
    return VerifiedResult(report, verified.keyid, str(digest))
