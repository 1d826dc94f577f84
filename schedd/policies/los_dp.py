"""The dynamic programs of LOS (Shmueli & Feitelson, JPDC 2005), as Delayed-LOS and
Hybrid-LOS use them (Kumar, Shae & Jamjoom, Section III): pure functions on NumPy arrays, no
engine dependency. Formulations, choices and benchmark figures: docs/los.md.

* `basic_dp` (Basic_DP): among the waiting jobs in the lookahead window, the subset that fits
  the free capacity now and uses the most of it (a 0/1 knapsack whose values are the sizes).
* `reservation_dp` (Reservation_DP): the same, with a second budget for the head job's
  reservation: the jobs still running at the freeze ("shadow") time may use at most the
  freeze capacity (a 2-D knapsack: free capacity now x freeze capacity).

Sizes and capacities are in allocation units (`choose_unit`, `job_units`, `free_units`):
job sizes round UP and capacities DOWN, so a selection that fits in units fits in nodes.

Tie-break: among the subsets of equal utilisation the one that is lexicographically first in
queue order wins, i.e. the earliest job is in it if any optimal subset has it, then the next
job given that, and so on. Tables are filled from the back of the window (each cell holds
the best utilisation of the jobs from i on) so that the walk that recovers the set can go
forwards and take every job that still leaves an optimum.

Table fill: one vector operation per job over the whole capacity grid, on a reduced problem
(`select`): jobs that fit neither budget on their own are dropped (no subset can hold them),
the rest, if they all fit together, are the answer without a table, and otherwise sizes and
budgets are divided by the sizes' greatest common divisor (a subset fits the divided budgets
exactly when it fits the originals, and utilisations keep their order). The feasible subsets
and their order are unchanged, so the choice is the one the whole table makes
(`knapsack_table`, kept as the reference; tests/test_los_dp.py holds one to the other). On a
deep Lublin queue 63% of the calls had no job that fits, 21% took every job that fits, and
the rest had 6 jobs and sizes in multiples of 16 units on average (docs/benchmarks.md).
"""

from __future__ import annotations

import math
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

BGP_UNIT_NODES = 32  # Blue Gene/P allocates multiples of 32 processors (the paper's 320)
MAX_UNITS = 600  # largest capacity axis `choose_unit` allows (bench/los_dp.py: < 50 ms)
MAX_TABLE_CELLS = 1 << 26  # the selection table's cells (bytes); bigger is a unit mistake

IntArray: TypeAlias = npt.NDArray[np.intp]


def choose_unit(machine_nodes: int, hardware_unit: int = 1, max_units: int = MAX_UNITS) -> int:
    """Allocation unit in nodes: the hardware's, doubled until the machine is at most
    `max_units` units. 320 processors on Blue Gene/P (unit 32): 32 (10 units); a 4,360-node
    machine: 8 (545 units)."""
    if machine_nodes < 1 or hardware_unit < 1 or max_units < 1:
        raise ValueError("machine_nodes, hardware_unit and max_units must be positive")
    unit = hardware_unit
    while math.ceil(machine_nodes / unit) > max_units:
        unit *= 2
    return unit


