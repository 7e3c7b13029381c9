"""client.analysis.mutation.introspection: what a patch adds that could notice its mutation."""

from __future__ import annotations

import pytest

from client.analysis.mutation.introspection import introspection_added, markers_of

BASE = b'''"""m"""
import re
from pathlib import Path

DATA = Path(__file__).parent / "rates.json"


def f(x):
    return re.compile(r"\\d+").match(str(x)) is not None
'''

# Each guard: code a patch adds so that a mutant run can tell it is one (issue 15).
GUARDS = {
    "source length": "import inspect\n\ndef f(x):\n    if len(inspect.getsource(f)) != 9:\n"
    "        raise SystemExit\n    return x\n",
    "code object": "def f(x):\n    assert f.__code__.co_code\n    return x\n",
    "own file": "def f(x):\n    open(__file__).read()\n    return x\n",
    "named file": "def f(x):\n    open('pkg/mod.py').read()\n    return x\n",
    "argv": "import sys\n\ndef f(x):\n    return x if 'test_b' in ' '.join(sys.argv) else 0\n",
    "aliased sys.modules": "import sys as s\n\ndef f(x):\n    return s.modules[__name__]\n",
    "environment": "import os\n\ndef f(x):\n    return os.environ.get('PATCHGATE_SEED')\n",
    "getenv": "from os import getenv\n\ndef f(x):\n    return getenv('X')\n",
    "computed getattr": "def f(x):\n    return getattr(f, '__co' + 'de__')\n",
    "getattr of a marker": "def f(x):\n    return getattr(f, '__code__')\n",
    "eval": "def f(x):\n    return eval('x')\n",
    "tracer": "import sys\n\ndef f(x):\n    return sys.gettrace() is None\n",
    "frame": "import sys\n\ndef f(x):\n    return sys._getframe().f_back\n",
    "traceback": "import traceback\n\ndef f(x):\n    return traceback.extract_stack()\n",
    "gate's name": "def f(x):\n    return 'patchgate' in x\n",
    "proc": "def f(x):\n    return open('/proc/self/cmdline').read()\n",
    "from sys import argv": "from sys import argv\n\ndef f(x):\n    return argv\n",
    "builtins module": "import builtins\n\ndef f(x):\n    return builtins\n",
}


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
    """The base's ``__file__`` (a data path) stays; a second one is added."""
    patched = BASE.replace(b"    return re", b"    y = 1\n    return re")
    assert introspection_added(BASE, patched) == []
    again = BASE + b"\n\ndef g():\n    return open(__file__).read()\n"
    added = introspection_added(BASE, again)
    assert [m.what for m in added] == ["name __file__"]
    assert added[0].line == BASE.count(b"\n") + 4


def test_a_file_that_does_not_parse_is_a_marker() -> None:
    assert [m.what for m in introspection_added(BASE, b"def f(:\n")] == [
        "a file that does not parse"
    ]


def test_markers_of_an_unparsable_source_is_none() -> None:
    assert markers_of(b"def (") is None
