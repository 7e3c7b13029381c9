"""What the gate sends to executors and reads back: the suite's runs and the mutation stage.

``suite`` is the signed suite every step after the signature takes; ``judging`` the judge mode every
Execute sends; ``execution`` runs a lane over its executors through the one scheduler the mutation
stage shares (``spread`` cuts a batched suite into chunks, ``durations`` remembers run times for
that cut only); ``targets`` locates the changed symbols for the executor's tracer and reads back
which runs executed them; ``mutation`` is the mutation stage (the mutants of each symbol that would
earn credit, in batches of variants; the score with what they showed is
:mod:`client.verdict.scoring`); ``kept`` keeps every executor-signed result beside the receipt and
``signed`` reads them back, verified and bound to one check. Imports the gate's shared ``settings``
and ``workspace``, :mod:`client.verdict`, :mod:`client.analysis` and :mod:`patchgate`; never
``pipeline`` or ``steps``, which import it."""

__all__: list[str] = []
