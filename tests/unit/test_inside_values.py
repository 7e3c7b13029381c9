"""Values cannot lie (issue 39): what crosses from the subject is read from storage, exceptions by
identity, and a refusal of the link voids the test even when the test catches it.

Each lie beside its honest control of the same shape, against a real subject process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit._inside_helpers import (
    proxies,
    pwire,
    run_supervisor,
    subject,
    supervisor_config,
    write_tree,
)

SHOP = {
    "pgval/__init__.py": """
        import dataclasses, enum, json, typing

        class Pair(typing.NamedTuple):
            a: int
            b: int

        class Rewriting(typing.NamedTuple):  # iteration rewrites the fields
            a: int
            b: int
            def __iter__(self):
                return iter((0, 0))

        class Rebound(typing.NamedTuple):
            a: int
            b: int

        Rebound.a = property(lambda self: 0)  # a field's accessor rebound after creation

        class Swapped(typing.NamedTuple):
            a: int
            b: int

        Swapped._fields = ("b", "a")  # the names reordered after creation

        class Color(enum.Enum):
            RED = 1
            BLUE = 2

        class Mood(enum.Enum):
            HAPPY = 1
            SAD = -1

        Mood.value = property(lambda self: 1)  # every member's value says 1 now

        class Perm(enum.Flag):
            R = 4
            W = 2

        class Level(enum.IntEnum):
            LOW = 1

        def read_write():
            return Perm.R | Perm.W

        def low():
            return Level.LOW

        @dataclasses.dataclass(frozen=True)
        class Line:
            item: str
            cents: int

        @dataclasses.dataclass(frozen=True, slots=True)
        class Slotted:
            item: str
            cents: int

        @dataclasses.dataclass(frozen=True)
        class Child(Line):
            note: str = ""

        @dataclasses.dataclass
        class Shadowed:
            cents: int

        # the field read through a property now (0 for every amount), stored as before
        Shadowed.cents = property(lambda self: 0, lambda self, v: vars(self).update(cents=v))

        @dataclasses.dataclass
        class Reeq:
            cents: int

        Reeq.__eq__ = lambda self, other: True  # rebound after creation

        def pair(a, b):
            return Pair(a, b)

        def rewriting(a, b):
            return Rewriting(a, b)

        def rebound(a, b):
            return Rebound(a, b)

        def swapped(a, b):
            return Swapped(a, b)

        def color(n):
            return Color(n)

        def mood(n):
            return Mood(n)

        def line(item, cents):
            return Line(item, cents)

        def slotted(item, cents):
            return Slotted(item, cents)

        def child(item, cents):
            return Child(item, cents, "n")

        def shadowed(cents):
            return Shadowed(cents)

        def reeq(cents):
            return Reeq(cents)

        class NotValueError(Exception):
            pass

        NotValueError.__module__ = "builtins"
        NotValueError.__qualname__ = NotValueError.__name__ = "ValueError"

        class NotDecodeError(Exception):
            pass

        NotDecodeError.__module__ = "json.decoder"
        NotDecodeError.__qualname__ = NotDecodeError.__name__ = "JSONDecodeError"

        class PriceError(ValueError):
            pass

        def raise_fake(kind):
            if kind == "value":
                raise NotValueError("looks like a ValueError")
            raise NotDecodeError("looks like a JSONDecodeError")

        def raise_real(kind):
            if kind == "value":
                raise ValueError("a real one")
            if kind == "price":
                raise PriceError("a production one")
            return json.loads("{")

        def raise_group():
            raise ExceptionGroup("many", [ValueError("a"), KeyError("b"),
                                          ExceptionGroup("inner", [TypeError("c")])])

        def raise_deep(n):
            cls = Exception
            for i in range(n):
                cls = type(f"E{i}", (cls,), {})
            raise cls("deep")

        async def fetch(n):
            import asyncio
            await asyncio.sleep(0)
            return n * 2

        async def agen(n):
            import asyncio
            for i in range(n):
                await asyncio.sleep(0)
                yield i

        class FakeCoroutine:
            def send(self, value):
                raise StopIteration(42)

        FakeCoroutine.__module__ = "builtins"
        FakeCoroutine.__qualname__ = "coroutine"

        def fake_coroutine():
            return FakeCoroutine()

        def nested(n):
            out = []
            for _ in range(n):
                out = [out]
            return out
    """,
}


_PAIRS: dict[int, Any] = {}  # id of the proxy module -> its pair


@pytest.fixture(scope="module")
def val(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("values")
    with subject(tmp, SHOP, ("pgval",), caps={"max_depth": 32}) as pair:
        mod = pair.module("pgval")
        _PAIRS[id(mod)] = pair
        yield mod


def _client(val: Any) -> Any:
    return _PAIRS[id(val)].client


def _voids(val: Any) -> dict[str, str]:
    """The link's voids so far (taken: each test starts with none)."""
    client = _client(val)
    got, client.voids = dict(client.voids), {}
    return got


