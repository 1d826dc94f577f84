"""Node numbers for a node pool's execution segments, assigned after a run.

The engine counts a pool's nodes, it does not name them; segments.csv and the Gantt chart
need numbers, so they are assigned here by a deterministic lowest-first fit over the
segments in time order (segments that end at an instant free their nodes before those that
start at it take any). Plain Python lists in and out: mypyc compiles this module (the
per-segment loop was half of writing segments.csv in pure Python; docs/benchmarks.md).

Node ranges are flat lists of ints, [lo0, hi0, lo1, hi1, ...] with each range [lo, hi):
a tuple per range, and the tuple comparisons it brought, were most of the loop's cost.
Segments end in an order known before any is placed, so the caller sorts the ends once
(NumPy) and the fit walks that order with a pointer: a heap of pending ends and a dict of
their ranges by end time took half as long again (KTH: 23 against 15.5 ms).

schedd/core/_lowest_first.c does the same fit in C without the GIL, and run_files.Placer
uses it where it is built; this module is its reference (tests/test_node_numbers_c.py)
and the fallback.
"""

from __future__ import annotations

from typing import Final

_GIVEN_BACK: Final[list[int]] = []  # the ranges of a segment whose nodes are free again


class FreeNodes:
    """Free node numbers of a pool, handed out lowest first."""

    def __init__(self, total: int) -> None:
        # Free ranges [los[i], his[i]): disjoint and never adjacent, in descending order,
        # so that the lowest, where every take starts, is last: taking it whole is a pop,
        # where ascending lists moved every other range. With the search in `give`, the
        # fit of 100,000 segments on 1,024 nodes took 61 ms against 80 (docs/benchmarks.md).
        self.los: list[int] = [0] if total > 0 else []
        self.his: list[int] = [total] if total > 0 else []

    def take(self, n: int) -> list[int]:
        """The n lowest free nodes, as flat ranges in increasing order."""
        got: list[int] = []
        los, his = self.los, self.his
        while n > 0:
            if not los:
                raise ValueError("more nodes held than the machine has")
            lo, hi = los[-1], his[-1]
            k = min(n, hi - lo)
            got.append(lo)
            got.append(lo + k)
            n -= k
            if lo + k == hi:
                los.pop()
                his.pop()
            else:
                los[-1] = lo + k
        return got

    def give(self, ranges: list[int]) -> None:
        """Free flat ranges (in any order; none of their nodes is free now)."""
        los, his = self.los, self.his
        for j in range(0, len(ranges), 2):
            lo, hi = ranges[j], ranges[j + 1]
            # i: how many free ranges lie above this one. A search written out, not
            # bisect: compiled, it compares machine ints, where bisect compared objects.
            i, top = 0, len(los)
            while i < top:
                mid = (i + top) >> 1
                if los[mid] > lo:
                    i = mid + 1
                else:
                    top = mid
            below = i < len(los) and his[i] == lo  # it joins the free range below it
            above = i > 0 and los[i - 1] == hi  # or the one above, or both
            if below and above:
                his[i] = his[i - 1]
                del los[i - 1]
                del his[i - 1]
            elif below:
                his[i] = hi
            elif above:
                los[i - 1] = lo
            else:
                los.insert(i, lo)
                his.insert(i, hi)


class LowestFirst:
    """The lowest-first fit, fed a block of segments at a time in start order (a
    million-segment file is numbered and written block by block, never all held).

    `ends` holds every segment's end and `by_end` their numbers (0, 1, ... in the order
    they are placed) sorted by end, ties in that order (a stable sort). Every segment
    ends no earlier than it starts."""

    def __init__(self, total: int, ends: list[float], by_end: list[int]) -> None:
        if len(by_end) != len(ends):
            raise ValueError("by_end must number every segment of ends once")
        self.free = FreeNodes(total)
        self.ends = ends
        self.by_end = by_end
        self.next_end = 0  # where in by_end the segments still holding nodes begin
        self.held: list[list[int]] = []  # each placed segment's ranges, until it ends
        self.placed = 0  # segments numbered so far

    def place(self, starts: list[float], sizes: list[int]) -> tuple[list[int], list[int]]:
        """The node ranges of the next segments (each starts no earlier than the last):
        all of them as flat ranges, segment after segment, and how many ranges each
        segment has. (Their text is made a block at a time, row_text.Ranges; a string
        per segment here took a third of this loop.)"""
        free, held, ends, by_end = self.free, self.held, self.ends, self.by_end
        p, last = self.next_end, len(by_end)
        placed = self.placed
        if placed + len(starts) > len(ends):
            raise ValueError("more segments placed than ends were given")
        flat: list[int] = []
        counts = [0] * len(starts)
        for i in range(len(starts)):
            t = starts[i]
            # Segments ending by t give their nodes back first. One not placed yet that
            # ends by t starts at t (it ends no earlier than it starts), and so do all
            # after it in by_end that end by t: the walk stops there and goes on later.
            while p < last:
                k = by_end[p]
                if k >= placed or ends[k] > t:
                    break
                free.give(held[k])
                held[k] = _GIVEN_BACK
                p += 1
            ranges = free.take(sizes[i])
            flat.extend(ranges)
            counts[i] = len(ranges) // 2
            held.append(ranges)
            placed += 1
        self.next_end = p
        self.placed = placed
        return flat, counts
