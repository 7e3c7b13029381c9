"""A run's stdout/stderr tails (executord.sandbox.output): demultiplexed, capped, never trusted."""

from __future__ import annotations

import io
import struct

from executord.sandbox.output import OutputCapture, printable, pump_frames


def _frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(data)) + data


def test_frames_are_split_into_stdout_and_stderr() -> None:
    """Stream 1 is stdout, 2 is stderr, anything else is dropped."""
    cap = OutputCapture(100)
    raw = _frame(1, b"out1 ") + _frame(2, b"err") + _frame(3, b"??") + _frame(1, b"out2")
    pump_frames(io.BytesIO(raw).read, cap)
    assert cap.tails() == (b"out1 out2", b"err", 9, 3)
    assert cap.done.is_set()


def test_only_the_tail_is_kept_and_everything_is_counted() -> None:
    """A run printing far more than the cap keeps its last bytes and the total count."""
    cap = OutputCapture(1000)
    raw = b"".join(_frame(1, bytes([65 + i % 26]) * 4096) for i in range(500)) + _frame(1, b"END")
    pump_frames(io.BytesIO(raw).read, cap)
    out, _err, n_out, _ = cap.tails()
    assert len(out) == 1000
    assert out.endswith(b"END")
    assert n_out == 500 * 4096 + 3


def test_a_header_claiming_gigabytes_allocates_nothing_big() -> None:
    """A frame that claims 4 GiB and ends early: what arrived is kept, the pump stops."""
    reads: list[int] = []
    stream = io.BytesIO(struct.pack(">BxxxI", 1, 0xFFFFFFFF) + b"x" * 10)

    def read(n: int) -> bytes:
        reads.append(n)
        return stream.read(n)

    cap = OutputCapture(100)
    pump_frames(read, cap, chunk=4096)
    assert max(reads) <= 4096
    assert cap.tails()[0] == b"x" * 10


def test_printable_replaces_control_and_undecodable_bytes() -> None:
    """Text for a report: newlines and tabs stay; NUL, ESC, invalid UTF-8 become '?'."""
    assert printable("é\tok\n".encode() + b"\x00\x1b[31m\xff") == "é\tok\n??[31m?"
