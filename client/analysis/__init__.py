"""What a patch changed and what its properties can show, read from trees and syntax trees: no
daemon, no verdict. Three rooms, imports running one way:

* ``patch/`` — what the patch touched: the base and patched trees compared, each path's role,
  the changed symbols;
* ``classify/`` — what a property's test function can mean: its assertion class and predicate
  hash;
* ``mutation/`` — the mutants of a changed symbol, and what a patch adds that could notice them
  (imports ``patch/``).

This is the ground floor of the client: it imports only :mod:`patchgate` and the standard library.
"""

__all__: list[str] = []
