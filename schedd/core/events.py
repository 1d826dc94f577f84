"""Event queue with a total order: (time, priority, sequence).

At one instant, completions come before submissions (the EASY test vector's rule), and ties
of equal time and priority keep insertion order — never hash order.
"""

from __future__ import annotations

import enum
import heapq
from typing import Any


class Ev(enum.IntEnum):
    """Event kinds; the value is the priority at one instant (lower first)."""

    FINISH = 0  # a segment reached its end: completion or kill at walltime
    CKPT_DONE = 1  # a preemption checkpoint (JIT or warning) finished
    REPAIR = 2
    FAILURE = 3
    ECC = 4  # elastic control command
    NOTICE = 5  # advance notice of an on-demand job
    SUBMIT = 6
    CANCEL = 7
    WAKE = 8  # a policy asked to be called at this time


class EventQueue:
    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = 0

    def push(self, time: float, kind: Ev, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (time, kind, self._seq, payload))

    def pop(self) -> tuple[float, int, int, Any]:
        return heapq.heappop(self._heap)

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)
