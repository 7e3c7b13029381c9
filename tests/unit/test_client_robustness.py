"""The client's boundary (issue 16, item 5): a bad --out is a usage error before anything is
written, any OSError is one line, an interrupted lane starts nothing more and cancels what runs,
and SIGINT/SIGTERM exit 130/143."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from client import cli
from client.commands._util import check_out_dir
from client.errors import Interrupted
from client.gate.runs.execution import LaneClient, LaneTerms, run_lane
from client.gate.runs.suite import SignedSuite
from patchgate.envelope import Envelope
from patchgate.errors import TransportError, UsageError
from patchgate.executor_client import ExecutionResult
from patchgate.pins import PropertyPin
from patchgate.request import ExecuteRequest

# --out ----------------------------------------------------------------------------------------


def test_out_that_is_an_existing_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("mine")
    with pytest.raises(UsageError, match="exists and is not a directory"):
        check_out_dir(tmp_path / "f")
    assert (tmp_path / "f").read_text() == "mine"


def test_out_below_an_existing_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("mine")
    with pytest.raises(UsageError, match="is not a directory"):
        check_out_dir(tmp_path / "f" / "a" / "b")


def test_out_that_is_a_dangling_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "l").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="symbolic link to nothing"):
        check_out_dir(tmp_path / "l")


@pytest.mark.parametrize(
    "inside",
    ["fixtures", "fixtures/deep/er", "pins", "pins/x", "tests/out", "properties", "x/../pins"],
)
def test_out_inside_a_forbidden_directory_is_refused(tmp_path: Path, inside: str) -> None:
    (tmp_path / "x").mkdir()
    with pytest.raises(UsageError, match="patchgate never writes where it reads"):
        check_out_dir(tmp_path / inside, repo=tmp_path)


def test_out_through_a_link_into_a_forbidden_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "innocent").symlink_to(tmp_path / "fixtures")
    with pytest.raises(UsageError, match="fixture tree"):
        check_out_dir(tmp_path / "innocent" / "out", repo=tmp_path)


def test_out_beside_the_forbidden_directories_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "ledgers").mkdir()
    check_out_dir(tmp_path / "ledgers", repo=tmp_path)
    check_out_dir(tmp_path / "pins-not" / "new", repo=tmp_path)


@pytest.mark.parametrize("where", ["/proc/x", "/sys/y", "/dev/z"])
def test_out_under_a_kernel_file_system_is_refused(where: str) -> None:
    """Issue 25: --out /proc/x exited 4 (a write error); it is a usage error, 64."""
    with pytest.raises(UsageError, match="not a place for output"):
        check_out_dir(Path(where))


# the CLI boundary ------------------------------------------------------------------------------


def _fake_command(monkeypatch: pytest.MonkeyPatch, body: Callable[[], int]) -> None:
    """A command ``boom`` whose ``run`` is ``body``, registered like every command module."""
    module = types.ModuleType("fake_boom_command")

    def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        subparsers.add_parser("boom").set_defaults(func=lambda _args: body())

    module.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(cli._MODULE_OF, "boom", module.__name__)
    monkeypatch.setattr(cli, "_NO_LOGGING", cli._NO_LOGGING | {module.__name__})


def _raise(exc: BaseException) -> Callable[[], int]:
    def body() -> int:
        raise exc

    return body


def test_an_oserror_at_the_boundary_is_one_line_and_exit_4(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_command(monkeypatch, _raise(PermissionError(13, "Permission denied", "/x/ledgers\nz")))
    assert cli.main(["boom"]) == 4
    err = capsys.readouterr().err
    assert err == "patchgate: error: /x/ledgers z: Permission denied\n"
    assert "Traceback" not in err


def test_verbose_adds_the_traceback_of_an_oserror(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_command(monkeypatch, _raise(OSError(28, "No space left on device")))
    assert cli.main(["--verbose", "boom"]) == 4
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert err.endswith("patchgate: error: No space left on device\n")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_command_unwinds_it_and_exits_128_plus_the_signal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], signum: int, code: int
) -> None:
    cleaned: list[str] = []

    def body() -> int:
        try:
            os.kill(os.getpid(), signum)
            time.sleep(5)
            return 0
        finally:
            os.kill(os.getpid(), signum)  # a second signal does not cut the clean-up short
            cleaned.append("yes")

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    _fake_command(monkeypatch, body)
    assert cli.main(["boom"]) == code
    assert cleaned == ["yes"]
    assert f"interrupted ({signal.Signals(signum).name})" in capsys.readouterr().err
    assert {s: signal.getsignal(s) for s in before} == before  # handlers restored


def test_interrupted_is_a_keyboard_interrupt_with_its_signal() -> None:
    exc = Interrupted(signal.SIGTERM)
    assert isinstance(exc, KeyboardInterrupt)
    assert exc.signum == signal.SIGTERM


# cancellation of a lane -------------------------------------------------------------------------

ENVELOPE = Envelope(payload_type="x", payload=b"{}", signatures=())


def _prop(i: int) -> PropertyPin:
    return PropertyPin(
        id=f"p{i}", claim="c", property_class="pure_fn", covers=("m.f",), command=("python",)
    )


class _Blocking:
    """An executor whose Execute runs until its channel is closed (then: a transport result)."""

    both = threading.Event()  # set when the second Execute is in flight
    hung: ClassVar[list[str]] = []  # Executes whose stream no interrupt cancelled

    def __init__(self, address: str, started: list[str], closed: threading.Event) -> None:
        self.address = address
        self._started = started
        self._closed = closed

    def execute(
        self, request: ExecuteRequest, on_progress: Callable[[str], None] | None = None
    ) -> ExecutionResult:
        self._started.append(request.properties[0].id)
        if len(self._started) == 2:
            self.both.set()
        if not self._closed.wait(30):
            _Blocking.hung.append(request.properties[0].id)  # the worker thread's error is lost
            raise AssertionError("the stream in flight was never cancelled")
        raise TransportError("unavailable", "cancelled")

    def close(self) -> None:
        self._closed.set()


def test_an_interrupted_lane_starts_no_queued_property_and_cancels_the_running_one() -> None:
    started: list[str] = []
    closed = threading.Event()

    def connect(address: str) -> LaneClient:
        return _Blocking(address, started, closed)

    signed = SignedSuite(
        envelope=ENVELOPE,
        digest="d" * 64,
        workspace=Path("/nonexistent"),
        fixture_root="fixtures",
    )
    main = threading.main_thread().ident
    assert main is not None
    _Blocking.both.clear()
    _Blocking.hung.clear()

    def interrupt() -> None:  # once both workers' streams are in flight: an event, not a delay
        if _Blocking.both.wait(60):
            signal.pthread_kill(main, signal.SIGINT)

    # Python's own SIGINT handler: a process started as a background job of a non-interactive
    # shell (a CI runner's `cmd &`) inherits SIGINT ignored, and Python then installs none
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Thread(target=interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_lane(
                signed,
                "local",
                ["a", "b"],
                [_prop(i) for i in range(6)],
                LaneTerms(runs=2, connect=connect),
            )
    finally:
        timer.join()
        signal.signal(signal.SIGINT, previous)
    assert _Blocking.hung == []  # cancelled by the interrupt, not ended by the fake's 30 s wait
    assert closed.is_set()
    assert sorted(started) == ["p0", "p1"]  # one per worker; the four queued never started
