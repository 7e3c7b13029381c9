"""Bounded renderings of request values, for refusal reasons, audit lines and log lines.

A request may carry megabytes in one string (up to the message limit); what the signer writes
about it must not grow with it. ``excerpt`` shows at most ``VALUE_BYTES`` UTF-8 bytes of a value
(its ``repr``, so control characters are escaped) and, when it cut, the value's original length.
``cap`` cuts any text to a budget counted in bytes of its JSON string encoding (escapes
included), which is what an audit line pays; it never raises, whatever the text holds.
"""

from __future__ import annotations

__all__ = ["REASON_BYTES", "VALUE_BYTES", "cap", "excerpt", "json_bytes"]

VALUE_BYTES = 256  # of the offending value shown in a reason
REASON_BYTES = 400  # of a whole refusal reason, as JSON (the audit line budget is 1 KiB)


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def excerpt(value: str, limit: int = VALUE_BYTES) -> str:
    """``repr(value)`` when it fits in ``limit`` UTF-8 bytes, else its first ``limit`` bytes,
    ``…`` and ``(N bytes)`` with the value's full length."""
    shown = repr(value[: limit + 1])  # never more than limit+1 characters are rendered
    data = shown.encode("utf-8")  # repr escapes lone surrogates: always encodable
    if len(value) <= limit and len(data) <= limit:
        return shown
    return f"{data[:limit].decode('utf-8', 'ignore')}… ({_utf8_len(value)} bytes)"


def _char_json_bytes(ch: str) -> int:
    if ch in '"\\':
        return 2
    if ch < " ":
        return 6  # \u00XX (an upper bound for \n, \t and friends)
    return len(ch.encode("utf-8", "surrogatepass"))


def json_bytes(text: str) -> int:
    """Bytes of ``text`` inside a JSON string (``ensure_ascii`` off), escapes included."""
    return sum(_char_json_bytes(ch) for ch in text)


def cap(text: str, limit: int = REASON_BYTES) -> str:
    """``text`` if its JSON encoding fits in ``limit`` bytes, else a prefix that does, followed by
    ``… (N bytes)``. Lone surrogates are replaced by escapes first, so the result always encodes."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= limit // 6 or json_bytes(text) <= limit:
        return text
    marker = f"… ({_utf8_len(text)} bytes)"
    budget = limit - json_bytes(marker)
    used = end = 0
    for ch in text:
        used += _char_json_bytes(ch)
        if used > budget:
            break
        end += 1
    return text[:end] + marker
