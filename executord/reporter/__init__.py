"""The executor's pytest reporter, shipped with the executor and mounted read-only into sandboxes.

``patchgate_reporter.py`` is the plugin itself: stdlib and pytest only, never imported by the
executor (it runs inside the sandbox, on the sandbox's Python). This package only says where the
plugin lives on the host and under which name the sandbox loads it (``-p patchgate_reporter``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MODULE", "REPORTER_DIR"]

REPORTER_DIR = Path(__file__).resolve().parent
MODULE = "patchgate_reporter"
