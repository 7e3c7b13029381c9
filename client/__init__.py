"""The ``patchgate`` command-line client.

It holds public keyrings only: it computes provenance and digests, asks the signer for a signature,
enforces the admission matrix and writes ledgers and the receipt (DESIGN §1). Each command lives in
its own ``cmd_*.py`` module registered in :mod:`client.cli`.
"""

__all__: list[str] = []
