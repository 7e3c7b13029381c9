"""What the executor keeps on disk: the content-addressed blob store and per-process work dirs.

Imports only ``executord.errors`` and ``patchgate``; ``runs`` and ``service`` read from here.
"""
