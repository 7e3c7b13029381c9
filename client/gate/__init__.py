"""The pipeline of ``patchgate check``: provenance -> changed symbols -> oracle and pins -> fixture
digest -> environment -> signature -> admission -> runs -> ledgers -> second pin -> credit ->
receipt.

``pipeline`` orders the steps and keeps the state of one check; ``steps`` does each step;
``settings`` is the frozen configuration; ``workspace`` extracts the base and applies the patch;
``provenance`` reads who drafted what; ``secondpin`` runs the suite on a second pin; ``selftest``
is ``check --self-test``; ``evidence`` keeps the run logs and definition sites for people;
``environment`` builds or finds the base's environment before signing; ``attributes`` reads the
git metadata that changes what a checkout holds; ``properties`` is ``patchgate properties``;
``recompute`` re-derives a check's verdict from its kept signed run results. What
talks to executors is in ``runs/``: the suite's lane, its spread and the mutation stage. The gate
may import :mod:`client.verdict`, :mod:`client.analysis` and :mod:`patchgate`, never a command
or a lane.
"""

__all__: list[str] = []
