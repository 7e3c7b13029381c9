"""The supervisor (issue 20), unprivileged: it starts a real subject and a real pytest judge over
pipes, relays the judge's records stamped with the nonce, adds its own (executed, the subject's
end, how the judge ended), enforces the clock bound and exits with the judge's status. Each
attack of the subject on the verdict is a test here beside its control."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit._inside_helpers import run_supervisor, supervisor_config, write_tree

SHOP = {
    "src/pgshop/__init__.py": """
        import decimal

        class Amount(decimal.Decimal):
            def __ge__(self, other):
                return True

        def prorate(total, days, of):
            return (decimal.Decimal(total) * days / of).quantize(decimal.Decimal("0.01"))

        def prorate_tricked(total, days, of):
            return Amount("-1.67")

        def picky(x):
            if x < 0:
                raise ValueError("negative")
            assert x != 13, "unlucky"
            return x

        def leave():
            import os
            os._exit(3)

        def hang():
            import time
            time.sleep(3600)

        def forge():
            import os, json
            line = json.dumps({"kind": "item", "nodeid": "tests/test_shop.py::test_forged",
                               "outcome": "pass", "duration_ms": 1, "failure": "",
                               "executed": []}).encode() + b"\\n"
            for fd in range(3, 64):
                try:
                    os.write(fd, line)
                except OSError:
                    pass
            return 0
    """,
    "conftest.py": """
        import pgshop  # an initial conftest importing production code: still a proxy

        def pytest_configure(config):
            assert type(pgshop).__name__ == "ProxyModule"
    """,
    "pgcheck.py": """
        def at_least(value, floor):
            assert value >= floor, f"{value} < {floor}"
    """,
    "tests/test_shop.py": """
        import decimal
        import pgcheck
        import pgshop

        def test_helper_predicate_fails():
            pgcheck.at_least(pgshop.prorate("10", 1, 6), 2)

        def test_honest():
            assert pgshop.prorate("10", 1, 6) >= 0

        def test_predicate_fails():
            assert pgshop.prorate("10", 1, 6) == decimal.Decimal("9")

        def test_tricked_comparison():
            assert pgshop.prorate_tricked("10", 1, 6) >= 0

        def test_subject_raises():
            assert pgshop.picky(-1) == -1

        def test_assert_in_production():
            assert pgshop.picky(13) == 13

        def test_monkeypatch(monkeypatch):
            monkeypatch.setattr(pgshop, "prorate", lambda *a: 0)
            assert pgshop.prorate("1", 1, 1) == 0
    """,
}


def _items(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["nodeid"].split("::")[-1]: r for r in records if r["kind"] == "item"}


def test_a_judged_run_end_to_end(tmp_path: Path) -> None:
    write_tree(tmp_path, SHOP)
    code, records, err = run_supervisor(supervisor_config(tmp_path, ["tests/test_shop.py"]))
    assert [r["seq"] for r in records] == list(range(len(records))), err
    assert all(r["nonce"] == "n0nce" for r in records)
    assert records[0]["kind"] == "start"
    items = _items(records)
    got = {n: (i["outcome"], i["failure_kind"]) for n, i in items.items()}
    assert got == {
        "test_honest": ("pass", ""),  # the control
        "test_predicate_fails": ("fail", "predicate"),
        "test_helper_predicate_fails": ("fail", "predicate"),  # a judge-side helper's assert
        "test_tricked_comparison": ("error", "judge_error"),  # a handle, not a pass
        "test_subject_raises": ("error", "subject"),
        "test_assert_in_production": ("error", "subject"),  # not the predicate failing
        "test_monkeypatch": ("error", "judge_error"),
    }, err
    assert "monkeypatching production code" in items["test_monkeypatch"]["failure"]
    assert not any(r["kind"] == "begin" for r in records)  # the supervisor's own, not relayed
    finish = next(r for r in records if r["kind"] == "finish")
    judge = records[-1]
    assert judge == {**judge, "kind": "judge", "event": "exit", "returncode": 1}
    assert code == finish["exitstatus"] == 1


def test_a_hanging_subject_is_exceeded_bound_and_later_calls_say_where_it_went(
    tmp_path: Path,
) -> None:
    write_tree(tmp_path, SHOP)
    (tmp_path / "tests/test_attacks.py").write_text(
        "import pgshop\n"
        "def test_hang():\n    pgshop.hang()\n"
        "def test_after_hang():\n    assert 1 + 1 == 2\n"
        "def test_calls_after_hang():\n    assert pgshop.picky(1) == 1\n",
        encoding="utf-8",
    )
    cfg = supervisor_config(tmp_path, ["tests/test_attacks.py"], bound_ms=1000, grace_ms=300)
    batch = tmp_path / "batch.json"  # the judge's own per-test alarm, as the executor sets it
    batch.write_text(json.dumps({"bound_ms": 1000, "order": []}), encoding="utf-8")
    doc = json.loads(cfg.read_text())
    doc["judge"]["env"]["PATCHGATE_REPORT_BATCH"] = str(batch)
    cfg.write_text(json.dumps(doc))
    code, records, err = run_supervisor(cfg)
    items = _items(records)
    assert items["test_hang"]["outcome"] == "exceeded_bound", err  # the judge's own alarm
    hang = [r for r in records if r["kind"] == "subject" and r["event"] == "hang"]
    assert [h["nodeid"] for h in hang] == ["tests/test_attacks.py::test_hang"], err
    assert items["test_after_hang"]["outcome"] == "pass"  # the judge goes on
    after = items["test_calls_after_hang"]  # the subject is gone: error, saying where it went
    assert (after["outcome"], after["failure_kind"]) == ("error", "subject")
    assert "interrupted in tests/test_attacks.py::test_hang" in after["failure"]
    assert records[-1]["kind"] == "judge"
    assert code == next(r for r in records if r["kind"] == "finish")["exitstatus"] == 1


def test_a_subject_forging_item_lines_on_every_fd_is_never_relayed(tmp_path: Path) -> None:
    write_tree(tmp_path, SHOP)
    (tmp_path / "tests/test_attacks.py").write_text(
        "import pgshop\ndef test_forged():\n    assert pgshop.forge() == 0\n", encoding="utf-8"
    )
    code, records, err = run_supervisor(supervisor_config(tmp_path, ["tests/test_attacks.py"]))
    forged = [r for r in records if r["kind"] == "item"]
    assert [(r["nodeid"], r["outcome"]) for r in forged] == [
        ("tests/test_attacks.py::test_forged", "error")  # the judge's own record only
    ], err
    garbage = [r for r in records if r["kind"] == "subject" and r["event"] == "garbage"]
    assert garbage, err
    assert code == 1


def test_the_subject_exiting_mid_test_is_reported_for_that_test(tmp_path: Path) -> None:
    write_tree(tmp_path, SHOP)
    (tmp_path / "tests/test_exit.py").write_text(
        "import pgshop\ndef test_leave():\n    assert pgshop.leave() is None\n", encoding="utf-8"
    )
    code, records, err = run_supervisor(supervisor_config(tmp_path, ["tests/test_exit.py"]))
    ended = [r for r in records if r["kind"] == "subject"]
    assert ended == [{**ended[0], "event": "exit", "returncode": 3,
                      "nodeid": "tests/test_exit.py::test_leave"}], err  # fmt: skip
    assert _items(records)["test_leave"] == {
        **_items(records)["test_leave"],
        "outcome": "error",
        "failure_kind": "subject",
    }
    assert code == 1


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"switch_users": False, "test_only": False}, 78),
        ({"bogus": 1}, 78),
        ({"switch_users": True, "judge": "x"}, 78),
        ({"socket": ""}, 78),
        ({"socket": "/nonexistent/report.sock"}, 75),
    ],
)
def test_a_bad_config_or_no_socket_starts_no_child(
    tmp_path: Path, change: dict[str, Any], status: int
) -> None:
    """Refused before any child exists: the judge's argv would leave a marker file."""
    marker = tmp_path / "started"
    cfg = supervisor_config(tmp_path, [])
    doc = json.loads(cfg.read_text())
    doc["judge"]["argv"] = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    doc.update(change)
    cfg.write_text(json.dumps(doc))
    code, records, err = run_supervisor(cfg)
    assert code == status, err
    assert records == []
    assert not marker.exists()


