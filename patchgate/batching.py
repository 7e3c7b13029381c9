"""Batched runs: which properties share one sandbox, and in which order each run takes them.

A property's argv is its **command prefix** followed by its **node ids**: the node ids are the
words at the end of the argv, after the longest signed allowed command, that are neither options
nor the value of an option (``-k expr``); the prefix is everything before them. Properties whose
prefixes are equal form one group, and each run of a group is one invocation
``prefix + every node id of the group`` in one fresh sandbox. A property whose argv does not end in
node ids (``pytest tests/a.py -q``) has the whole argv as its prefix and no node ids of its own:
it shares a sandbox only with properties of the very same argv.

The order of a run: run 1 takes the node ids in a shuffle seeded from the pin's seed, run 2 the
reverse of run 1 (so every pair of properties meets in both orders), runs 3 and 4 a second seeded
shuffle and its reverse, and so on. Used by the executor (which runs the groups) and by the client
(which spreads whole groups over executors); stdlib only.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "VALUE_OPTIONS",
    "Group",
    "group_properties",
    "node_arguments",
    "positionals",
    "run_order",
    "split_command",
    "variant_members",
]

VALUE_OPTIONS = frozenset({  # pytest options whose value is the next word
    "-p", "-k", "-m", "-c", "-o", "-W", "-r", "--deselect", "--ignore", "--ignore-glob",
    "--rootdir", "--confcutdir", "--basetemp", "--override-ini", "--tb", "--maxfail",
    "--durations", "--import-mode", "--junitxml", "--junit-xml",
})  # fmt: skip


def _start(argv: Sequence[str], allowed: Sequence[Sequence[str]]) -> int:
    prefixes = [a for a in allowed if len(a) <= len(argv) and tuple(argv[: len(a)]) == tuple(a)]
    return max((len(a) for a in prefixes), default=len(argv))


def positionals(argv: Sequence[str]) -> list[str]:
    """The words of ``argv`` that are neither options nor an option's value, as pytest parses
    them (``-W ignore::SomeWarning``: the filter is ``-W``'s value, not a node id)."""
    return [argv[i] for i in _node_positions(argv, 0)]


def _node_positions(argv: Sequence[str], start: int) -> list[int]:
    out: list[int] = []
    takes_value = False
    for i in range(start, len(argv)):
        word = argv[i]
        if takes_value:
            takes_value = False
        elif word.startswith("-"):
            takes_value = word in VALUE_OPTIONS
        elif word:
            out.append(i)
    return out


def node_arguments(argv: Sequence[str], allowed: Sequence[Sequence[str]]) -> list[str]:
    """The words after the longest allowed prefix that are neither options nor an option's value:
    the property's node ids (wherever they stand)."""
    return [argv[i].removeprefix("./") for i in _node_positions(argv, _start(argv, allowed))]


def split_command(
    argv: Sequence[str], allowed: Sequence[Sequence[str]]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(prefix, trailing node ids): the node ids after which nothing else follows."""
    positions = _node_positions(argv, _start(argv, allowed))
    cut = len(argv)
    for i in reversed(positions):
        if i != cut - 1:
            break
        cut = i
    return tuple(argv[:cut]), tuple(argv[cut:])


@dataclass(frozen=True)
class Group:
    """Properties that run in one sandbox: the shared prefix and each member's node ids."""

    prefix: tuple[str, ...]
    members: tuple[tuple[str, tuple[str, ...]], ...]  # (property id, its trailing node ids)

    @property
    def ids(self) -> tuple[str, ...]:
        """The member property ids, in suite order."""
        return tuple(pid for pid, _ in self.members)

    def argv(self, order: Sequence[str]) -> tuple[str, ...]:
        """The invocation for one run: the prefix, then the members' node ids in ``order`` (member
        property ids), each node id once."""
        nodes = dict(self.members)
        words: dict[str, None] = {}
        for pid in order:
            for n in nodes[pid]:
                words.setdefault(n, None)
        return (*self.prefix, *words)


def group_properties(
    props: Sequence[tuple[str, Sequence[str]]], allowed: Sequence[Sequence[str]]
) -> list[Group]:
    """Group ``(property id, argv)`` pairs by command prefix, in suite order of first member."""
    groups: dict[tuple[str, ...], list[tuple[str, tuple[str, ...]]]] = {}
    for pid, argv in props:
        prefix, nodes = split_command(argv, allowed)
        groups.setdefault(prefix, []).append((pid, nodes))
    return [Group(prefix, tuple(m)) for prefix, m in groups.items()]


def run_order(ids: Sequence[str], seed: int, run_index: int) -> list[str]:
    """The order of ``ids`` in run ``run_index`` (1-based): seeded shuffles, every even run the
    reverse of the run before it."""
    out = sorted(ids)
    random.Random(f"{seed}:{(run_index - 1) // 2}").shuffle(out)  # noqa: S311 - an order, not a secret
    if run_index % 2 == 0:
        out.reverse()
    return out


def variant_members(
    ids: Sequence[str], own: Sequence[str], request: Sequence[str] = ()
) -> list[str]:
    """Of ``ids`` (in their order), those a mutation variant runs: its ``own`` scope
    (``Variant.scope``), else the request's ``variant_scope``, else all of them. The executor
    runs these and the client expects exactly their outcomes."""
    want = set(own) or set(request)
    return [pid for pid in ids if not want or pid in want]
