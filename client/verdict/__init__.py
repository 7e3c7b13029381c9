"""The rules that turn findings into a verdict, as pure functions of what the gate measured.

``admission`` is the admission matrix, ``stability`` compares the two runs, ``flakes`` says when a
pre-listed flake excuses a failure, ``citations`` when a freeze citation holds, ``credit`` gives one
point per covered changed symbol and names the rejection codes, ``scoring`` scores credit with its
evidence (the executed rule, then the mutation stage's findings), ``posture`` merges everything into
the first failing row, ``receipt`` builds the receipt, ``recompute`` holds a receipt against its
recomputation, ``codes`` says what each code and posture means in words. Nothing here does I/O or
talks to a daemon; these modules import only each other (in that order) and :mod:`patchgate`."""

__all__: list[str] = []