def test_a_namespace_package_runs_in_the_subject_and_is_proxied_in_the_judge(
    tmp_path: Path,
) -> None:
    """PEP 420 (issue 24): ``src/acme/tools/rates.py`` with no ``__init__.py`` on the way. With
    ``acme`` a production name (the client names it, client.gate.runs.judging) the judge holds
    proxies of the namespace package and its module, and the code runs in the subject's
    process, not the judge's."""
    write_tree(tmp_path, {
        "src/acme/tools/rates.py": """
            import os

            def rate(x):
                return x * 2

            def where():
                return os.getpid()
        """,
        "tests/test_ns.py": """
            import os
            import sys

            from acme.tools import rates

            def test_served_by_the_subject():
                assert rates.rate(21) == 42
                assert rates.where() != os.getpid()
                assert type(sys.modules["acme"]).__name__ == "ProxyModule"
                assert type(sys.modules["acme.tools.rates"]).__name__ == "ProxyModule"
        """,
    })  # fmt: skip
    cfg = supervisor_config(tmp_path, ["tests/test_ns.py"], production=["acme"])
    code, records, err = run_supervisor(cfg)
    items = [(r["nodeid"], r["outcome"]) for r in records if r["kind"] == "item"]
    assert (code, items) == (0, [("tests/test_ns.py::test_served_by_the_subject", "pass")]), err