# -- records read from storage ----------------------------------------------------------------
def test_a_namedtuple_is_read_from_the_tuples_own_items(val: Any) -> None:
    got = val.pair(1, 2)
    assert got == (1, 2)
    assert (got.a, got.b) == (1, 2)


@pytest.mark.parametrize("maker", ["rewriting", "rebound", "swapped"])
def test_a_namedtuple_that_reads_itself_its_own_way_crosses_as_a_handle(
    val: Any, maker: str
) -> None:
    """An ``__iter__`` that rewrites the fields, a field accessor rebound after creation, the
    field names reordered: the old record was built from what the object said (``(0, 0)`` for
    the first); now it is a handle, and comparing it is refused."""
    got = getattr(val, maker)(1, 2)
    assert isinstance(got, proxies.Handle)
    with pytest.raises(proxies.Unjudgeable):
        assert got == (0, 0)
    assert _voids(val)


def test_an_enum_member_is_the_subjects_member_compared_by_identity(val: Any) -> None:
    red = val.color(1)
    assert red is val.Color.RED
    assert red == val.Color.RED
    assert red != val.Color.BLUE
    assert red.value == 1
    assert red.name == "RED"
    assert len({red, val.Color.RED, val.Color.BLUE}) == 2


def test_a_flag_and_an_int_enum_stay_handles(val: Any) -> None:
    """Their own truth, length and iteration (Flag) or int's comparison (IntEnum): in one process
    ``Level.LOW == 1`` holds and ``bool(Perm(0))`` is false, which a record would not say."""
    for got in (val.read_write(), val.low()):
        assert isinstance(got, proxies.Handle)
        with pytest.raises(proxies.Unjudgeable):
            assert got == 1
    assert int(val.low()) == 1  # converted, it compares
    _voids(val)


def test_an_enum_whose_value_was_rebound_crosses_as_a_handle(val: Any) -> None:
    """``Mood.value`` rebound at run time: the old record read ``member.value`` (1 for SAD)."""
    sad = val.mood(-1)
    assert isinstance(sad, proxies.Handle)
    with pytest.raises(proxies.Unjudgeable):
        assert sad == val.Mood.HAPPY
    _voids(val)


@pytest.mark.parametrize("maker", ["line", "slotted", "child"])
def test_a_dataclass_is_read_from_the_instances_storage(val: Any, maker: str) -> None:
    got = getattr(val, maker)("tea", 3)
    assert isinstance(got, proxies.Record)
    assert got.cents == 3
    assert got == getattr(val, maker)("tea", 3)
    assert got != getattr(val, maker)("tea", 4)


@pytest.mark.parametrize("maker", ["shadowed", "reeq"])
def test_a_dataclass_rebound_after_creation_crosses_as_a_handle(val: Any, maker: str) -> None:
    """A field shadowed by a property, ``__eq__`` rebound: the old record read the property
    (``0`` for every amount) or took the class as generated."""
    got = getattr(val, maker)(5)
    assert isinstance(got, proxies.Handle)
    with pytest.raises(proxies.Unjudgeable):
        assert got == getattr(val, maker)(0)
    _voids(val)


