"""The judge apart (issue 20): calls into production code cross a pipe to a real subject process.

Values by exact type, handles that refuse comparison, records compared in the judge, exceptions
raised by type and marked as the subject's, callbacks run in the judge, forwarded output, logs and
warnings; and each attack with its control (the same check on honest code passes)."""

from __future__ import annotations

import concurrent.futures
import datetime
import decimal
import gc
import logging
import math
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.unit._inside_helpers import proxies, subject

BILLING = {
    "pgbill/__init__.py": """
        import dataclasses, decimal, enum, logging, typing, warnings

        class Amount(decimal.Decimal):
            def __ge__(self, other):
                return True

        class Liar:
            def __eq__(self, other):
                return True
            def __bool__(self):
                return True
            def __hash__(self):
                return 0

        class Count(int):
            pass

        class BillingError(Exception):
            pass

        class InvoiceError(BillingError):
            pass

        @dataclasses.dataclass(frozen=True)
        class Line:
            item: str
            cents: int

        @dataclasses.dataclass
        class Custom:
            x: int
            def __eq__(self, other):
                return True

        class Pair(typing.NamedTuple):
            a: int
            b: float

        class Color(enum.Enum):
            RED = 1
            BLUE = 2

        class Box:
            def __init__(self, v):
                self.v = v
            def get(self):
                return self.v
            def __len__(self):
                return 3
            def __iter__(self):
                return iter([1, 2, 3])

        def prorate(total, days, of):
            return (decimal.Decimal(total) * days / of).quantize(decimal.Decimal("0.01"))

        def prorate_tricked(total, days, of):
            return Amount("-1.67")

        def echo(x):
            return x

        def liar():
            return Liar()

        def count():
            return Count(5)

        def fail(kind):
            if kind == "value":
                raise ValueError("bad value")
            if kind == "assert":
                assert False, "inside production"
            raise InvoiceError("no invoice")

        def apply(fn, xs):
            return sorted(xs, key=fn)

        def join(xs):
            return ", ".join(str(x) for x in xs)

        def size(xs):
            return len(xs)

        def has(xs, x):
            return x in xs

        def truthy(x):
            return bool(x)

        def noisy():
            import sys
            assert sys.stdout.encoding == "utf-8"
            print("to stdout")
            logging.getLogger("pgbill").warning("logged %s", 1)
            warnings.warn("careful", DeprecationWarning)
            return 1

        def env(name):
            import os
            return os.environ.get(name)

        def is_box(b):
            return isinstance(b, Box)

        def hang():
            import time
            time.sleep(3600)

        def big():
            return "x" * 5000

        def junk():
            import gc, os
            for o in gc.get_objects():
                if type(o).__name__ == "Link" and hasattr(o, "wfd"):
                    os.write(o.wfd, b"\\x00\\x00\\x00\\x04junk")
            return 1

        def flood():
            import gc, os, struct
            for o in gc.get_objects():
                if type(o).__name__ == "Link" and hasattr(o, "wfd"):
                    os.write(o.wfd, struct.pack(">I", 1 << 31))
            return 1

        def leave():
            import os
            os._exit(9)

        SHARED = Box(7)

        RATES = {"eu": {"vat": [20, 10]}, "us": {}}
        TAGS = {"a"}
        NESTED = ([1], (2, [3]))

        def rate(region):
            return RATES[region]["vat"][0]

        def shared():
            return SHARED

        def catching(exc_class, fn):
            try:
                fn()
            except exc_class as exc:
                return "caught " + str(exc)
            return "not caught"
    """,
}


@pytest.fixture
def bill(tmp_path: Path) -> Any:
    with subject(tmp_path, BILLING, ("pgbill",), timeout_s=60) as pair:
        yield pair.module("pgbill")


def test_plain_data_crosses_by_value(bill: Any) -> None:
    got = bill.prorate("10", 1, 6)
    assert type(got) is decimal.Decimal
    assert got == decimal.Decimal("1.67")
    nan = bill.echo(float("nan"))
    assert math.isnan(nan)
    back = bill.echo(((1, 2), [1, 2], {1}, frozenset({2}), b"x", -0.0))
    assert [type(x) for x in back] == [tuple, list, set, frozenset, bytes, float]
    assert math.copysign(1, back[5]) == -1


