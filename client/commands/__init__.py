"""One module per ``patchgate`` command, each with ``register(subparsers)`` and ``run(args)``.

A command parses its flags into a settings object, calls the room that does the work and prints
the result; it holds no gate logic. Commands may import :mod:`client.gate`, :mod:`client.verdict`,
:mod:`client.analysis`, :mod:`client.lanes`, :mod:`client.errors` and :mod:`patchgate`; nothing
below imports a command. ``_util`` holds the helpers they share (clock, ``--out``, JSON output).

``check`` starts the gate on one patch and ``_output`` renders what it found; ``properties`` writes
a revision's property ledger; ``verify`` is ``verify-receipt`` (``verify_recompute`` its
``--recompute`` form); ``explain`` says what a code means; ``demo``, ``up`` and ``down`` (``up``)
run the laptop lane; ``operator/`` holds ``init``, ``pin`` and ``env build``; ``ledgers/`` the
ledger steps on their own."""

__all__: list[str] = []
