"""A node pool's free nodes over time, as conservative backfilling plans them
(schedd/policies/conservative.py). Compiled by mypyc at install (setup.py): the
earliest-start search is the policy's inner loop; the same source runs as plain Python."""

from __future__ import annotations

import bisect
from collections.abc import Sequence


class PoolProfile:
    """Free nodes of a node pool over time: `free[i]` from `times[i]` until `times[i + 1]`
    (the last one from then on). `times[0]` is the pass's now. The integer form of the
    breakpoint lists `Conservative._earliest` and `_reserve` keep as pool states: the
    same breakpoints, the same answers."""

    def __init__(self, times: list[float], free: list[int]) -> None:
        self.times = times
        self.free = free

    @classmethod
    def of_releases(cls, now: float, free_now: int,
                    ends: Sequence[tuple[float, int]]) -> PoolProfile:
        """`free_now` nodes at `now`, and (predicted end, nodes) releases in ascending end
        order; an end already past counts as now (as the state-based plan does)."""
        times = [now]
        free = [free_now]
        for end, nodes in ends:
            if end > times[-1]:
                times.append(end)
                free.append(free[-1])
            free[-1] += nodes
        return cls(times, free)

    def earliest(self, nodes: int, walltime: float, now_only: bool = False) -> int | None:
        """Index of the earliest breakpoint from which `nodes` stay free for `walltime`
        seconds, or None. A breakpoint k short of nodes inside the window of start i rules
        out every start up to k too (k lies inside their windows as well), so the search
        resumes after k: one pass over the breakpoints, not one per start."""
        if nodes < 1:
            return None
        times = self.times
        free = self.free
        n = len(times)
        i = 0
        last = 1 if now_only else n
        while i < last:
            if free[i] < nodes:
                i += 1
                continue
            end = times[i] + walltime
            k = i + 1
            while k < n and times[k] < end and free[k] >= nodes:
                k += 1
            if k == n or times[k] >= end:
                return i
            i = k + 1
        return None

    def reserve(self, i: int, end: float, nodes: int) -> None:
        """Take `nodes` from breakpoint `i` until `end` (a breakpoint is added at `end`)."""
        times = self.times
        free = self.free
        k = bisect.bisect_left(times, end)
        if k == len(times) or times[k] != end:
            times.insert(k, end)
            free.insert(k, free[k - 1])
        for j in range(i, k):
            free[j] -= nodes

    def advance(self, now: float) -> None:
        """Forget the profile before `now` (>= times[0]); now becomes the first breakpoint."""
        k = bisect.bisect_right(self.times, now) - 1
        if k > 0:
            del self.times[:k]
            del self.free[:k]
        self.times[0] = now
