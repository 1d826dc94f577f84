"""LOS dynamic programs (schedd/policies/los_dp.py) against brute force over all subsets,
including the tie-break, plus hand-worked examples (the paper's Fig. 2) and edge cases.

The brute force ranks a subset by (utilisation, characteristic vector read as a binary
number with the queue head as the most significant bit): the largest key is the best
subset, ties going to the lexicographically first one in queue order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.policies.los_dp import (
    BGP_UNIT_NODES,
    basic_dp,
    choose_unit,
    free_units,
    job_units,
    knapsack_table,
    reservation_dp,
    select,
    still_running_at_freeze,
)


def brute_force(sizes: list[int], after: list[bool], capacity: int, freeze_capacity: int
                ) -> list[int]:
    """The best subset (ascending indices) over all 2^n subsets."""
    n = len(sizes)
    masks = np.arange(1 << n)
    # member[m, i]: job i is in subset m; job 0 is the most significant bit of m.
    member = (masks[:, None] >> (n - 1 - np.arange(n))) & 1 == 1
    used_now = member @ np.asarray(sizes, dtype=np.int64)
    used_at_freeze = member @ np.where(after, sizes, 0).astype(np.int64)
    feasible = (used_now <= capacity) & (used_at_freeze <= freeze_capacity)
    key = np.where(feasible, used_now * (1 << n) + masks, -1)
    return np.flatnonzero(member[int(np.argmax(key))]).tolist()


def as_list(selected: np.ndarray) -> list[int]:
    return [int(i) for i in selected]


jobs = st.lists(st.integers(0, 12), max_size=10)


@settings(max_examples=400, deadline=None)
@given(jobs, st.integers(0, 40))
def test_basic_dp_matches_brute_force(sizes, capacity):
    expected = brute_force(sizes, [False] * len(sizes), capacity, 0)
    assert as_list(basic_dp(sizes, capacity)) == expected


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.booleans()), max_size=10),
       st.integers(0, 40), st.integers(0, 40))
def test_reservation_dp_matches_brute_force(jobs_after, capacity, freeze_capacity):
    sizes = [s for s, _ in jobs_after]
    after = [a for _, a in jobs_after]
    expected = brute_force(sizes, after, capacity, freeze_capacity)
    assert as_list(reservation_dp(sizes, after, capacity, freeze_capacity)) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8, 12]), min_size=1, max_size=10),
       st.integers(0, 30))
def test_tie_break_on_many_ties(sizes, capacity):
    """Few distinct sizes make equal-utilisation subsets common."""
    expected = brute_force(sizes, [False] * len(sizes), capacity, 0)
    assert as_list(basic_dp(sizes, capacity)) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4360), st.booleans()), max_size=9),
       st.integers(0, 4360), st.integers(0, 4360))
def test_selection_in_units_fits_in_nodes(jobs_nodes, free_nodes, freeze_nodes):
    unit = choose_unit(4360)
    nodes = np.array([n for n, _ in jobs_nodes], dtype=np.int64)
    after = np.array([a for _, a in jobs_nodes], dtype=bool)
    chosen = reservation_dp(job_units(nodes, unit), after, free_units(free_nodes, unit),
                            free_units(freeze_nodes, unit))
    assert nodes[chosen].sum() <= free_nodes
    assert nodes[chosen][after[chosen]].sum() <= freeze_nodes


def test_fig2_basic_dp_fills_the_machine():
    """Fig. 2: 7, 4, 6 on 10 processors. Basic_DP (Delayed-LOS while scount < C_s) passes
    over the head and reaches 10."""
    assert as_list(basic_dp([7, 4, 6], 10)) == [1, 2]


def test_fig2_los_starts_the_head_then_nothing_fits():
    """LOS starts the head (7) at once; its DP then has 3 processors for 4 and 6: 7 in all.
    Delayed-LOS does the same once the head's skip count reaches C_s."""
    assert as_list(basic_dp([4, 6], 10 - 7)) == []


