"""The operator's commands, the reviewed side of the gate: ``init``, ``pin`` and ``env build``.

Each module is flags in, report out; the work is in :mod:`client.pinning` and :mod:`client.gate`.
"""