# -- exceptions by identity -------------------------------------------------------------------
def test_a_class_that_names_itself_a_builtin_is_not_that_builtin(val: Any) -> None:
    with pytest.raises(Exception) as info:
        val.raise_fake("value")
    assert not isinstance(info.value, ValueError)
    assert type(info.value).__qualname__ == "ValueError"  # named as the subject names it
    assert info.value._patchgate_subject is True
    with pytest.raises(Exception) as dinfo:
        val.raise_fake("decode")
    assert not isinstance(dinfo.value, json.JSONDecodeError)
    assert not isinstance(dinfo.value, ValueError)


def test_real_builtin_stdlib_and_production_exceptions_keep_their_types(val: Any) -> None:
    with pytest.raises(ValueError, match="a real one") as info:
        val.raise_real("value")
    assert type(info.value) is ValueError
    with pytest.raises(json.JSONDecodeError):
        val.raise_real("json")
    with pytest.raises(ValueError) as pinfo:
        val.raise_real("price")
    assert isinstance(pinfo.value, val.PriceError)
    assert not _voids(val)


def test_an_exception_group_is_rebuilt_with_its_members(val: Any) -> None:
    with pytest.raises(ExceptionGroup) as info:
        val.raise_group()
    group = info.value
    assert group.message == "many"
    assert [type(e) for e in group.exceptions[:2]] == [ValueError, KeyError]
    match, rest = group.split(TypeError)
    assert match is not None
    assert rest is not None
    assert group._patchgate_subject is True
    values = group.subgroup(ValueError)
    assert values is not None
    assert str(values.exceptions[0]) == "a"
    caught = []
    try:
        val.raise_group()
    except* (KeyError, TypeError) as rest_group:
        caught.append(rest_group)
    except* ValueError:
        caught.append(None)
    assert len(caught) == 2
    assert not _voids(val)


def test_a_deep_mro_voids_the_test_and_a_shallow_one_crosses(val: Any) -> None:
    with pytest.raises(Exception, match="deep"):
        val.raise_deep(10)
    assert not _voids(val)
    with pytest.raises(pwire.WireError, match="cannot rebuild"):
        val.raise_deep(200)
    assert "more than 64" in next(iter(_voids(val).values()))
    assert val.pair(1, 2) == (1, 2)  # the link lives on


# -- a refusal voids the test -----------------------------------------------------------------
def test_a_value_the_wire_cannot_carry_is_no_builtin_error_and_voids_the_test(val: Any) -> None:
    """The old wire's refusal was a ``ValueError``: ``pytest.raises(ValueError)`` passed
    although the code under test raised nothing."""
    assert not issubclass(pwire.WireError, Exception)
    with pytest.raises(BaseException) as info:
        val.nested(100)
    assert not isinstance(info.value, Exception)
    assert "cannot carry" in str(info.value)
    assert "deeper" in next(iter(_voids(val).values()))
    assert val.nested(3) == [[[[]]]]  # a value within the caps crosses
    assert not _voids(val)


LINK_TESTS = """
import pytest
import pgval

def test_caught_refusal():
    try:
        pgval.nested(100)
    except BaseException:
        pass

def test_caught_comparison():
    with pytest.raises(TypeError):
        assert pgval.rewriting(1, 2) == (1, 2)

def test_honest():
    assert pgval.nested(3) == [[[[]]]]
    with pytest.raises(ValueError):
        pgval.raise_real("value")
"""


def test_a_caught_refusal_is_still_an_error_of_that_test(tmp_path: Path) -> None:
    """Through the supervisor, the judge plugin and the reporter: the test that caught the
    refusal is ``error`` with the reason; the honest one beside it passes."""
    write_tree(tmp_path / "src", SHOP)
    write_tree(tmp_path, {"tests/test_link.py": LINK_TESTS})
    cfg = supervisor_config(tmp_path, ["tests/test_link.py"], production=["pgval"],
                            caps={"max_depth": 32})  # fmt: skip
    _code, records, err = run_supervisor(cfg)
    items = {r["nodeid"].split("::")[-1]: r for r in records if r["kind"] == "item"}
    got = {n: i["outcome"] for n, i in items.items()}
    assert got == {
        "test_caught_refusal": "error",
        "test_caught_comparison": "error",
        "test_honest": "pass",
    }, err
    assert "the judge's link refused" in items["test_caught_refusal"]["failure"]
    assert "deeper" in items["test_caught_refusal"]["failure"]
    assert "cannot be judged directly" in items["test_caught_comparison"]["failure"]


