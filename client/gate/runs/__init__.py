"""What the gate sends to executors and reads back: the suite's runs and the mutation stage.

``execution`` runs a lane over its executors (``spread`` cuts a batched suite into chunks,
``durations`` remembers run times for that cut only); ``targets`` locates the changed symbols for
the executor's tracer and reads back which runs executed them; ``mutation`` is the mutation stage
(the mutants of each symbol that would earn credit, one fresh sandbox each, and the score with
what they showed). Imports the gate's shared ``settings`` and ``workspace``,
:mod:`client.verdict`, :mod:`client.analysis` and :mod:`patchgate`; never ``pipeline`` or
``steps``, which import it.
"""

__all__: list[str] = []
