"""The signer's manifest validator (signerd.canonical) fed arbitrary manifests: a canonical
Manifest or InvalidArgument, never a bare exception or a hang; an accepted manifest digests the
same as the client's own ``Manifest`` of the same content."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchgate.digest import Manifest, command_text
from signerd.canonical import LIMITS, RawFile, RawManifest, validate
from signerd.errors import InvalidArgument
from tests.strategies import manifests, safe_paths, sha256_hex

FUZZ = settings(max_examples=300, deadline=1000, suppress_health_check=[HealthCheck.too_slow])

_text = st.text(max_size=24)
_paths = (
    safe_paths
    | _text
    | st.sampled_from(
        [
            "../x",
            "/abs",
            "a//b",
            "a/./b",
            "a\\b",
            "a\x00b",
            "a\nb",
            "",
            ".",
            "fixtures/" + "x" * 1100,
        ]
    )
)
_hex = sha256_hex | sha256_hex.map(str.upper) | _text
_ints = st.integers(-(2**64), 2**64) | st.sampled_from(
    [0, -1, 1, 2**32 - 1, 2**32, 2**40, 2**40 + 1]
)
_argv = st.lists(_text | st.just("x" * 5000), max_size=4)

raw_manifests = st.builds(
    RawManifest,
    pin_id=st.from_regex(r"[A-Za-z0-9._:-]{1,12}", fullmatch=True) | _text | st.just("p" * 300),
    algorithm=st.sampled_from(["sha256", "SHA256", "sha512", ""]) | _text,
    files=st.lists(st.builds(RawFile, _paths, _hex, _ints), max_size=6),
    seed=_ints,
    clock_bound_ms=_ints,
    allowed_commands=st.lists(_argv, max_size=4),
)


@FUZZ
@given(raw=raw_manifests)
def test_any_raw_manifest_is_canonical_or_invalid_argument(raw: RawManifest) -> None:
    try:
        manifest = validate(raw)
    except InvalidArgument as exc:
        reason = str(exc)
        assert reason  # the refusal names its reason
        return
    assert len(manifest.files) == len(raw.files)  # duplicates were refused, not merged
    assert 0 <= manifest.seed <= LIMITS.max_seed
    assert manifest.digest() == Manifest(
        pin_id=raw.pin_id, files=dict(manifest.files), seed=raw.seed,
        clock_bound_ms=raw.clock_bound_ms, allowed_commands=manifest.allowed_commands,
    ).digest()  # fmt: skip


@FUZZ
@given(m=manifests().filter(lambda m: bool(m.allowed_commands)))
def test_every_valid_client_manifest_is_accepted_with_the_same_digest(m: Manifest) -> None:
    raw = RawManifest(
        pin_id=m.pin_id,
        algorithm="sha256",
        files=[RawFile(p, e.sha256, e.size) for p, e in sorted(m.files.items())],
        seed=m.seed,
        clock_bound_ms=m.clock_bound_ms,
        allowed_commands=[list(c) for c in sorted(m.allowed_commands, key=command_text)],
    )
    try:
        assert validate(raw).digest() == m.digest()
    except InvalidArgument as exc:  # only a limit, or NUL (the pin loader refuses it too)
        reason = str(exc)
        assert any(w in reason for w in ("NUL", "size", "bytes", "limit", "at most")), reason


def test_oversize_manifest_is_refused() -> None:
    """More files than the documented limit: InvalidArgument, not an attempt to sign."""
    files = [RawFile(f"fixtures/{i:06d}", "0" * 64, 1) for i in range(LIMITS.max_files + 1)]
    raw = RawManifest(pin_id="p", algorithm="sha256", files=files, seed=1, clock_bound_ms=1,
                      allowed_commands=[["python"]])  # fmt: skip
    with pytest.raises(InvalidArgument, match="files"):
        validate(raw)
