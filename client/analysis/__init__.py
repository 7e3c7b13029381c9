"""What a patch changed, read from text and syntax trees: no daemon, no verdict.

``diffparse`` reads a unified diff, ``symbols`` names the changed functions, classes and module
code, ``assertions`` (with ``assertion_rules``) classifies a property's assertions. This is the
ground floor of the client: it imports only :mod:`patchgate` and the standard library.
"""

__all__: list[str] = []
