"""One Execute, without grpc: refuse early, materialize, run each batch in sandboxes, decide.

``executor`` (verify → materialize → run twice → signed report), ``checks`` (refusals before
anything exists), ``request`` (the request as the domain sees it), ``channel`` and ``records``
(the live report stream from inside the sandbox and the rule that turns it into outcomes),
``fakeruntime`` (a scripted container runtime for unit tests). Imports ``sandbox``, ``store``,
``inside`` (only to find the files it mounts) and ``patchgate``; never ``service``.
"""