def test_a_result_that_answers_comparisons_is_a_handle_and_an_error(bill: Any) -> None:
    """The issue's attack: type("Amount", (Decimal,), {"__ge__": ...}) makes >= 0 hold for -1.67.
    Control: the honest Decimal compares by value in the judge."""
    tricked = bill.prorate_tricked("10", 1, 6)
    assert isinstance(tricked, proxies.Handle)
    with pytest.raises(proxies.Unjudgeable, match="compare its fields") as info:
        assert tricked >= 0
    assert getattr(info.value, "_patchgate_unjudgeable", False)
    assert bill.prorate("10", 1, 6) >= 0  # control
    assert str(tricked) == "-1.67"  # converted to plain data, it is judged
    assert not (decimal.Decimal(str(tricked)) >= 0)


@pytest.mark.parametrize(
    ("use", "what"),
    [
        (lambda h: h == 1, "=="),
        (lambda h: h != 1, "!="),
        (bool, "truth"),
        (hash, "hashing"),
        (lambda h: {h}, "hashing"),
        (lambda h: h < 1, "<"),
        (lambda h: 1 == h, "=="),  # noqa: SIM300 - the reflected comparison is the point
    ],
)
def test_eq_bool_hash_tricks_are_errors(bill: Any, use: Any, what: str) -> None:
    liar = bill.liar()
    with pytest.raises(proxies.Unjudgeable, match=what.replace("(", "")):
        use(liar)


def test_a_subclass_of_a_plain_type_is_a_handle(bill: Any) -> None:
    n = bill.count()
    assert isinstance(n, proxies.Handle)
    with pytest.raises(proxies.Unjudgeable):
        assert n == 5
    assert int(n) == 5  # int() in the subject, an exact int here
    assert bill.echo(5) == 5  # control


def test_handles_forward_attributes_methods_len_iteration_and_go_back(bill: Any) -> None:
    box = bill.Box([1, 2])
    assert box.get() == [1, 2]
    assert box.v == [1, 2]
    assert len(box) == 3
    assert list(box) == [1, 2, 3]
    assert bill.is_box(box) is True  # passed back, it is the subject's own object
    assert isinstance(box, bill.Box)
    assert not isinstance(5, bill.Box)


def test_records_compare_in_the_judge(bill: Any) -> None:
    a, b = bill.Line("tea", 3), bill.Line("tea", 3)
    assert isinstance(a, proxies.Record)
    assert a == b
    assert a != bill.Line("tea", 4)
    assert len({a, b}) == 1
    assert a.cents == 3
    assert isinstance(a, bill.Line)
    pair = bill.Pair(1, 2.5)
    assert pair == (1, 2.5)
    assert pair.b == 2.5
    assert bill.Color(1) is bill.Color.RED
    assert bill.Color.RED != bill.Color.BLUE
    custom = bill.Custom(1)  # its own __eq__: a handle, never a record
    assert isinstance(custom, proxies.Handle)
    with pytest.raises(proxies.Unjudgeable):
        assert custom == bill.Custom(2)


def test_exceptions_arrive_by_type_marked_as_the_subjects(bill: Any) -> None:
    with pytest.raises(ValueError, match="bad value") as info:
        bill.fail("value")
    assert type(info.value) is ValueError
    assert info.value._patchgate_subject is True
    with pytest.raises(AssertionError) as ainfo:
        bill.fail("assert")
    assert ainfo.value._patchgate_subject is True  # not the predicate failing
    with pytest.raises(bill.BillingError) as binfo:
        bill.fail("invoice")
    assert type(binfo.value).__qualname__ == "InvoiceError"
    assert isinstance(binfo.value, bill.InvoiceError)
    assert "no invoice" in str(binfo.value)
    assert "fail" in binfo.value._patchgate_traceback


def test_callbacks_run_in_the_judge(bill: Any) -> None:
    seen: list[int] = []

    def key(x: int) -> int:
        seen.append(x)
        return -x

    assert bill.apply(key, [1, 3, 2]) == [3, 2, 1]
    assert sorted(seen) == [1, 2, 3]


def test_judge_iterables_are_iterated_in_the_judge(bill: Any) -> None:
    """A generator, a dict view, a range, a map the property passes in (humanize's
    ``natural_list`` suite): the subject iterates them by asking the judge, lazily."""
    pulled: list[int] = []

    def gen() -> Any:
        for i in (1, 2, 3):
            pulled.append(i)
            yield i

    assert bill.join(gen()) == "1, 2, 3"
    assert pulled == [1, 2, 3]
    assert bill.join({"one": 1, "two": 2}.keys()) == "one, two"
    assert bill.join(range(1, 4)) == "1, 2, 3"
    assert bill.join(map(str.upper, ["a", "b"])) == "A, B"
    assert bill.size({"one": 1, "two": 2}.values()) == 2
    assert bill.size(range(10)) == 10
    assert bill.has(range(10), 3) is True
    assert bill.has(range(10), 30) is False


