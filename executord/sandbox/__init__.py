"""Containers: the sandbox policy, the one place containers are created, images, output tails.

``container`` (the ``ContainerRuntime`` protocol, the Docker implementation, ``run_container``),
``image`` (the ``host`` image and named images), ``output`` (capped stdout/stderr tails). Imports
only ``executord.errors`` and ``patchgate``: it knows nothing of runs or reports.
"""
