"""What a patch changed, read from the trees and their syntax trees: no daemon, no verdict.

``treediff`` compares the base tree with the tree ``git apply -p1`` made (the one answer to what
a patch touched), ``roles`` says what each path is to the gate (source, harness, oracle, pins,
compiled code, data) from the base's layout, ``touched`` judges every changed path,
``symbols`` names the changed functions, classes and module code, ``diffparse`` says whether the
bytes are a diff at all (held to agree with git), ``assertions`` classifies a property's test
function (``assertion_rules`` judges each assertion; ``reach`` says which can run and fail the test,
``constfold`` what never changes, ``testscope`` what the test module binds, ``fixture_flow``
where fixture content flows, ``production`` which imports are the code under test, ``astwalk``
the shared walkers). This is the ground floor of the client: it imports only
:mod:`patchgate` and the standard library.
"""

__all__: list[str] = []