def test_a_subclass_of_plain_data_from_the_judge_is_refused_never_a_handle(bill: Any) -> None:
    """humanize's Persian test passes freezegun's ``FakeDatetime`` as ``when=``: as a judge
    object, production code's ``isinstance(when, datetime)`` was false and its result the judge
    object's text, a false ``fail``. Refused instead: the test is ``error`` naming the type."""

    class FakeDatetime(datetime.datetime):
        pass

    class Amount(decimal.Decimal):
        pass

    for value, base in [
        (FakeDatetime(2020, 1, 1), "datetime.datetime"),
        (Amount("1.5"), "decimal.Decimal"),
        (type("Name", (str,), {})("x"), "str"),
    ]:
        with pytest.raises(proxies.Unjudgeable, match=f"a subclass of {base}, cannot cross"):
            bill.echo(value)
    assert bill.echo(datetime.datetime(2020, 1, 1)) == datetime.datetime(2020, 1, 1)
    assert bill.echo(True) is True


def test_a_callback_is_not_iterable_and_stays_truthy(bill: Any) -> None:
    def key(x: int) -> int:
        return x

    assert bill.truthy(key) is True  # no __len__ of its own: bool() asks nothing of the judge
    with pytest.raises(TypeError) as info:
        bill.join(key)
    assert getattr(info.value, "_patchgate_subject", False) is True
    assert bill.echo(1) == 1


def test_a_judge_iterator_that_raises_reaches_the_subject_as_its_exception(bill: Any) -> None:
    def gen() -> Any:
        yield 1
        raise KeyError("from the judge")

    with pytest.raises(KeyError) as info:
        bill.join(gen())
    assert getattr(info.value, "_patchgate_subject", False) is True
    assert bill.echo(2) == 2


def test_a_subject_exception_inside_a_callback_keeps_the_link(bill: Any) -> None:
    def key(x: int) -> int:
        with pytest.raises(ValueError, match="bad value"):
            bill.fail("value")  # a call into the subject from inside its callback
        return x

    assert bill.apply(key, [2, 1]) == [1, 2]
    assert bill.echo(1) == 1


def test_calls_from_the_tests_threads_take_turns(bill: Any) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(bill.echo, range(200)))
    assert got == list(range(200))


def test_two_handles_to_one_object_are_released_apart(bill: Any) -> None:
    first, second = bill.shared(), bill.shared()
    del first
    gc.collect()
    assert bill.echo(0) == 0  # sends the release
    assert second.get() == 7


def test_a_proxy_exception_class_goes_back_as_the_class(bill: Any) -> None:
    def boom() -> None:
        bill.fail("invoice")

    assert bill.catching(bill.BillingError, boom) == "caught no invoice"


def test_output_logs_and_warnings_are_replayed(
    bill: Any, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), pytest.warns(DeprecationWarning, match="careful"):
        assert bill.noisy() == 1
    assert "to stdout" in capsys.readouterr().out
    assert any(r.name == "pgbill" and r.getMessage() == "logged 1" for r in caplog.records)


