"""What a patch touched, from the two trees: the paths, their roles, the changed symbols.

``treediff`` compares the base tree with the tree ``git apply -p1`` made (the one answer to what a
patch touched), ``diffparse`` says whether the bytes are a diff at all (held to agree with git),
``roles`` says what each path is to the gate (source, harness, oracle, pins, compiled code, data)
from the base's layout, ``symbols`` names the changed functions, classes and module code (its
``definitions`` is the one walker that names a definition), ``covers`` resolves each ``covers``
entry in the base by kind, and ``touched`` judges every changed path with them. Imports only
:mod:`patchgate` and the standard library.
"""

__all__: list[str] = []
