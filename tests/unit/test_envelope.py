"""DSSE envelopes: PAE, sign -> verify, tampering, roles from the keyring only, junk input."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchgate.digest import Manifest
from patchgate.envelope import (
    FIXTURE_PREDICATE_TYPE,
    PAYLOAD_TYPE,
    Envelope,
    Sig,
    build_statement,
    fixture_statement,
    pae,
    parse_fixture_statement,
    parse_statement,
    sign_envelope,
    verify_envelope,
    verify_fixture_envelope,
)
from patchgate.errors import EnvelopeError, VerificationError
from patchgate.keys import Keyring, Signer
from tests.strategies import json_values, junk_json_bytes, manifests

OPERATOR = Signer.generate("operator")
EXECUTOR = Signer.generate("executor")
RING = Keyring([OPERATOR.keyring_entry(), EXECUTOR.keyring_entry()])


def test_pae_dsse_spec_vector() -> None:
    """The DSSE spec's PAE example."""
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_pae_counts_utf8_bytes_of_non_ascii_type() -> None:
    """Lengths are byte lengths: 'tÿpé/✓' is 10 UTF-8 bytes, not 6 characters."""
    ptype = "tÿpé/✓"
    assert pae(ptype, b"x") == b"DSSEv1 10 " + ptype.encode() + b" 1 x"


@given(st.binary(max_size=512))
@settings(max_examples=50)
def test_sign_verify_round_trip(payload: bytes) -> None:
    """A payload signed by an operator key verifies as operator and comes back unchanged."""
    env = sign_envelope(payload, OPERATOR)
    again = Envelope.from_json(json.loads(json.dumps(env.to_json())))
    verified = verify_envelope(again, RING, "operator")
    assert (verified.payload, verified.keyid, verified.role) == (
        payload,
        OPERATOR.keyid,
        "operator",
    )
    assert Envelope.from_proto(env.to_proto()) == env


@given(st.binary(min_size=1, max_size=256), st.data())
@settings(max_examples=50)
def test_payload_tampering_detected(payload: bytes, data: st.DataObject) -> None:
    """Flipping any payload bit breaks verification."""
    env = sign_envelope(payload, OPERATOR)
    i = data.draw(st.integers(0, len(payload) - 1))
    bit = data.draw(st.integers(0, 7))
    tampered = bytearray(payload)
    tampered[i] ^= 1 << bit
    with pytest.raises(VerificationError):
        verify_envelope(dataclasses.replace(env, payload=bytes(tampered)), RING, "operator")


def test_signature_tampering_detected() -> None:
    """A changed signature byte does not verify."""
    env = sign_envelope(b"payload", OPERATOR)
    sig = bytearray(env.signatures[0].sig)
    sig[0] ^= 1
    bad = dataclasses.replace(env, signatures=(Sig(OPERATOR.keyid, bytes(sig)),))
    with pytest.raises(VerificationError):
        verify_envelope(bad, RING, "operator")


def test_payload_type_is_bound_by_signature() -> None:
    """Signing under another payloadType does not verify as the in-toto type."""
    env = sign_envelope(b"payload", OPERATOR, payload_type="application/other")
    with pytest.raises(VerificationError):
        verify_envelope(dataclasses.replace(env, payload_type=PAYLOAD_TYPE), RING, "operator")


def test_executor_signature_refused_as_operator() -> None:
    """A valid signature by an executor key is refused where an operator key is required."""
    env = sign_envelope(b"payload", EXECUTOR)
    with pytest.raises(VerificationError, match="not an operator key"):
        verify_envelope(env, RING, "operator")


def test_keyid_hint_is_ignored() -> None:
    """Claiming the operator's keyid does not make an executor signature an operator one; a wrong
    hint on a real operator signature still verifies (the keyring decides)."""
    forged = sign_envelope(b"payload", EXECUTOR)
    forged = dataclasses.replace(
        forged, signatures=(Sig(OPERATOR.keyid, forged.signatures[0].sig),)
    )
    with pytest.raises(VerificationError):
        verify_envelope(forged, RING, "operator")
    real = sign_envelope(b"payload", OPERATOR)
    real = dataclasses.replace(real, signatures=(Sig("nonsense", real.signatures[0].sig),))
    assert verify_envelope(real, RING, "operator").keyid == OPERATOR.keyid


def test_unknown_key_refused() -> None:
    """A key that is not in the keyring verifies nothing."""
    env = sign_envelope(b"payload", Signer.generate("operator"))
    with pytest.raises(VerificationError, match="no signature verifies"):
        verify_envelope(env, RING, "operator")


