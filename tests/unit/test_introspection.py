"""client.analysis.mutation.introspection: what a patch adds that could notice its mutation."""

from __future__ import annotations

import pytest

from client.analysis.mutation.introspection import introspection_added, markers_of

BASE = b'''"""m"""
import re
from pathlib import Path

DATA = Path(__file__).parent / "rates.json"


def h():
    return h.__code__


def f(x):
    return re.compile(r"\\d+").match(str(x)) is not None
'''

# Each guard: code a patch adds so that a mutant run can tell it is one (issue 15), and that still
# can under mutation v2 (mutants served from memory beside hidden controls).
GUARDS = {
    "source length": "import inspect\n\ndef f(x):\n    if len(inspect.getsource(f)) != 9:\n"
    "        raise SystemExit\n    return x\n",
    "code object": "def f(x):\n    assert f.__code__.co_code\n    return x\n",
    "code constants": "def f(x, g):\n    return g.co_consts\n",
    "aliased sys.modules": "import sys as s\n\ndef f(x):\n    return s.modules[__name__]\n",
    "computed getattr": "def f(x):\n    return getattr(f, '__co' + 'de__')\n",
    "getattr of a marker": "def f(x):\n    return getattr(f, '__code__')\n",
    "eval": "def f(x):\n    return eval('x')\n",
    "exec": "def f(x):\n    exec('y = 1')\n",
    "compile": "def f(x):\n    return compile(x, 'f', 'exec')\n",
    "tracer": "import sys\n\ndef f(x):\n    return sys.gettrace() is None\n",
    "frame": "import sys\n\ndef f(x):\n    return sys._getframe().f_back\n",
    "current frame": "def f(x, inspect):\n    return inspect.currentframe()\n",
    "traceback module": "import traceback\n\ndef f(x):\n    return traceback.extract_stack()\n",
    "traceback frame": "def f(e):\n    return e.__traceback__.tb_frame\n",
    "generator code": "def f(g):\n    return g.gi_code\n",
    "monitoring": "import sys\n\ndef f(x):\n    return sys.monitoring\n",
    "proc memory": "def f(x):\n    return open('/proc/self/mem', 'rb')\n",
    "builtins module": "import builtins\n\ndef f(x):\n    return builtins\n",
    "import inspect": "import inspect\n",
    "import gc": "import gc\n",
    "import dis": "from dis import dis\n",
    "globals namespace": "def f(x):\n    return globals()[x]\n",
    "the loader": "def f(x):\n    return __loader__\n",
    "a second copy from disk": "from importlib.util import spec_from_file_location\n",
    "importlib.reload": "import importlib\n\ndef f(m):\n    return importlib.reload(m)\n",
    "a fresh interpreter": "import subprocess\n\ndef f(x):\n    return subprocess.run(x)\n",
    "os.system": "import os\n\ndef f(x):\n    return os.system(x)\n",
    "methodcaller": "from operator import methodcaller\n\ndef f(x, n):\n"
    "    return methodcaller(n)(x)\n",
    "getattr as a value": "from functools import reduce\n\ndef f(x, parts):\n"
    "    return reduce(getattr, parts, x)\n",
    "a type's __dict__": "def f(g, k):\n    return type(g).__dict__[k].__get__(g)\n",
    "asyncio subprocess": "import asyncio\n\nasync def f(x):\n"
    "    return await asyncio.create_subprocess_exec(x)\n",
}

# What a mutant and a control share under mutation v2 (the files on disk, the environment, argv):
# no longer markers, so an honest patch using them keeps its mutation evidence.
SHARED = {
    "environment switch": "import os\n\nDEBUG = os.environ.get('DEBUG')\n",
    "getenv": "from os import getenv\n\ndef f(x):\n    return getenv('X')\n",
    "own file": "def f(x):\n    open(__file__).read()\n    return x\n",
    "named file": "def f(x):\n    open('pkg/mod.py').read()\n    return x\n",
    "argv": "import sys\n\ndef f(x):\n    return x if 'test_b' in ' '.join(sys.argv) else 0\n",
    "from sys import argv": "from sys import argv\n\ndef f(x):\n    return argv\n",
    "gate's name": "def f(x):\n    return 'patchgate' in x\n",
    "PYTEST_CURRENT_TEST": "import os\n\ndef f():\n    return os.environ['PYTEST_CURRENT_TEST']\n",
    "linecache, tokenize, ast": "import ast\nimport linecache\nimport tokenize\n",
    "importlib, pkgutil, sysconfig, site": "import importlib\nimport pkgutil\nimport site\n"
    "import sysconfig\n",
    "signal": "import signal\n\nsignal.signal(signal.SIGTERM, lambda *a: None)\n",
    "a closure's cells": "def f(g):\n    return g.__closure__\n",
    "honest reload and system": "import platform\n\ndef f(cfg):\n    cfg.reload()\n"
    "    return platform.system()\n",
    "an instance's __dict__ and a constant getattr": "def f(o):\n"
    "    return o.__dict__, getattr(o, 'total', 0)\n",
}


@pytest.mark.parametrize("name", sorted(SHARED))
def test_what_mutant_and_control_share_is_no_marker(name: str) -> None:
    assert introspection_added(None, SHARED[name].encode()) == [], name


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_each_guard_is_a_marker_a_new_file_adds(name: str) -> None:
    assert introspection_added(None, GUARDS[name].encode()), name


def test_honest_code_adds_none() -> None:
    """``re.compile``, an attribute named like a builtin, a relative import, a constant getattr
    and a local variable are no markers."""
    honest = b'''"""m"""
import re
from . import rates
from .inspect import probe


def f(x, table):
    pattern = re.compile(r"\\d+")
    total = getattr(table, "total", 0)
    x.compile = True
    return probe(pattern.match(str(x)), rates.get(total))
'''
    assert introspection_added(None, honest) == []


def test_a_marker_the_base_already_had_is_not_added() -> None:
    """The base's ``__code__`` read stays; a second one is added."""
    patched = BASE.replace(b"    return re", b"    y = 1\n    return re")
    assert introspection_added(BASE, patched) == []
    again = BASE + b"\n\ndef g():\n    return f.__code__\n"
    added = introspection_added(BASE, again)
    assert [m.what for m in added] == ["attribute .__code__"]
    assert added[0].line == BASE.count(b"\n") + 4


def test_a_file_that_does_not_parse_is_a_marker() -> None:
    assert [m.what for m in introspection_added(BASE, b"def f(:\n")] == [
        "a file that does not parse"
    ]


def test_markers_of_an_unparsable_source_is_none() -> None:
    assert markers_of(b"def (") is None
