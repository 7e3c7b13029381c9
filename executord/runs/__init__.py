"""One Execute, without grpc: refuse early, materialize, run each batch in sandboxes, decide.

``executor`` (plan the sandboxes, sign the report), ``prepared`` (verify and materialize: every
refusal before a container exists), ``runpath`` (the one run path: a slot, a sandbox, its records,
transport failures), ``variants`` (a variant batch's plan, files, deadline and outcomes),
``checks`` (refusals before anything exists), ``request`` (the request as the domain sees it),
``environment`` (the signed environment mounted), ``build`` (building one), ``sandboxspec`` (a
run's argv, mounts, environment and the supervisor's config), ``channel`` and ``records`` (the
live report stream from inside the sandbox and the rule that turns it into outcomes),
``fakeruntime`` (a scripted container runtime for unit tests). Imports ``sandbox``, ``store``,
``inside`` (only to find the files it mounts) and ``patchgate``; never ``service``.
"""