def test_no_signature_refused() -> None:
    """An envelope without signatures is refused."""
    env = Envelope(payload=b"x", payload_type=PAYLOAD_TYPE, signatures=())
    with pytest.raises(VerificationError):
        verify_envelope(env, RING, "operator")


@given(manifests())
@settings(max_examples=30)
def test_fixture_statement_round_trip(m: Manifest) -> None:
    """A fixture statement signed by the operator verifies to the same manifest and digest."""
    env = sign_envelope(fixture_statement(m, OPERATOR, "2026-09-10T00:00:00Z"), OPERATOR)
    st_ = verify_fixture_envelope(env, RING)
    assert st_.digest == m.digest()
    assert st_.manifest.digest() == m.digest()
    assert (st_.keyid, st_.role, st_.issued_at) == (
        OPERATOR.keyid,
        "operator",
        "2026-09-10T00:00:00Z",
    )


def test_fixture_statement_subject_must_match_manifest() -> None:
    """A statement whose subject digest is not the manifest's digest is refused."""
    m = Manifest(pin_id="p", seed=1, clock_bound_ms=1)
    pred = {"manifest": m.to_json(), "signer": {}, "issuedAt": ""}
    payload = build_statement("p", "0" * 64, FIXTURE_PREDICATE_TYPE, pred)
    with pytest.raises(EnvelopeError, match="subject"):
        parse_fixture_statement(payload)


def test_fixture_statement_with_a_precomputed_digest() -> None:
    """The signer passes the digest it already computed: the right one gives the same statement,
    a wrong one a statement every verifier refuses."""
    m = Manifest(pin_id="p", seed=1, clock_bound_ms=1, allowed_commands=(("python",),))
    t = "2026-09-10T00:00:00Z"
    assert fixture_statement(m, OPERATOR, t, m.digest()) == fixture_statement(m, OPERATOR, t)
    with pytest.raises(EnvelopeError, match="subject"):
        parse_fixture_statement(fixture_statement(m, OPERATOR, t, "0" * 64))


def test_fixture_envelope_by_executor_refused() -> None:
    """A fixture statement signed with an executor key is refused (reject_fixture_role)."""
    m = Manifest(pin_id="p", seed=1, clock_bound_ms=1)
    env = sign_envelope(fixture_statement(m, EXECUTOR, ""), EXECUTOR)
    with pytest.raises(VerificationError):
        verify_fixture_envelope(env, RING)


@given(json_values)
def test_envelope_json_junk_raises_envelope_error(obj: object) -> None:
    """Envelope.from_json on any JSON value: an Envelope or EnvelopeError, nothing else."""
    with contextlib.suppress(EnvelopeError):
        Envelope.from_json(obj)


@given(st.text(max_size=40))
def test_envelope_bad_base64_raises_envelope_error(text: str) -> None:
    """Non-base64 payload or signature text is an EnvelopeError."""
    for obj in (
        {"payload": text + "!", "payloadType": PAYLOAD_TYPE, "signatures": []},
        {"payload": "", "payloadType": PAYLOAD_TYPE, "signatures": [{"sig": text + "é"}]},
    ):
        with pytest.raises(EnvelopeError):
            Envelope.from_json(obj)


@given(junk_json_bytes)
def test_statement_junk_raises_envelope_error(payload: bytes) -> None:
    """parse_statement and parse_fixture_statement on junk: EnvelopeError only."""
    with pytest.raises(EnvelopeError):
        parse_fixture_statement(payload)
    with contextlib.suppress(EnvelopeError):
        parse_statement(payload, FIXTURE_PREDICATE_TYPE)


@given(json_values)
def test_fixture_statement_with_junk_predicate_raises_envelope_error(pred: object) -> None:
    """A well-formed statement around a junk manifest is an EnvelopeError."""
    payload = build_statement("p", "0" * 64, FIXTURE_PREDICATE_TYPE, {"manifest": pred})
    with pytest.raises(EnvelopeError):
        parse_fixture_statement(payload)


def test_envelope_json_shape() -> None:
    """to_json is the standard DSSE JSON form."""
    env = sign_envelope(b"hi", OPERATOR)
    obj = env.to_json()
    assert obj["payload"] == base64.b64encode(b"hi").decode()
    assert obj["payloadType"] == PAYLOAD_TYPE
    assert obj["signatures"][0]["keyid"] == OPERATOR.keyid
