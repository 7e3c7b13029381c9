"""Envelope, statement and keyring parsing fed junk: a result or the project's own error
(EnvelopeError / VerificationError / KeyringError), never a bare exception or a hang. The
statement parsers are also reached *behind a valid operator signature*, where junk must still be
refused cleanly."""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchgate.envelope import (
    FIXTURE_PREDICATE_TYPE,
    TEST_RESULT_PREDICATE_TYPE,
    Envelope,
    fixture_statement,
    parse_fixture_statement,
    parse_statement,
    sign_envelope,
    verify_fixture_envelope,
)
from patchgate.errors import EnvelopeError, KeyringError
from patchgate.keys import Keyring, Signer
from tests.strategies import json_values, junk_json_bytes, manifests, sha256_hex

FUZZ = settings(max_examples=250, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
OPERATOR = Signer.generate("operator")
RING = Keyring([OPERATOR.keyring_entry()])

_b64 = st.binary(max_size=80).map(lambda b: base64.b64encode(b).decode())
_val = json_values | _b64 | st.text(max_size=20)
_sig = st.fixed_dictionaries({"keyid": sha256_hex | _val, "sig": _b64 | _val}) | _val
envelopes_json = st.fixed_dictionaries(
    {"payload": _b64 | _val, "payloadType": st.just("application/vnd.in-toto+json") | _val,
     "signatures": st.lists(_sig, max_size=3) | _val},
) | json_values  # fmt: skip


@st.composite
def statements(draw: st.DrawFn) -> bytes:
    """Near-valid in-toto statements: right keys, junk values; or a real one, one field swapped."""
    real = json.loads(fixture_statement(draw(manifests()), OPERATOR, "2026-09-10T12:00:00Z"))
    if draw(st.booleans()):
        obj: Any = real
        path = draw(
            st.lists(
                st.sampled_from(
                    [
                        "subject",
                        "predicate",
                        "0",
                        "digest",
                        "manifest",
                        "files",
                        "seed",
                        "sha256",
                        "name",
                    ]
                ),
                max_size=3,
            )
        )
        target = obj
        for key in path:  # walk down while the key exists, then replace that value with junk
            nxt = (
                target[int(key)]
                if isinstance(target, list) and key == "0" and target
                else (target.get(key) if isinstance(target, dict) else None)
            )
            if nxt is None:
                break
            if isinstance(target, dict):
                target[key] = nxt = nxt if path[-1] != key else draw(_val)
            target = nxt
        else:
            obj["predicateType"] = draw(st.just(FIXTURE_PREDICATE_TYPE) | _val)
        return json.dumps(obj).encode()
    return json.dumps({
        "_type": draw(st.just("https://in-toto.io/Statement/v1") | _val),
        "subject": draw(st.lists(_val, max_size=2) | _val),
        "predicateType": draw(st.just(FIXTURE_PREDICATE_TYPE) | _val),
        "predicate": draw(_val),
    }).encode()  # fmt: skip


@FUZZ
@given(obj=envelopes_json)
def test_envelope_from_json_junk_is_an_envelope_error(obj: object) -> None:
    try:
        env = Envelope.from_json(obj)
    except EnvelopeError:
        return
    assert Envelope.from_json(env.to_json()) == env


@FUZZ
@given(obj=envelopes_json)
def test_verifying_a_junk_envelope_is_an_envelope_error(obj: object) -> None:
    try:
        verify_fixture_envelope(Envelope.from_json(obj), RING)
    except EnvelopeError:  # VerificationError is an EnvelopeError
        return
    raise AssertionError("junk verified")


@FUZZ
@given(payload=junk_json_bytes | statements(), ptype=st.sampled_from(
    [FIXTURE_PREDICATE_TYPE, TEST_RESULT_PREDICATE_TYPE]))  # fmt: skip
def test_statement_parsers_on_junk_raise_envelope_error(payload: bytes, ptype: str) -> None:
    with contextlib.suppress(EnvelopeError):
        parse_statement(payload, ptype)
    with contextlib.suppress(EnvelopeError):
        parse_fixture_statement(payload)


@FUZZ
@given(payload=junk_json_bytes | statements())
def test_junk_behind_a_valid_operator_signature_is_refused_cleanly(payload: bytes) -> None:
    """The signature verifies, so the statement parser is reached: it must refuse, not crash."""
    env = sign_envelope(payload, OPERATOR)
    try:
        st_ = verify_fixture_envelope(env, RING)
    except EnvelopeError:
        return
    assert st_.manifest.digest() == st_.digest  # accepted only when the digest recomputes


_entry = st.fixed_dictionaries({
    "keyid": sha256_hex | st.just(OPERATOR.keyid) | _val,
    "role": st.sampled_from(["operator", "executor", "client", ""]) | _val,
    "public_key_pem": st.just(OPERATOR.public_key_pem()) | st.just(
        Signer.generate("executor").public_key_pem()) | st.text(max_size=40) | _val,
})  # fmt: skip
keyrings = st.fixed_dictionaries({"keys": st.lists(_entry | _val, max_size=3) | _val}) | json_values


@FUZZ
@given(obj=keyrings)
def test_keyring_junk_is_a_keyring_error(obj: object) -> None:
    try:
        ring = Keyring.from_json(obj)
    except KeyringError:
        return
    assert Keyring.from_json(ring.to_json()).to_json() == ring.to_json()
