"""What a suite's lock leaves out: every installed distribution's requirements checked inside the
tree the lock built, as ``pip check`` does, for the Python that builds it.

A lock compiled on another Python (3.13's lacks ``typing-extensions``, which 3.11 needs) installs
without an error (``--no-deps``) and then fails at collection with a foreign ``TypeError`` that
names no distribution. :func:`lock_gaps` names the missing or mismatched distribution and who
needs it instead. Markers are evaluated for the running interpreter (the one ``env build`` runs
pip with, whose version the environment records); a requirement's extras bring in the extra's own
requirements of the distribution it names.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

__all__ = ["lock_gaps"]


def _applies(req: Requirement, extra: str) -> bool:
    if req.marker is None:
        return not extra
    # the marker's own environment, with this extra: evaluate() fills in the rest
    return bool(req.marker.evaluate({"extra": extra}))


def _requirements(dist: metadata.Distribution, where: str) -> tuple[list[Requirement], list[str]]:
    reqs: list[Requirement] = []
    bad: list[str] = []
    for text in dist.requires or ():
        try:
            reqs.append(Requirement(text))
        except InvalidRequirement:
            bad.append(f"{where}: cannot read its requirement {text!r}")
    return reqs, bad


def lock_gaps(tree: Path) -> list[str]:
    """One line per requirement of a distribution in ``tree`` that ``tree`` does not meet."""
    dists: dict[str, metadata.Distribution] = {
        canonicalize_name(d.metadata["Name"]): d
        for d in metadata.distributions(path=[str(tree)])
        if d.metadata["Name"]
    }
    gaps: list[str] = []
    wanted: list[tuple[str, str]] = [(name, "") for name in sorted(dists)]
    seen: set[tuple[str, str]] = set()
    while wanted:
        name, extra = wanted.pop(0)
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        dist = dists[name]
        who = f"{dist.metadata['Name']} {dist.version}" + (f" [{extra}]" if extra else "")
        reqs, bad = _requirements(dist, who)
        gaps.extend(bad)
        for req in (r for r in reqs if _applies(r, extra)):
            gaps.extend(_unmet(req, who, dists))
            child = canonicalize_name(req.name)
            if child in dists:
                wanted.extend((child, canonicalize_name(e)) for e in sorted(req.extras))
    return gaps


def _unmet(req: Requirement, who: str, dists: dict[str, metadata.Distribution]) -> Iterable[str]:
    found = dists.get(canonicalize_name(req.name))
    if found is None:
        yield f"{who} needs {req.name}{req.specifier}, which the lock does not install"
    elif req.specifier and not req.specifier.contains(found.version, prereleases=True):
        yield f"{who} needs {req.name}{req.specifier}, but the lock installs {found.version}"