def test_fig2_in_blue_gene_units():
    """The same example in 32-processor units on the paper's 320-processor machine."""
    sizes = job_units([224, 128, 192], BGP_UNIT_NODES)
    assert sizes.tolist() == [7, 4, 6]
    assert as_list(basic_dp(sizes, free_units(320, BGP_UNIT_NODES))) == [1, 2]


def test_hand_worked_tie_breaks():
    assert as_list(basic_dp([5, 2, 3], 5)) == [0]  # {5} and {2, 3}: the head first
    assert as_list(basic_dp([2, 3, 5], 5)) == [0, 1]  # {2, 3} before {5}
    assert as_list(basic_dp([3, 2, 1, 4], 5)) == [0, 1]  # {3, 2} before {1, 4}
    assert as_list(basic_dp([4, 3, 2, 1], 5)) == [0, 3]  # {4, 1} before {3, 2}


def test_reservation_dp_hand_worked():
    """6 free now, 2 free at the freeze time. The long job of 4 cannot run with the
    reservation; the short 4 and the long 2 can (6 now, 2 at the freeze)."""
    sizes = [4, 4, 2, 3]
    after = [True, False, True, True]
    assert as_list(reservation_dp(sizes, after, 6, 2)) == [1, 2]
    assert as_list(reservation_dp(sizes, after, 6, 6)) == [0, 2]  # no binding freeze: 4 + 2


def test_nothing_fits():
    assert as_list(basic_dp([5, 6, 7], 4)) == []
    assert as_list(reservation_dp([5, 6, 7], [False] * 3, 4, 4)) == []
    assert as_list(basic_dp([3], 0)) == []


def test_everything_fits():
    assert as_list(basic_dp([1, 2, 3], 6)) == [0, 1, 2]
    assert as_list(reservation_dp([1, 2, 3], [True] * 3, 100, 100)) == [0, 1, 2]


def test_empty_window():
    assert as_list(basic_dp([], 10)) == []
    assert as_list(reservation_dp([], [], 10, 3)) == []


def test_zero_freeze_capacity_keeps_only_jobs_ending_before_the_freeze():
    sizes = [3, 2, 4, 1]
    after = [True, False, False, True]
    assert as_list(reservation_dp(sizes, after, 10, 0)) == [1, 2]
    assert as_list(reservation_dp(sizes, [True] * 4, 10, 0)) == []


def test_zero_size_jobs_are_always_taken():
    assert as_list(basic_dp([0, 5, 0], 3)) == [0, 2]


def test_reservation_dp_without_long_jobs_is_basic_dp():
    rng = np.random.default_rng(7)
    for _ in range(50):
        sizes = rng.integers(1, 30, 40)
        capacity = int(rng.integers(0, 200))
        assert as_list(reservation_dp(sizes, np.zeros(40, bool), capacity, 0)) == as_list(
            basic_dp(sizes, capacity))


def test_fifty_jobs_on_the_large_machine_fill_it_exactly():
    """A 50-job window at 545 units: the selection is feasible and at least as good as any
    single job or the greedy first fit in queue order."""
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 300, 50)
    after = rng.random(50) < 0.5
    chosen = reservation_dp(sizes, after, 544, 300)
    assert sizes[chosen].sum() <= 544 and sizes[chosen][after[chosen]].sum() <= 300
    now = at_freeze = 0
    for s, a in zip(sizes.tolist(), after.tolist(), strict=True):
        if now + s <= 544 and at_freeze + s * a <= 300:
            now, at_freeze = now + s, at_freeze + s * a
    assert sizes[chosen].sum() >= now


def test_units_and_unit_choice():
    assert choose_unit(320, BGP_UNIT_NODES) == 32
    assert choose_unit(4360) == 8
    assert choose_unit(64) == 1
    assert job_units([1, 8, 9, 128, 129], 8).tolist() == [1, 1, 2, 16, 17]
    assert free_units(4359, 8) == 544
    assert free_units(-3, 8) == 0


