"""Node numbers for a node pool's execution segments, assigned after a run.

The engine counts a pool's nodes, it does not name them; segments.csv and the Gantt chart
need numbers, so they are assigned here by a deterministic lowest-first fit over the
segments in time order (segments that end at an instant free their nodes before those that
start at it take any). Plain Python lists in and out: mypyc compiles this module (the
per-segment loop was half of writing segments.csv in pure Python; docs/benchmarks.md).

Node ranges are flat lists of ints, [lo0, hi0, lo1, hi1, ...] with each range [lo, hi),
and the pending ends are a heap of plain floats: a tuple per range or per heap entry, and
the tuple comparisons they bring, were most of the loop's cost.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left


class FreeNodes:
    """Free node numbers of a pool, handed out lowest first."""

    def __init__(self, total: int) -> None:
        # Free ranges [los[i], his[i]): sorted, disjoint and never adjacent, so a freed
        # range's place is found by its low end alone.
        self.los: list[int] = [0] if total > 0 else []
        self.his: list[int] = [total] if total > 0 else []

    def take(self, n: int) -> list[int]:
        """The n lowest free nodes, as flat ranges in increasing order."""
        got: list[int] = []
        los, his = self.los, self.his
        while n > 0:
            if not los:
                raise ValueError("more nodes held than the machine has")
            lo, hi = los[0], his[0]
            k = min(n, hi - lo)
            got.append(lo)
            got.append(lo + k)
            n -= k
            if lo + k == hi:
                del los[0]
                del his[0]
            else:
                los[0] = lo + k
        return got

    def give(self, ranges: list[int]) -> None:
        """Free flat ranges (in any order; none of their nodes is free now)."""
        los, his = self.los, self.his
        for j in range(0, len(ranges), 2):
            lo, hi = ranges[j], ranges[j + 1]
            i = bisect_left(los, lo)
            if i > 0 and his[i - 1] == lo:  # joins the range before it
                i -= 1
                lo = los[i]
                del los[i]
                del his[i]
            if i < len(los) and los[i] == hi:  # and the one after it
                hi = his[i]
                del los[i]
                del his[i]
            los.insert(i, lo)
            his.insert(i, hi)


def ranges_text(ranges: list[int]) -> str:
    """Flat ranges [lo, hi), in increasing order, as Batsim's interval-set text:
    "0-3 8 10-11"."""
    if len(ranges) == 2:  # the common case: one contiguous range
        lo, hi = ranges[0], ranges[1]
        return str(lo) if hi - lo == 1 else f"{lo}-{hi - 1}"
    parts: list[str] = []
    for j in range(0, len(ranges), 2):
        lo, hi = ranges[j], ranges[j + 1]
        parts.append(str(lo) if hi - lo == 1 else f"{lo}-{hi - 1}")
    return " ".join(parts)


class LowestFirst:
    """The lowest-first fit, fed a block of segments at a time in start order (a
    million-segment file is numbered and written block by block, never all held)."""

    def __init__(self, total: int) -> None:
        self.free = FreeNodes(total)
        self.ending: list[float] = []  # distinct end times of held segments, a heap
        # End time -> the flat ranges of every held segment ending then (the order nodes
        # are given back in does not change the free set).
        self.held: dict[float, list[int]] = {}
        self.placed = 0  # segments numbered so far

    def place(self, starts: list[float], ends: list[float], sizes: list[int]) -> list[str]:
        """The interval sets of the next segments; each starts no earlier than the last."""
        free, ending, held = self.free, self.ending, self.held
        text = [""] * len(starts)
        for i in range(len(starts)):
            t = starts[i]
            while ending and ending[0] <= t:
                free.give(held.pop(heapq.heappop(ending)))
            ranges = free.take(sizes[i])
            text[i] = ranges_text(ranges)
            end = ends[i]
            also = held.get(end)
            if also is None:
                held[end] = ranges
                heapq.heappush(ending, end)
            else:
                also.extend(ranges)
        self.placed += len(starts)
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
