"""Integration tests: real daemons over real sockets, real containers.

Every ``patchgate check`` these tests start (directly, through a script, or in a fleet's client
container) caps the mutation stage at 4 mutants per symbol unless the test asks for more
(``--mutants``): CI time stays flat while the stage still runs everywhere; the mutation tests
themselves (tests/integration/test_gate_mutation_v2.py) ask for every mutant.
"""

import os

os.environ.setdefault("PATCHGATE_MUTANTS", "4")
