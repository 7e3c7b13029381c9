"""The rules that turn findings into a verdict, as pure functions of what the gate measured.

``admission`` is the admission matrix, ``stability`` compares the two runs, ``credit`` gives one
point per covered changed symbol and names the rejection codes, ``posture`` merges everything into
the first failing row, ``receipt`` builds the receipt. Nothing here does I/O or talks to a daemon;
these modules import only each other (in that order) and :mod:`patchgate`.
"""

__all__: list[str] = []
