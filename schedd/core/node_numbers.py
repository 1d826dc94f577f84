"""Node numbers for a node pool's execution segments, assigned after a run.

The engine counts a pool's nodes, it does not name them; segments.csv and the Gantt chart
need numbers, so they are assigned here by a deterministic lowest-first fit over the
segments in time order (segments that end at an instant free their nodes before those that
start at it take any). Plain Python lists in and out: mypyc compiles this module (the
per-segment loop was half of writing segments.csv in pure Python; docs/benchmarks.md).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left


class FreeNodes:
    """Free node numbers of a pool, handed out lowest first as ranges [lo, hi)."""

    def __init__(self, total: int) -> None:
        self.ranges: list[tuple[int, int]] = [(0, total)]  # sorted, disjoint, never adjacent

    def take(self, n: int) -> list[tuple[int, int]]:
        got: list[tuple[int, int]] = []
        free = self.ranges
        while n > 0:
            if not free:
                raise ValueError("more nodes held than the machine has")
            lo, hi = free[0]
            k = min(n, hi - lo)
            got.append((lo, lo + k))
            n -= k
            if lo + k == hi:
                free.pop(0)
            else:
                free[0] = (lo + k, hi)
        return got

    def give(self, ranges: list[tuple[int, int]]) -> None:
        free = self.ranges
        for lo, hi in ranges:
            i = bisect_left(free, (lo, hi))
            if i > 0 and free[i - 1][1] == lo:  # joins the range before it
                i -= 1
                lo = free[i][0]
                del free[i]
            if i < len(free) and free[i][0] == hi:  # and the one after it
                hi = free[i][1]
                del free[i]
            free.insert(i, (lo, hi))


def ranges_text(ranges: list[tuple[int, int]]) -> str:
    """Ranges [lo, hi) as Batsim's interval-set text: "0-3 8 10-11"."""
    if len(ranges) == 1:  # the common case: one contiguous range
        lo, hi = ranges[0]
        return str(lo) if hi - lo == 1 else f"{lo}-{hi - 1}"
    return " ".join(str(lo) if hi - lo == 1 else f"{lo}-{hi - 1}" for lo, hi in sorted(ranges))


class LowestFirst:
    """The lowest-first fit, fed a block of segments at a time in start order (a
    million-segment file is numbered and written block by block, never all held)."""

    def __init__(self, total: int) -> None:
        self.free = FreeNodes(total)
        self.ending: list[tuple[float, int]] = []  # (end, segment number), a heap
        self.held: dict[int, list[tuple[int, int]]] = {}
        self.placed = 0  # segments numbered so far

    def place(self, starts: list[float], ends: list[float], sizes: list[int]) -> list[str]:
        """The interval sets of the next segments; each starts no earlier than the last."""
        free, ending, held = self.free, self.ending, self.held
        text = [""] * len(starts)
        k = self.placed
        for i in range(len(starts)):
            t = starts[i]
            while ending and ending[0][0] <= t:
                free.give(held.pop(heapq.heappop(ending)[1]))
            ranges = free.take(sizes[i])
            held[k] = ranges
            text[i] = ranges_text(ranges)
            heapq.heappush(ending, (ends[i], k))
            k += 1
        self.placed = k
        return text


def lowest_first(order: list[int], starts: list[float], ends: list[float],
                 sizes: list[int], total: int) -> list[str]:
    """The interval set of every segment; `order` lists the segments by start time."""
    placed = LowestFirst(total).place([starts[i] for i in order], [ends[i] for i in order],
                                      [sizes[i] for i in order])
    text = [""] * len(starts)
    for j, i in enumerate(order):
        text[i] = placed[j]
    return text
