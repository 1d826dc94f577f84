"""A node pool's free nodes over time, as conservative backfilling plans them
(schedd/policies/conservative.py). Compiled by mypyc at install (setup.py): the
earliest-start search is the policy's inner loop; the same source runs as plain Python."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from ..core.job import Job


def _left(a: list[float], x: float) -> int:
    """bisect.bisect_left on floats, compiled (no comparison of boxed floats)."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _right(a: list[float], x: float) -> int:
    """bisect.bisect_right on floats, compiled."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


class PoolProfile:
    """Free nodes of a node pool over time: `free[i]` from `times[i]` until `times[i + 1]`
    (the last one from then on). `times[0]` is the pass's now. The integer form of the
    breakpoint lists `Conservative._earliest` and `_reserve` keep as pool states: the
    same breakpoints, the same answers."""

    def __init__(self, times: list[float], free: list[int]) -> None:
        self.times = times
        self.free = free
        # Per node count, a staircase of (walltime, time) lower bounds on `earliest`:
        # walltimes ascending, times ascending. See `earliest`.
        self._walls: dict[int, list[float]] = {}
        self._after: dict[int, list[float]] = {}

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
        resumes after k: one pass over the breakpoints, not one per start.

        Between two `advance`s the profile only loses nodes (`reserve`), so a start ruled
        out for a job is ruled out for any later one as wide and at least as long (its
        window would have fit the earlier job: an added breakpoint only splits a step, so
        the step's first breakpoint would have fit too). The search starts at the latest
        answer found for as many nodes and no longer a walltime, and an answer of None
        stands for them all: the same index, without walking a deep plan's head again."""
        if nodes < 1:
            return None
        times = self.times
        free = self.free
        n = len(times)
        i = 0
        walls = self._walls.get(nodes)
        if walls is not None and not now_only:
            r = _right(walls, walltime) - 1
            if r >= 0:
                after = self._after[nodes][r]
                if after == math.inf:
                    return None
                if after > times[0]:
                    i = _left(times, after)
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
                if not now_only:
                    self._bound(nodes, walltime, times[i])
                return i
            i = k + 1
        if not now_only:
            self._bound(nodes, walltime, math.inf)
        return None

    def _bound(self, nodes: int, walltime: float, after: float) -> None:
        """Record that `nodes` for `walltime` or longer start at `after` at the earliest."""
        walls = self._walls.get(nodes)
        if walls is None:
            self._walls[nodes] = [walltime]
            self._after[nodes] = [after]
            return
        afters = self._after[nodes]
        r = _right(walls, walltime)
        if r > 0 and afters[r - 1] >= after:
            return  # a shorter or equal walltime already starts as late
        # Entries at least as long that start no later are now implied: drop them.
        k = r
        while k < len(walls) and afters[k] <= after:
            k += 1
        if r > 0 and walls[r - 1] == walltime:
            r -= 1
        walls[r:k] = [walltime]
        afters[r:k] = [after]

    def reserve(self, i: int, end: float, nodes: int) -> None:
        """Take `nodes` from breakpoint `i` until `end` (a breakpoint is added at `end`)."""
        times = self.times
        free = self.free
        k = _left(times, end)
        if k == len(times) or times[k] != end:
            times.insert(k, end)
            free.insert(k, free[k - 1])
        for j in range(i, k):
            free[j] -= nodes

    def advance(self, now: float) -> None:
        """Forget the profile before `now` (>= times[0]); now becomes the first breakpoint."""
        self._walls = {}  # the profile may have gained nodes since
        self._after = {}
        k = _right(self.times, now) - 1
        if k > 0:
            del self.times[:k]
            del self.free[:k]
        self.times[0] = now


def plan_queue(profile: PoolProfile, queue: Sequence[Job], first: int, now: float,
               planned: list[Job], heap: list[tuple[float, int, Job]], count: int,
               ends: dict[float, int]) -> tuple[list[Job], int]:
    """Conservative's kept-plan loop (`Conservative._kept_pass`) over `queue[first:]`, in
    queue order until nothing is free now: each job reserved at its earliest start. Jobs
    whose reservation is now are returned (in order; their predicted ends added to
    `ends`), the others appended to `planned` and pushed on `heap` as (start, plan order,
    job) from plan order `count` on (the next count is returned). Compiled: the loop of a
    re-plan over a deep queue."""
    times, free = profile.times, profile.free
    started: list[Job] = []
    for k in range(first, len(queue)):
        if free[0] == 0:
            break
        job = queue[k]
        start_i = profile.earliest(job.nodes, job.walltime)
        if start_i is None:
            planned.append(job)
            continue
        start = times[start_i]
        if start_i == 0:
            started.append(job)
            end = now + job.walltime
            ends[end] = ends.get(end, 0) + job.nodes
        else:
            planned.append(job)
            heapq.heappush(heap, (start, count, job))
            count += 1
        profile.reserve(start_i, start + job.walltime, job.nodes)
    return started, count
