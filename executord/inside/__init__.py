"""The code that runs inside the sandbox, shipped with the executor and mounted read-only there.

Today that is the executor's pytest reporter.

``patchgate_reporter.py`` is the plugin itself (stdlib and pytest only); ``patchgate_channel.py``
takes the run's nonce and connects at interpreter start, imported by ``sitecustomize.py``. None of
them is imported by the executor: they run inside the sandbox, on the sandbox's Python, from a
read-only mount on ``PYTHONPATH``. This package only says where they live on the host, which files
to mount, and under which name the sandbox loads the plugin (``-p patchgate_reporter``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FILES", "MODULE", "REPORTER_DIR"]

REPORTER_DIR = Path(__file__).resolve().parent
MODULE = "patchgate_reporter"
FILES = (f"{MODULE}.py", "patchgate_channel.py", "sitecustomize.py")