def test_environment_is_mirrored(bill: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PG_JUDGE_PROBE", "on")
    assert bill.env("PG_JUDGE_PROBE") == "on"
    assert bill.env("PG_JUDGE_PROBE") == "on"  # nothing changed since: nothing sent again
    monkeypatch.setenv("PG_JUDGE_PROBE", "off")  # the same key, another value
    assert bill.env("PG_JUDGE_PROBE") == "off"
    monkeypatch.delenv("PG_JUDGE_PROBE")
    assert bill.env("PG_JUDGE_PROBE") is None
    monkeypatch.setenv("HOME", os.environ.get("HOME", "/"))  # unchanged: not mirrored
    assert bill.env("HOME") is None  # the subject's own environment has none
    assert bill.env("PATH") == os.environ["PATH"]


def test_monkeypatching_production_code_is_a_clear_error(
    bill: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(proxies.Unjudgeable, match="monkeypatching production code"):
        monkeypatch.setattr(bill, "prorate", lambda *a: 0)
    with pytest.raises(proxies.Unjudgeable):
        del bill.prorate
    # humanize's i18n tests set and delete the module's __spec__: a dunder, once the import is
    # done, is the test's monkeypatching too (before, the judge kept it and the test failed)
    with pytest.raises(proxies.Unjudgeable, match="monkeypatching production code"):
        monkeypatch.setattr(bill, "__spec__", None)
    with pytest.raises(proxies.Unjudgeable):
        monkeypatch.delattr(bill, "__spec__")


def test_mutating_a_production_modules_container_from_a_test_is_a_clear_error(bill: Any) -> None:
    """A dict, list or set read from a production module crosses by value: a test that changes
    it in place (a registry, a configuration) changed only its own copy, and production code in
    the subject never saw it — in one process it would have; the test failed for no fault of
    the patch, and nothing said why. Now every in-place change, at any depth, is ``error``
    naming the attribute; reading, comparing, copying and passing it back work as before."""
    import copy  # noqa: PLC0415

    rates = bill.RATES
    assert rates == {"eu": {"vat": [20, 10]}, "us": {}}  # compares as the plain value
    assert rates["eu"]["vat"][0] == 20
    assert sorted(rates) == ["eu", "us"]
    refused: list[Any] = [
        lambda: rates.__setitem__("eu", {}),
        lambda: rates.update(us={"vat": [0]}),
        lambda: rates.pop("us"),
        lambda: rates.setdefault("ca", {}),
        rates["eu"].clear,  # nested dict
        lambda: rates["eu"]["vat"].append(5),  # nested list
        lambda: bill.TAGS.add("b"),
        lambda: bill.NESTED[0].append(2),  # a list inside a tuple
        lambda: bill.NESTED[1][1].extend([4]),
    ]
    for change in refused:
        with pytest.raises(
            proxies.Unjudgeable, match=r"changing pgbill\.(RATES|TAGS|NESTED) in"
        ) as info:
            change()
        assert getattr(info.value, "_patchgate_unjudgeable", False)
    with pytest.MonkeyPatch.context() as mp, pytest.raises(proxies.Unjudgeable):
        mp.setitem(bill.RATES, "eu", {"vat": [0]})  # monkeypatch.setitem is the same change
    # copies are the test's own, plain and changeable
    for mine in (dict(rates), rates.copy(), copy.copy(rates), copy.deepcopy(rates)):
        assert type(mine) is dict
        mine["ca"] = {}
    made = type(rates)(a=1)  # type(x)(...), as dataclasses.asdict builds a dict: a plain one
    assert type(made) is dict
    made["b"] = 2
    assert type(type(bill.NESTED[0])([1])) is list
    assert type(type(bill.TAGS)({1})) is set
    deep = copy.deepcopy(rates)
    deep["eu"]["vat"].append(5)
    assert type(deep["eu"]["vat"]) is list
    assert bill.RATES["eu"]["vat"] == [20, 10]  # the production value never moved
    assert bill.TAGS | {"b"} == {"a", "b"}
    # passed back to production code, a module's value crosses as the plain data it is
    assert bill.echo(rates) == {"eu": {"vat": [20, 10]}, "us": {}}
    assert type(bill.echo(bill.NESTED)[0]) is list
    assert bill.size(bill.TAGS) == 1
    assert bill.rate("eu") == 20


def test_a_clock_frozen_in_the_judge_is_a_clear_error(bill: Any) -> None:
    """freezegun's freeze_time rebinds datetime.datetime (and time.time) in the test's process;
    the subject reads the real clock, so humanize's naturaltime tests *failed* under the judge
    ('17 years ago' == 'now'): a property miss no patch caused. Now the call is ``error``."""

    class FakeDatetime(datetime.datetime):
        pass

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datetime, "datetime", FakeDatetime)
        with pytest.raises(proxies.Unjudgeable, match=r"clock is frozen .*FakeDatetime") as info:
            bill.echo(1)
        assert getattr(info.value, "_patchgate_unjudgeable", False)
    assert bill.echo(1) == 1  # the real clock again: judged
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time, "time", lambda: 0.0)
        with pytest.raises(proxies.Unjudgeable, match=r"time\.time is"):
            bill.echo(2)
    assert bill.echo(2) == 2


def test_time_machine_travel_in_the_judge_is_a_clear_error(bill: Any) -> None:
    """time-machine patches the C functions below ``time.time`` and ``datetime.now``: every name
    stays the real object, so the rebinding check alone let its travel through and the subject
    read the real time (a test could then fail under the judge with no patch to blame). Its
    public ``escape_hatch.is_travelling()`` tells; a time_machine that cannot tell refuses."""
    import time_machine  # noqa: PLC0415 - a dev dependency (pyproject.toml), imported where used

    real = time.time
    with time_machine.travel(0, tick=False):
        assert time.time is real  # what the rebinding check sees
        assert time.time() == 0.0
        with pytest.raises(proxies.Unjudgeable, match=r"time_machine\.travel is active"):
            bill.echo(1)
    assert bill.echo(1) == 1  # travel over: judged again

    class Broken:
        def is_travelling(self) -> bool:
            raise RuntimeError("no")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time_machine, "escape_hatch", Broken())
        with pytest.raises(proxies.Unjudgeable, match="time_machine"):
            bill.echo(2)


