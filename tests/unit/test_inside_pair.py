"""One pair's life in the supervisor (``executord/inside/pair.py``): the record pipes read as
capped lines, the fds a pair's process is handed, and the subject's records that are refused.
(Whole pairs run in ``test_inside_supervisor.py``; where the subject's end goes in
``test_inside_supervisor_end.py``.)"""

from __future__ import annotations

import os
from typing import Any

from tests.unit._inside_helpers import load, pwire

pair = load("pair")
zygotepool = load("zygotepool")


class _Out:
    def __init__(self) -> None:
        self.recs: list[dict[str, Any]] = []

    def send(self, rec: dict[str, Any]) -> None:
        self.recs.append(rec)


def test_a_pipe_is_read_as_lines_and_an_overlong_one_is_dropped_and_noted() -> None:
    """Whole lines only; a line past the record cap is never relayed, and ``over`` says so."""
    r, w = os.pipe()
    lines = pair.Lines(r)
    os.write(w, b'{"a": 1}\n{"b"')
    assert lines.read() == [b'{"a": 1}']
    os.write(w, b": 2}\n")
    assert lines.read() == [b'{"b": 2}']
    left = pwire.MAX_RECORD_LINE + 1
    while left:  # in pieces a pipe holds, each read before the next is written
        piece = min(left, 1 << 15)
        os.write(w, b"x" * piece)
        left -= piece
        assert lines.read() == []
    assert lines.over
    os.close(w)
    assert lines.read() == []
    assert lines.eof


def test_a_process_gets_each_variable_s_fds_by_their_place_in_its_request() -> None:
    """``fdenv`` in a fork request names places in the fd list, in order."""
    assert pair.index({"A": (7, 8), "B": (3,)}) == {"A": [0, 1], "B": [2]}


def test_the_subject_may_send_only_executed_records_and_garbage_is_noted_once() -> None:
    """An executed record is relayed; anything else is one ``garbage`` record, never relayed."""
    out = _Out()
    one = pair.Pair({}, out, zygotepool.ZygotePool({}))
    one.started = True
    good = b'{"kind":"executed","phase":"import","nodeid":"","targets":["m.f"]}'
    one.from_subject(good)
    one.from_subject(b'{"kind":"item","nodeid":"t","outcome":"pass"}')
    one.from_subject(b"not json")
    assert [r["kind"] for r in out.recs] == ["executed", "subject"]
    assert out.recs[1]["event"] == "garbage"
