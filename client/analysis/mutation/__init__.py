"""Can a property fail on the changed code: the mutants of a changed symbol, and what a patch adds
that could notice them.

``mutants`` makes up to K compiling mutants of one symbol's source, chosen from the patch sha;
``introspection`` lists what a patch adds that lets its code watch itself or its run (its own
source, frames, argv, environment), so that the gate can refuse mutation evidence it cannot trust.
Pure syntax-tree work, no I/O. Imports :mod:`client.analysis.patch` (where a symbol is defined),
:mod:`patchgate` and the standard library.
"""

__all__: list[str] = []
