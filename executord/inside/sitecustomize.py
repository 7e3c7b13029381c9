"""Interpreter start-up hook of the sandbox (found through ``PYTHONPATH=/patchgate/reporter``).

It opens the reporter's channel before any other code of the process runs (``patchgate_channel``).
It shadows any other ``sitecustomize`` of the sandbox's Python; a failure here never stops the
interpreter (the run then has no report and is ``error``).
"""

from __future__ import annotations

import contextlib
import importlib

with contextlib.suppress(Exception):
    importlib.import_module("patchgate_channel")  # a top-level module of the same mount