def test_a_frozen_clock_still_lets_the_phase_markers_through(tmp_path: Path) -> None:
    """A test module that starts a freeze and never stops it: the begin/end markers run no
    production code, so they still reach the subject (what ran is still attributed)."""

    class FakeDatetime(datetime.datetime):
        pass

    with subject(tmp_path, BILLING, ("pgbill",), timeout_s=60) as pair:
        bill = pair.module("pgbill")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(datetime, "datetime", FakeDatetime)
            assert pair.client.request("begin", nodeid="t.py::test_x") is None
            with pytest.raises(proxies.Unjudgeable, match="clock is frozen"):
                bill.echo(1)
            assert pair.client.request("end", nodeid="t.py::test_x") is None


def test_a_subject_that_never_answers_times_out(tmp_path: Path) -> None:
    with subject(tmp_path, BILLING, ("pgbill",), timeout_s=0.5) as pair:
        bill = pair.module("pgbill")
        with pytest.raises(proxies.SubjectLost, match="no answer") as info:
            bill.hang()
        assert info.value._patchgate_subject is True
        with pytest.raises(proxies.SubjectLost):  # the link is dead for the rest of the run
            bill.echo(1)
        pair.proc.kill()


def test_an_answer_over_the_size_cap_is_refused_not_truncated(tmp_path: Path) -> None:
    with subject(tmp_path, BILLING, ("pgbill",), caps={"max_message": 4096}) as pair:
        bill = pair.module("pgbill")
        with pytest.raises(BaseException, match="over 4096 bytes") as info:
            bill.big()
        assert info.value._patchgate_subject is True
        assert not isinstance(info.value, Exception)  # a refusal no handler of results takes
        assert "over 4096 bytes" in pair.client.voids[""]  # and the link voids the test (#39)
        assert bill.echo("small") == "small"  # control: the link still works


@pytest.mark.parametrize("attack", ["junk", "flood"])
def test_a_subject_that_writes_garbage_or_floods_the_pipe_is_lost(
    tmp_path: Path, attack: str
) -> None:
    with subject(tmp_path, BILLING, ("pgbill",)) as pair:
        bill = pair.module("pgbill")
        assert bill.echo(1) == 1  # control
        with pytest.raises(proxies.SubjectLost, match="refuses"):
            getattr(bill, attack)()
        pair.proc.kill()


def test_a_subject_that_exits_is_lost(tmp_path: Path) -> None:
    with subject(tmp_path, BILLING, ("pgbill",)) as pair:
        bill = pair.module("pgbill")
        with pytest.raises(proxies.SubjectLost, match="ended"):
            bill.leave()
        assert pair.proc.wait() == 9


def test_only_production_modules_are_imported_by_the_subject(tmp_path: Path) -> None:
    with subject(tmp_path, BILLING, ("pgbill",)) as pair:
        with pytest.raises(ImportError, match="production modules only"):
            pair.client.request("import", module="os")
        assert os.getpid() != pair.proc.pid


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as another uid")
def test_a_tests_directories_are_shared_with_the_subject_group_only() -> None:
    """share() (patchgate_judge): the test's dir becomes 2770 in the judge's one supplementary
    group, its parents the judge owns get group traverse only; a parent it does not own is left."""
    from tests.unit._inside_helpers import judge  # noqa: PLC0415 - the plugin module, by path

    judge_uid, shared = 54321, 54322
    root = Path(tempfile.mkdtemp())  # under /tmp: reachable by the judge's uid
    root.chmod(0o711)
    top = root / "basetemp"
    test_dir = top / "pytest-0" / "test_x0"
    test_dir.mkdir(parents=True, mode=0o700)
    for p in (top, top.parent / "basetemp" / "pytest-0", test_dir):
        os.chown(p, judge_uid, judge_uid)
        os.chmod(p, 0o700)
    pid = os.fork()
    if pid == 0:  # the judge: its own uid, the shared group as its one extra group
        try:
            os.setgroups([shared])
            os.setgid(judge_uid)
            os.setuid(judge_uid)
            judge.share(str(test_dir))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    st = os.stat(test_dir)
    assert (st.st_gid, st.st_mode & 0o7777) == (shared, 0o2770)
    for parent in (top / "pytest-0", top):
        pst = os.stat(parent)
        assert (pst.st_gid, pst.st_mode & 0o777) == (shared, 0o710)
    assert os.stat(root).st_gid != shared  # not the judge's: untouched
    shutil.rmtree(root)
