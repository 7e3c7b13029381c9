"""The operator's side of the gate: pins made and checked by commands, never by hand.

``scaffold`` writes a first ``pins/`` and ``[tool.patchgate]`` (``patchgate init``), ``fixtures``
rehashes the fixture tree into ``fixtures.json`` (``pin fixtures``), ``collect`` turns the tests
marked ``@pytest.mark.patchgate`` into ``properties.json`` (``pin properties --from-pytest``),
``check`` validates the three pin files against their JSON Schemas, the parser and the symbols of
a tree (``pin check``). ``tree`` reads a working tree or a git revision, ``changes`` is what a
rewrite changed, ``names`` the symbol names a ``covers`` entry may use, ``tracked`` which fixture
files git tracks. Each module refuses before it writes: a refusal leaves no file behind.

This room may import :mod:`client.analysis` (symbol tables, the source layout),
:mod:`client.gate` (only to extract a revision as ``check`` extracts its base),
:mod:`client.errors` and :mod:`patchgate`; only :mod:`client.commands` imports it. (Not named
``operator``: a directory of that name beside a script run from ``client/`` would shadow the
standard library's module.)
"""

__all__: list[str] = []
