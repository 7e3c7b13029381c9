"""Executed, traced in the subject from its first import (issue 20 item 4): a symbol counts only
when its own code object ran — a builder called at import, a registering decorator, data built in
a fixture and a worker thread all count; a lambda in a symbol's defaults and a nested def that is
a symbol of its own do not count for the symbol around them."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path
from typing import Any

from client.analysis.patch.symbols import definitions
from patchgate.symbols import Symbol, wire_name
from tests.unit._inside_helpers import load, run_supervisor, supervisor_config, write_tree

PROD = textwrap.dedent(
    """
    import threading

    REG = []

    def builder():
        return {"rate": 3}

    TABLE = builder()

    def register(fn):
        REG.append(fn)
        return fn

    @register
    def handler(x):
        return x

    def outer():
        def inner():
            return 1
        return 2

    def with_default(k=lambda: 1):
        return 0

    def call_default():
        return with_default.__defaults__[0]()

    def worker(out):
        out.append(1)

    def in_thread():
        out = []
        t = threading.Thread(target=worker, args=(out,))
        t.start()
        t.join()
        return out

    def fixture_data():
        return [1, 2]

    def make():
        def made():
            return 1
        return made

    MADE = make()

    def never():
        return None
    """
)
TESTS = """
import pytest
import pgtrace

@pytest.fixture
def data():
    return pgtrace.fixture_data()

def test_outer():
    assert pgtrace.outer() == 2

def test_thread():
    assert pgtrace.in_thread() == [1]

def test_fixture(data):
    assert data == [1, 2]

def test_handler():
    assert pgtrace.handler(1) == 1

def test_default_lambda():
    assert pgtrace.call_default() == 1

def test_closure():
    assert pgtrace.MADE() == 1
"""


def _targets(source: str, module: str) -> list[dict[str, Any]]:
    out = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                name = f"{prefix}.{node.name}"
                out.append({"path": f"src/{module}.py", "first": first,
                            "last": node.end_lineno, "name": name})  # fmt: skip
                walk(node.body, name)

    walk(ast.parse(source).body, module)
    return out


def test_executed_per_phase_counts_only_a_symbols_own_code(tmp_path: Path) -> None:
    write_tree(tmp_path, {"src/pgtrace.py": PROD, "tests/test_trace.py": TESTS})
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps(_targets(PROD, "pgtrace")), encoding="utf-8")
    cfg = supervisor_config(tmp_path, ["tests/test_trace.py"], production=["pgtrace"],
                            targets=str(targets))  # fmt: skip
    code, records, err = run_supervisor(cfg)
    assert code == 0, err
    executed: dict[str, set[str]] = {}
    for r in records:
        if r["kind"] == "executed":
            key = "import" if r["phase"] == "import" else r["nodeid"].split("::")[-1]
            executed.setdefault(key, set()).update(r["targets"])
    assert executed == {
        "import": {"pgtrace.builder", "pgtrace.register", "pgtrace.make"},
        "test_outer": {"pgtrace.outer"},  # not pgtrace.outer.inner, never called
        "test_thread": {"pgtrace.in_thread", "pgtrace.worker"},
        "test_fixture": {"pgtrace.fixture_data"},
        "test_handler": {"pgtrace.handler"},
        "test_default_lambda": {"pgtrace.call_default"},  # the lambda is not with_default
        "test_closure": {"pgtrace.make.made"},  # the nested symbol, not make around it
    }, err


def test_the_old_rule_would_count_the_lambda_and_the_nested_def(tmp_path: Path) -> None:
    """The control: by first line alone (the single-process reporter's rule) the lambda in
    with_default's defaults counts for with_default; by its own code object it does not."""
    tracer = load("tracer").Tracer()
    src = tmp_path / "src"
    write_tree(src, {"pgtrace2.py": PROD})
    targets = tmp_path / "t.json"
    targets.write_text(json.dumps(_targets(PROD, "pgtrace2")), encoding="utf-8")
    tracer.configure(str(targets), str(tmp_path))
    code = compile(PROD, str(src / "pgtrace2.py"), "exec")
    ns: dict[str, Any] = {}
    exec(code, ns)  # noqa: S102 - the test's own source, to get real code objects
    lam = ns["with_default"].__defaults__[0].__code__
    (site,) = [t for t in _targets(PROD, "pgtrace2") if t["name"] == "pgtrace2.with_default"]
    assert site["first"] <= lam.co_firstlineno <= site["last"]  # the old rule: a hit
    assert tracer.name_of(lam) is None
    assert tracer.name_of(ns["with_default"].__code__) == "pgtrace2.with_default"


NESTED = textwrap.dedent(
    """
    REGISTRY = {}

    def register(fn):
        def registered(*args):
            return fn(*args)
        REGISTRY[fn.__name__] = registered
        return registered

    @register
    def handler(x):
        return x + 1

    def outer(x):
        def helper(y):
            return y * 2
        return helper(x)

    def a_function_whose_qualified_name_is_much_longer_than_sixty_four_characters():
        def its_nested_helper_with_a_long_name_too():
            return 1
        return its_nested_helper_with_a_long_name_too()
    """
)


def test_nested_functions_that_ran_count_under_the_names_the_client_sends(tmp_path: Path) -> None:
    """Issue 39: the client names a nested def ``outer.<locals>.helper`` and sends a name over 64
    characters hashed; the tracer matched neither, so a nested helper or a registering
    decorator's inner function that ran was "never executed" under the judge."""
    tracer = load("tracer").Tracer()
    src = tmp_path / "src"
    write_tree(src, {"pgnest.py": NESTED})
    sent = []
    for qualname, node in definitions(ast.parse(NESTED).body):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        name = wire_name(Symbol.make("pgnest", qualname))
        sent.append({"path": "src/pgnest.py", "first": first, "last": node.end_lineno,
                     "name": name})  # fmt: skip
    targets = tmp_path / "t.json"
    targets.write_text(json.dumps(sent), encoding="utf-8")
    tracer.configure(str(targets), str(tmp_path))
    ns: dict[str, Any] = {"__name__": "pgnest"}
    exec(compile(NESTED, str(src / "pgnest.py"), "exec"), ns)  # noqa: S102 - the test's source
    long_name = "a_function_whose_qualified_name_is_much_longer_than_sixty_four_characters"
    helper = ns["outer"].__code__.co_consts
    inner = [c for c in helper if hasattr(c, "co_qualname")]
    assert [c.co_qualname for c in inner] == ["outer.<locals>.helper"]
    assert tracer.name_of(inner[0], "pgnest") == "pgnest.outer.<locals>.helper"
    registered = ns["handler"].__code__  # the decorator's inner function, as registered
    assert tracer.name_of(registered, "pgnest") == "pgnest.register.<locals>.registered"
    assert tracer.name_of(ns["register"].__code__, "pgnest") == "pgnest.register"
    long_code = ns[long_name].__code__
    assert tracer.name_of(long_code, "pgnest") == wire_name(f"pgnest.{long_name}")
    nested = next(c for c in long_code.co_consts if hasattr(c, "co_qualname"))
    want = wire_name(f"pgnest.{long_name}.<locals>.its_nested_helper_with_a_long_name_too")
    assert tracer.name_of(nested, "pgnest") == want
