"""What a patch changed, read from the trees and their syntax trees: no daemon, no verdict.

``treediff`` compares the base tree with the tree ``git apply -p1`` made (the one answer to what
a patch touched), ``roles`` says what each path is to the gate (source, harness, oracle, pins,
compiled code, data) from the base's layout, ``touched`` judges every changed path,
``symbols`` names the changed functions, classes and module code, ``diffparse`` says whether the
bytes are a diff at all (held to agree with git), ``assertions`` (with ``assertion_rules``)
classifies a property's assertions. This is the ground floor of the client: it imports only
:mod:`patchgate` and the standard library.
"""

__all__: list[str] = []
