"""The ``patchgate`` command-line client.

It holds public keyrings only: it computes provenance and digests, asks the signer for a signature,
enforces the admission matrix and writes ledgers and the receipt. Its rooms, from the top down
(imports run one way, down this list, and every room may import :mod:`patchgate`):

* :mod:`client.cli` and :mod:`client.errors` — the entry point and the one error boundary;
  :mod:`client.outpaths` — the one check of every output path;
* :mod:`client.commands` — one module per CLI command (argument parsing and output only);
* :mod:`client.pinning` — the operator's commands that make and check pins;
* :mod:`client.report` — what ``check`` prints: pure renderers of the receipt;
* :mod:`client.lanes` — local daemons: ``up``, ``down`` and the demo's lane, the Docker engine;
* :mod:`client.gate` — the pipeline of ``check``: workspace, provenance, steps, execution;
* :mod:`client.verdict` — the rules: admission matrix, stability, credit, posture, receipt;
* :mod:`client.analysis` — what a patch changed: diff, changed symbols, assertion classes.
"""

__all__: list[str] = []
