"""What a property's test function can mean, read from its syntax tree: its assertion class.

``assertions`` classifies a property's test function (tautology, fixture equality, opaque, a real
property) and hashes its predicate; ``assertion_rules`` judges each assertion, ``reach`` says which
statements can run and let an assertion fail, ``constfold`` what never changes, ``testscope``
what the test module and function bind, ``fixture_flow`` where fixture content flows,
``production`` which imported modules are the code under test, ``parameters`` a parametrized
test's parameter list (part of its predicate hash), ``probes`` whether an assertion's truth is
independent of what the code returned, ``astwalk`` the shared walkers.
Imports only :mod:`patchgate` and the standard library (not the other analysis rooms).
"""

__all__: list[str] = []
