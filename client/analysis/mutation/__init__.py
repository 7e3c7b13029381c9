"""Can a property fail on the changed code: the mutants of a changed symbol, and what a patch adds
that could notice them.

``mutants`` makes up to K compiling mutants of one symbol's source, chosen from the patch sha;
``introspection`` lists what a patch adds that lets its code tell a mutant from a control (code
objects, frames, tracing, run-time code, computed names, the loader), so that the gate can refuse
mutation evidence it cannot trust; ``imports`` finds, statically, the files a property's runs can
import, so that such a marker counts only against the symbols whose runs import it. Syntax-tree
work; ``imports`` reads the two trees it is given. Imports :mod:`client.analysis.patch` (where a
symbol is defined, the layout), :mod:`patchgate` and the standard library.
"""

__all__: list[str] = []