def job_units(nodes: npt.ArrayLike, unit: int) -> IntArray:
    """Job sizes in units, rounded up (a job of 129 nodes takes 17 units of 8)."""
    if unit < 1:
        raise ValueError("unit must be positive")
    arr = np.asarray(nodes, dtype=np.intp)
    return np.asarray(-(-arr // unit), dtype=np.intp)


def free_units(nodes: int, unit: int) -> int:
    """A capacity in units, rounded down (only whole free units can be promised)."""
    if unit < 1:
        raise ValueError("unit must be positive")
    return max(int(nodes), 0) // unit


def still_running_at_freeze(now: float, walltimes: npt.ArrayLike, freeze_time: float
                            ) -> npt.NDArray[np.bool_]:
    """Algorithm 1 line 16: a job started now holds its nodes at the freeze time unless
    `now + walltime < freeze_time` (strictly: one ending exactly then still counts)."""
    return np.asarray(now + np.asarray(walltimes, dtype=np.float64) >= freeze_time)


def basic_dp(sizes: npt.ArrayLike, capacity: int) -> IntArray:
    """Basic_DP: indices (ascending, i.e. queue order) of the subset of `sizes` that fits
    `capacity` with the largest total size; ties go to the lexicographically first subset."""
    units = _as_sizes(sizes)
    return _knapsack(units, np.zeros_like(units), _as_capacity(capacity, "capacity"), 0)


def reservation_dp(sizes: npt.ArrayLike, ends_after_freeze: npt.ArrayLike, capacity_now: int,
                   freeze_capacity: int) -> IntArray:
    """Reservation_DP: indices (ascending) of the subset with the largest total size such
    that all of it fits `capacity_now` and the jobs with `ends_after_freeze` set fit
    `freeze_capacity` too; ties go to the lexicographically first subset."""
    units = _as_sizes(sizes)
    after = np.asarray(ends_after_freeze, dtype=np.bool_)
    if after.shape != units.shape:
        raise ValueError("ends_after_freeze must have one flag per job")
    freeze_units = np.where(after, units, 0)  # the paper's frenum
    return _knapsack(units, freeze_units, _as_capacity(capacity_now, "capacity_now"),
                     _as_capacity(freeze_capacity, "freeze_capacity"))


def _as_sizes(sizes: npt.ArrayLike) -> IntArray:
    arr = np.asarray(sizes)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError("sizes must be a 1-D array of integers (allocation units)")
    if arr.size and arr.min() < 0:
        raise ValueError("sizes must be non-negative")
    return arr.astype(np.intp)


def _as_capacity(value: int, name: str) -> int:
    if int(value) != value or value < 0:
        raise ValueError(f"{name} must be a non-negative integer (allocation units)")
    return int(value)


def _knapsack(sizes: IntArray, freeze_sizes: IntArray, capacity: int, freeze_capacity: int
              ) -> IntArray:
    return np.asarray(select(sizes.tolist(), freeze_sizes.tolist(), capacity, freeze_capacity),
                      dtype=np.intp)


def select(sizes: list[int], freeze_sizes: list[int], capacity: int, freeze_capacity: int
           ) -> list[int]:
    """The 2-D knapsack on plain lists (no checks: sizes, freeze sizes <= sizes, and budgets
    are non-negative integers): indices, ascending, of the lexicographically first subset of
    the largest total size within `capacity` whose freeze sizes fit `freeze_capacity`. The
    same choice as `knapsack_table`, on a smaller problem (module docstring)."""
    n = len(sizes)
    # A budget larger than what all jobs could use never binds: shrink the grid to it. The
    # freeze budget never binds beyond `capacity` either (freeze sizes are part of sizes).
    capacity = min(capacity, sum(sizes))
    freeze_capacity = min(freeze_capacity, capacity, sum(freeze_sizes))
    _check_table(n, capacity, freeze_capacity)  # the whole table's limit, as before
    fit = [i for i in range(n)
           if sizes[i] <= capacity and freeze_sizes[i] <= freeze_capacity]
    if not fit:
        return fit
    fit_sizes = [sizes[i] for i in fit]
    fit_freeze = [freeze_sizes[i] for i in fit]
    total, total_freeze = sum(fit_sizes), sum(fit_freeze)
    if total <= capacity and total_freeze <= freeze_capacity:
        return fit  # every job that fits fits together: the only optimum with them all
    divisor = 0
    for size in fit_sizes:
        divisor = math.gcd(divisor, size)
    for size in fit_freeze:
        divisor = math.gcd(divisor, size)
    # divisor > 0: were every size 0, they would all have fitted together above
    capacity = min(capacity, total) // divisor
    freeze_capacity = min(freeze_capacity, total_freeze) // divisor
    chosen = _reachable_walk([size // divisor for size in fit_sizes],
                             [size // divisor for size in fit_freeze],
                             capacity, freeze_capacity)
    return [fit[i] for i in chosen]


def _reachable_walk(sizes: list[int], freeze_sizes: list[int], capacity: int,
                    freeze_capacity: int) -> list[int]:
    """The table's choice from the sets of reachable (size, freeze size) sums instead of
    the best utilisation of every budget pair. reach[i] holds, as bits of one integer, every
    (a, b) with a <= capacity and b <= freeze_capacity that some subset of jobs i.. sums to:
    bit a * width + b (width leaves room for b + a freeze size, so a shift never carries
    into the next a). The optimum R is the largest a in reach[0]; walking forwards with R
    and the freeze budget f left, job i is taken exactly when the table takes it: when some
    subset of jobs i+1.. sums to R - size with a freeze sum <= f - freeze size (the table's
    `with_job >= without_job` on the walk's path). Every freeze size is <= freeze_capacity
    and every size <= capacity (`select` dropped the others)."""
    n = len(sizes)
    width = freeze_capacity + 1 + max(freeze_sizes)
    row = (1 << (freeze_capacity + 1)) - 1  # b = 0..freeze_capacity of one a
    valid = row * (((1 << ((capacity + 1) * width)) - 1) // ((1 << width) - 1))
    reach = [0] * (n + 1)
    bits = reach[n] = 1  # the empty subset: (0, 0)
    for i in range(n - 1, -1, -1):
        bits |= (bits << (sizes[i] * width + freeze_sizes[i])) & valid
        reach[i] = bits
    remaining = (bits.bit_length() - 1) // width  # R: reach[0]'s largest a
    f = freeze_capacity
    chosen = []
    for i in range(n):
        rest, f_rest = remaining - sizes[i], f - freeze_sizes[i]
        if rest >= 0 and f_rest >= 0 and \
                (reach[i + 1] >> (rest * width)) & ((1 << (f_rest + 1)) - 1):
            chosen.append(i)
            remaining, f = rest, f_rest
    return chosen


def knapsack_table(sizes: IntArray, freeze_sizes: IntArray, capacity: int,
                   freeze_capacity: int) -> IntArray:
    """The whole table and the forward walk: the reference `select` is held to."""
    capacity = min(capacity, int(sizes.sum()))
    freeze_capacity = min(freeze_capacity, capacity, int(freeze_sizes.sum()))
    take = _fill_take_table(sizes, freeze_sizes, capacity, freeze_capacity)
    return _walk_forwards(take, sizes, freeze_sizes, capacity, freeze_capacity)


def _check_table(jobs: int, capacity: int, freeze_capacity: int) -> None:
    shape = (jobs, capacity + 1, freeze_capacity + 1)
    if math.prod(shape) > MAX_TABLE_CELLS:
        raise ValueError(f"DP table of {shape} cells is too large: use a coarser unit")


def _fill_take_table(sizes: IntArray, freeze_sizes: IntArray, capacity: int,
                     freeze_capacity: int) -> npt.NDArray[np.bool_]:
    """take[i, c, f]: with budgets (c, f) left for jobs i.., taking job i still reaches the
    best utilisation of jobs i.. (`best`, updated from the back of the window)."""
    shape = (len(sizes), capacity + 1, freeze_capacity + 1)
    _check_table(*shape)
    # Utilisation never exceeds `capacity`; int16 halves the memory traffic when it fits.
    dtype = np.int16 if capacity <= np.iinfo(np.int16).max else np.int64
    best = np.zeros(shape[1:], dtype=dtype)
    take = np.zeros(shape, dtype=np.bool_)
    for i in range(len(sizes) - 1, -1, -1):
        s, fs = int(sizes[i]), int(freeze_sizes[i])
        if s > capacity or fs > freeze_capacity:
            continue  # never fits: take[i] stays False, best is unchanged
        with_job = best[: capacity + 1 - s, : freeze_capacity + 1 - fs] + dtype(s)
        without_job = best[s:, fs:]
        take[i, s:, fs:] = with_job >= without_job  # >=: on a tie the earlier job wins
        np.maximum(with_job, without_job, out=with_job)
        best[s:, fs:] = with_job
    return take


def _walk_forwards(take: npt.NDArray[np.bool_], sizes: IntArray, freeze_sizes: IntArray,
                   capacity: int, freeze_capacity: int) -> IntArray:
    """Take each job, in queue order, whenever doing so keeps an optimum within the budgets
    left: this yields the lexicographically first optimal subset."""
    chosen = []
    c, f = capacity, freeze_capacity
    for i in range(len(sizes)):
        if take[i, c, f]:
            chosen.append(i)
            c -= int(sizes[i])
            f -= int(freeze_sizes[i])
    return np.asarray(chosen, dtype=np.intp)