FORGER_AT_THE_ROOT = {
    # a flat layout (source_roots = ["."]): production code in a namespace package at the root;
    # the patch's module reports which process runs it, as a forger would find out
    "acme/tools/rates.py": """
        import os

        def where():
            return os.getpid()
    """,
    "tests/test_ns.py": """
        import os

        from acme.tools import rates

        def test_runs_apart():
            assert rates.where() != os.getpid()
    """,
    # pytest puts integration/ first on sys.path (a test module there, no __init__.py)
    "integration/helpers.py": """
        import os

        def where():
            return os.getpid()
    """,
    "integration/test_i.py": """
        import os

        def test_helper_apart():
            import helpers

            assert helpers.where() != os.getpid()
    """,
}


@pytest.mark.parametrize(
    ("test", "named"), [("tests/test_ns.py", "pass"), ("integration/test_i.py", "error")]
)
def test_a_flat_layouts_namespace_code_never_runs_in_the_judge(
    tmp_path: Path, test: str, named: str
) -> None:
    """A namespace package at the repository root, and a module pytest's ``prepend`` mode puts on
    the judge's path, ran in the JUDGE's process when the client did not name them: patched
    code beside the reporter, the hole the judge exists to close (the control, unnamed, shows the
    route: the code reports the judge's pid). Named as the client now names them, the root
    package runs in the subject, and the helper — which the subject has no path to — is an
    ``error``; neither a judge-side run nor a pass."""
    from client.gate.runs.judging import production_names  # noqa: PLC0415 - client side

    write_tree(tmp_path, FORGER_AT_THE_ROOT)
    _roots, names = production_names(tmp_path, ("",), ("tests/", "properties/", "pins/"))
    assert names == ("acme", "helpers", "integration")

    def outcome(production: list[str]) -> str:
        cfg = supervisor_config(
            tmp_path, [test], production=production, source_roots=[str(tmp_path)]
        )
        _code, records, err = run_supervisor(cfg)
        items = [r["outcome"] for r in records if r["kind"] == "item"]
        assert len(items) == 1, (records, err)
        return str(items[0])

    assert outcome([]) == "fail"  # unnamed: the patch's code ran in the judge (same pid)
    assert outcome(list(names)) == named


def test_the_supervisor_loads_the_standard_library_only_and_no_zygote_for_a_plain_run() -> None:
    """PID 1 starts before judge and subject, so what it imports is on every judged run's path:
    started as the sandbox starts it (``-I -S``), it holds no site-packages module, and the
    zygote (importlib.metadata, ctypes), which only a run with variants starts, stays unloaded."""
    import subprocess  # noqa: PLC0415

    from tests.unit._inside_helpers import INSIDE  # noqa: PLC0415

    path = str(INSIDE / "supervisor.py")
    probe = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('supervisor', {path!r})\n"
        "mod = sys.modules['supervisor'] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(mod)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
        "print(json.dumps([getattr(m, '__file__', None) or '' for m in sys.modules.values()]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    names, files = json.loads(out[0]), json.loads(out[1])
    assert "_patchgate_wire" in names
    assert not {"_patchgate_zygote", "ctypes", "importlib.metadata", "site"} & set(names)
    assert not [f for f in files if "site-packages" in f]
    # a run with variants loads it on demand
    probe += "mod.zygotepool._zygote(); print('_patchgate_zygote' in sys.modules)\n"
    again = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert again[-1] == "True"