# -- real shapes judge as they run --------------------------------------------------------------
def test_a_coroutine_and_an_async_generator_cross(val: Any) -> None:
    """Awaited in the judge, run on the subject's own loop (it was a handle asyncio refused)."""
    import asyncio  # noqa: PLC0415 - only this test needs a loop

    assert asyncio.run(val.fetch(2)) == 4

    async def collect() -> list[int]:
        return [x async for x in val.agen(3)]

    assert asyncio.run(collect()) == [0, 1, 2]

    async def first() -> int:
        async for x in val.agen(5):
            return int(x)  # the rest is closed, in the subject too
        return -1

    assert asyncio.run(first()) == 0
    with pytest.raises(TypeError, match="not a coroutine"):  # a class named builtins.coroutine
        asyncio.run(val.fake_coroutine())
    assert not _voids(val)


INSIDE_PACKAGE = {
    "src/pgpkg/__init__.py": "import os\n\ndef double(x):\n    return 2 * x\n\n"
    "def pid():\n    return os.getpid()\n",
    "src/pgpkg/tests/__init__.py": "",
    "src/pgpkg/tests/helpers.py": "import os\n\ndef pid():\n    return os.getpid()\n",
    "src/pgpkg/tests/conftest.py": "import os\nimport pytest\n\n@pytest.fixture\n"
    "def judge_pid():\n    return os.getpid()\n",
    "src/pgpkg/tests/test_double.py": """
import os
import pgpkg
from pgpkg.tests import helpers

def test_double(judge_pid):
    assert pgpkg.double(21) == 42
    assert os.getpid() == judge_pid  # this module and its conftest run in the judge
    assert pgpkg.pid() != judge_pid  # the package runs in the subject
    assert helpers.pid() == pgpkg.pid()  # and so does any other module of its tests package
""",
}


def test_tests_inside_a_production_package_are_judge_side(tmp_path: Path) -> None:
    """``pkg/tests/test_*.py`` and its conftest: every property was ``error`` at collection
    (``AttributeError: __file__`` of the test module's proxy); now they run in the judge, the
    package and the helpers beside them stay production, run in the subject."""
    write_tree(tmp_path, INSIDE_PACKAGE)
    cfg = supervisor_config(tmp_path, ["src/pgpkg/tests/test_double.py"], production=["pgpkg"])
    _code, records, err = run_supervisor(cfg)
    items = {r["nodeid"].split("::")[-1]: r for r in records if r["kind"] == "item"}
    assert {n: i["outcome"] for n, i in items.items()} == {"test_double": "pass"}, (records, err)


class _Alarm(BaseException):
    """What the clock bound's alarm raises, landing just after a request was written."""


def test_a_call_interrupted_right_after_its_request_was_written_keeps_the_link(
    tmp_path: Path,
) -> None:
    """Seen under load with a 5 s bound: the alarm landed after the request's write and before
    its wait; the late answer then lost the subject ("an unexpected message 'ok'") for every
    later test of the batch. Now the answer is skipped like any interrupted call's."""
    with subject(tmp_path, SHOP, ("pgval",)) as pair:
        mod = pair.module("pgval")
        link = pair.client.link
        send = link.send
        fired: list[str] = []

        def send_then_alarm(message: dict[str, Any]) -> None:
            send(message)
            if message.get("k") == "call" and not fired:
                fired.append("alarm")
                raise _Alarm

        link.send = send_then_alarm
        with pytest.raises(_Alarm):
            mod.pair(1, 2)
        assert mod.pair(3, 4) == (3, 4)
        assert not pair.client.dead
