"""The code that runs inside the sandbox, shipped with the executor and mounted read-only there.

Standard library only (and pytest on the judge's side); none of it is imported by the executor,
which only needs to know where the files live, which to mount and the plugin's name.

* ``wire.py`` — the protocol every process of a judged run (and the daemon, for the supervisor's
  config and records) reads: framing, values, records, handles, callbacks, exceptions;
* ``supervisor.py`` — PID 1 of a judged run: starts the judge and the subject as two uids,
  relays the judge's records and adds its own, enforces the clock bound, reaps;
* ``subject.py``, ``tracer.py`` and ``forwarding.py`` — the server that imports the patched
  production code and answers calls, its executed tracer, and the forwarding of what it prints,
  logs and warns to the judge;
* ``patchgate_judge.py``, ``judgelink.py``, ``proxies.py`` — the judge's import hook, its end of
  the call link, and the proxies of the subject's modules and objects;
* ``zygote.py`` — what runs as a role's uid for the supervisor in a mutation batch (v2): the
  zygote, started once per role, that forks the role's process for every variant (a batch starts
  Python, pytest and its plugins once, not once per variant), and the reset helper run as each
  role's uid between two variants (what that uid left in the writable places and its SysV IPC
  objects removed);
* ``patchgate_reporter.py`` — the pytest plugin that reports each test's outcome;
  ``patchgate_channel.py`` takes the run's nonce and connects at interpreter start, imported by
  ``sitecustomize.py`` (judge off), or writes to the supervisor's pipe (judge on).

Inside the sandbox they are top-level modules of one read-only mount; they load one another by
file path under private ``_patchgate_*`` names, never from ``sys.path`` (so a production module
of the same name neither shadows them nor is shadowed in the subject).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FILES", "MODULE", "REPORTER_DIR"]

REPORTER_DIR = Path(__file__).resolve().parent
MODULE = "patchgate_reporter"
FILES = (
    f"{MODULE}.py",
    "patchgate_channel.py",
    "sitecustomize.py",
    "wire.py",
    "supervisor.py",
    "subject.py",
    "tracer.py",
    "forwarding.py",
    "patchgate_judge.py",
    "judgelink.py",
    "proxies.py",
    "zygote.py",
)