def test_still_running_at_freeze_counts_a_job_ending_at_the_freeze():
    flags = still_running_at_freeze(100.0, [49.0, 50.0, 51.0], 150.0)
    assert flags.tolist() == [False, True, True]


@pytest.mark.parametrize("call", [
    lambda: basic_dp([1, -1], 3),
    lambda: basic_dp([1.5, 2.0], 3),
    lambda: basic_dp([[1, 2]], 3),
    lambda: basic_dp([1, 2], -1),
    lambda: reservation_dp([1, 2], [True], 3, 3),
    lambda: reservation_dp([1, 2], [True, False], 3, -1),
    lambda: reservation_dp(np.ones(1000, int), np.ones(1000, bool), 10_000, 10_000),
    lambda: job_units([1], 0),
])
def test_rejects_bad_input(call):
    with pytest.raises(ValueError):
        call()


# The reduced problem and the reachable-sum walk (`select`) against the whole table
# (`knapsack_table`, the DP as the papers fill it) on random windows: sizes drawn as
# multiples of a common factor as on a deep Lublin queue (most sizes multiples of 16 units),
# freeze sizes 0 or the size as Reservation_DP makes them, budgets around the window's sum.
def _reference(sizes: list[int], freeze_sizes: list[int], capacity: int,
               freeze_capacity: int) -> list[int]:
    return knapsack_table(np.asarray(sizes, dtype=np.intp),
                          np.asarray(freeze_sizes, dtype=np.intp), capacity,
                          freeze_capacity).tolist()


@st.composite
def windows(draw, max_jobs=50, max_units=600):
    factor = draw(st.sampled_from([1, 1, 2, 3, 16, 32]))
    n = draw(st.integers(0, max_jobs))
    sizes = [factor * draw(st.integers(0, max(max_units // factor // 4, 1))) for _ in range(n)]
    after = [draw(st.booleans()) for _ in range(n)]
    capacity = draw(st.integers(0, max_units))
    freeze_capacity = draw(st.integers(0, max_units))
    return sizes, [s if a else 0 for s, a in zip(sizes, after, strict=True)], capacity, \
        freeze_capacity


@settings(max_examples=500, deadline=None)
@given(windows())
def test_select_matches_the_whole_table(window):
    sizes, freeze_sizes, capacity, freeze_capacity = window
    assert select(sizes, freeze_sizes, capacity, freeze_capacity) == _reference(*window)


@settings(max_examples=300, deadline=None)
@given(windows(max_jobs=12, max_units=40))
def test_select_matches_brute_force(window):
    sizes, freeze_sizes, capacity, freeze_capacity = window
    after = [f > 0 or s == 0 for s, f in zip(sizes, freeze_sizes, strict=True)]
    assert select(sizes, freeze_sizes, capacity, freeze_capacity) == brute_force(
        sizes, after, capacity, freeze_capacity)


@settings(max_examples=300, deadline=None)
@given(windows(max_jobs=20, max_units=60), st.integers(0, 60))
def test_select_with_any_freeze_sizes_matches_the_whole_table(window, seed):
    """Freeze sizes anywhere from 0 to the size (not only 0 or the size)."""
    sizes, _, capacity, freeze_capacity = window
    rng = np.random.default_rng(seed)
    freeze_sizes = [int(rng.integers(0, s + 1)) for s in sizes]
    assert select(sizes, freeze_sizes, capacity, freeze_capacity) == _reference(
        sizes, freeze_sizes, capacity, freeze_capacity)


def test_select_shortcuts_by_hand():
    assert select([40, 50, 60], [0, 0, 0], 30, 0) == []  # nothing fits on its own
    assert select([40, 10, 60, 20], [0, 10, 0, 0], 35, 10) == [1, 3]  # all that fit, fit
    assert select([32, 48, 16], [0, 0, 0], 64, 0) == [1, 2]  # by 16s: 2, 3, 1 in 4
    assert select([0, 7], [0, 7], 3, 3) == [0]
    with pytest.raises(ValueError):  # the whole table's limit holds on the fast path too
        select([1] * 1000, [1] * 1000, 10_000, 10_000)
