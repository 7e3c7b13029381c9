"""Small builders shared by the gate's unit tests."""

from __future__ import annotations

from patchgate.pins import PropertyPin
from patchgate.results import RunOutcome

CMD = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")


def prop(pid: str, covers: tuple[str, ...], klass: str = "pure_fn") -> PropertyPin:
    """A property pin whose test id is ``properties/test_x.py::test_<pid>``."""
    return PropertyPin(
        id=pid,
        claim="",
        property_class=klass,
        covers=covers,
        command=(*CMD, f"properties/test_x.py::test_{pid.replace('.', '_')}"),
    )


def run(pid: str, index: int, outcome: str, failure: str = "") -> RunOutcome:
    """One recorded run."""
    return RunOutcome.make(pid, index, outcome, failure)
