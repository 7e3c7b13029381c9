"""The code that runs inside the sandbox, shipped with the executor and mounted read-only there.

Standard library only (and pytest on the judge's side); none of it is imported by the executor
but ``wire`` (the supervisor's config and the record vocabulary), which the daemon reads.

* ``wire`` — where every process of a judged run and the daemon meet: the call link's framing
  and values, the supervisor's config, the records (docs/reference/inside-wire.md);
* ``supervisor`` — PID 1 of a judged run: the config, one pair or one per variant; ``pair`` —
  one judge/subject pair's life (relay, clock bound, reaping); ``zygotepool`` — the batch's
  zygotes as the supervisor holds them; ``resetter`` — the reset between two variants;
* ``zygote`` — the fork server a role's zygote runs (standard library only); ``warmstart`` — the
  judge's zygote: pytest warmed, configured and collected once (the one module that touches
  ``_pytest`` internals); ``reset`` — the helper that removes what a uid left behind;
* ``subject``, ``storage``, ``tracer`` and ``forwarding`` — the server that imports the patched
  production code and answers calls, the values it reads from storage and the exception classes
  it verifies by identity, its executed tracer, and the forwarding of what it prints, logs and
  warns to the judge;
* ``patchgate_judge``, ``judgelink``, ``proxies`` — the judge's import hook, its end of the call
  link, and the proxies of the subject's modules and objects;
* ``patchgate_reporter`` — the pytest plugin that reports each test's outcome;
  ``patchgate_channel`` takes the run's nonce and connects at interpreter start, imported by
  ``sitecustomize`` (judge off), or writes to the supervisor's pipe (judge on).

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
    "storage.py",
    "tracer.py",
    "forwarding.py",
    "patchgate_judge.py",
    "judgelink.py",
    "proxies.py",
    "zygotepool.py",
    "pair.py",
    "resetter.py",
    "zygote.py",
    "warmstart.py",
    "reset.py",
)
