"""patchgate.batching: command prefixes, groups, the seeded order of each run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from patchgate.batching import Group, group_properties, run_order, split_command, variant_members

PYTEST = ("python", "-m", "pytest")
ALLOWED = [PYTEST]


def test_the_prefix_is_everything_before_the_trailing_node_ids() -> None:
    """Options and their values stay in the prefix; the node ids at the end are split off."""
    argv = (*PYTEST, "-q", "-p", "no:cacheprovider", "a.py::t1", "b.py::t2")
    assert split_command(argv, ALLOWED) == (
        (*PYTEST, "-q", "-p", "no:cacheprovider"),
        ("a.py::t1", "b.py::t2"),
    )


def test_an_option_value_is_never_a_node_id() -> None:
    """``-k expr`` at the end: ``expr`` is the option's value, so nothing trails."""
    argv = (*PYTEST, "a.py", "-k", "fast")
    assert split_command(argv, ALLOWED) == (argv, ())


def test_node_ids_followed_by_an_option_keep_the_whole_argv_as_prefix() -> None:
    """``pytest a.py -q``: the node id does not trail, so the property shares only with its twin."""
    argv = (*PYTEST, "a.py::t", "-q")
    assert split_command(argv, ALLOWED) == (argv, ())


def test_the_allowed_prefix_is_never_split() -> None:
    """A word of the allowed command that looks like a node id stays in the prefix."""
    allowed = [("pytest-runner", "suite")]
    assert split_command(("pytest-runner", "suite"), allowed) == (("pytest-runner", "suite"), ())


def test_properties_group_by_prefix_in_suite_order() -> None:
    """Same prefix, one group; another option, another group; ids keep suite order."""
    groups = group_properties(
        [
            ("p1", (*PYTEST, "a.py::t1")),
            ("p2", (*PYTEST, "-x", "b.py::t2")),
            ("p3", (*PYTEST, "a.py::t3")),
        ],
        ALLOWED,
    )
    assert groups == [
        Group(PYTEST, (("p1", ("a.py::t1",)), ("p3", ("a.py::t3",)))),
        Group((*PYTEST, "-x"), (("p2", ("b.py::t2",)),)),
    ]


def test_a_group_invocation_follows_the_order_and_names_each_node_once() -> None:
    """The argv lists the members' node ids in the run's order, a shared node id once."""
    g = Group(PYTEST, (("p1", ("a.py::t",)), ("p2", ("b.py::t",)), ("p3", ("a.py::t",))))
    assert g.argv(["p2", "p3", "p1"]) == (*PYTEST, "b.py::t", "a.py::t")


def test_run_two_is_the_reverse_of_run_one_so_every_pair_meets_both_ways() -> None:
    """Seeded: the same seed gives the same order; run 2 reverses run 1; runs 3-4 reshuffle."""
    ids = [f"p{i}" for i in range(10)]
    one = run_order(ids, 7, 1)
    assert sorted(one) == sorted(ids)
    assert run_order(ids, 7, 1) == one
    assert run_order(ids, 7, 2) == one[::-1]
    assert run_order(ids, 8, 1) != one
    assert run_order(ids, 7, 4) == run_order(ids, 7, 3)[::-1]


@given(st.lists(st.text("ab", min_size=1, max_size=3), min_size=2, max_size=8, unique=True))
def test_every_pair_runs_in_both_orders_over_two_runs(ids: list[str]) -> None:
    """For any two properties, one of the first two runs has them one way, the other the other."""
    one, two = run_order(ids, 1, 1), run_order(ids, 1, 2)
    for a in ids:
        for b in ids:
            if a != b:
                assert (one.index(a) < one.index(b)) != (two.index(a) < two.index(b))


def test_a_variant_runs_its_own_scope_else_the_requests_else_all_in_the_groups_order() -> None:
    ids = ["a", "b", "c"]
    assert variant_members(ids, ("c", "a"), ("b",)) == ["a", "c"]  # its own wins
    assert variant_members(ids, (), ("b", "z")) == ["b"]  # the request's; unknown ids drop out
    assert variant_members(ids, ()) == ids
    assert variant_members(ids, ("z",)) == []  # a scope with no member here: it does not run
