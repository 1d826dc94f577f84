"""Conservative backfilling: every waiting job, in queue order, gets a reservation at the
earliest time it fits without moving any earlier job's reservation; jobs whose reservation
is now start now.

The plan is a list of breakpoints (times where the usage changes) with the free state at
each. A job fits at breakpoint t if the cluster's allocation choice at t is still usable at
every breakpoint inside [t, t + walltime). On a node pool this is the classic availability
profile (exact). On partition clusters only the allocation rule's choice at t is tried, so a
job may be planned later than a search over every partition would place it (documented in
docs/policies.md); it never delays an earlier reservation.
"""

from __future__ import annotations

import bisect

from ..core.cluster import Allocation, ClusterState
from ..core.decisions import Decision, Start
from ..core.view import View
from .backfill import eligible_queue, releases, retake
from .base import Policy


def _usable(state: ClusterState, alloc: Allocation) -> bool:
    if alloc.block < 0:
        return state.fits(alloc.nodes)
    return retake(state.copy(), alloc) is not None


class Conservative(Policy):
    name = "conservative"
    summary = "conservative backfilling: a reservation for every waiting job"

    def schedule(self, view: View) -> list[Decision]:
        decisions: list[Decision] = []
        now = view.now
        queue = eligible_queue(view, decisions)
        if not queue or view.free_nodes == 0:
            return decisions  # a pass only ever starts jobs now; nothing can start
        # Breakpoints: now and every predicted release, with the free state from then on.
        times = [now]
        states = [view.free_state()]
        for end, _, alloc in releases(view, []):
            end = max(end, now)
            if end > times[-1]:
                times.append(end)
                states.append(states[-1].copy())
            states[-1].release(alloc)
        for job in queue:
            if states[0].free_nodes == 0:
                break  # later reservations cannot make anything start now
            found = self._earliest(job.nodes, job.walltime, times, states)
            if found is None:
                continue  # does not fit even when all is released (nodes down): no plan yet
            start_i, alloc = found
            if start_i == 0:
                decisions.append(Start(job.id, block=alloc.block if alloc.block >= 0 else None))
            self._reserve(times[start_i], times[start_i] + job.walltime, alloc, times, states)
        return decisions

    @staticmethod
    def _earliest(nodes: int, walltime: float, times: list[float], states: list[ClusterState]
                  ) -> tuple[int, Allocation] | None:
        for i, t in enumerate(times):
            alloc = states[i].copy().allocate(nodes)
            if alloc is None:
                continue
            end = t + walltime
            k = i + 1
            while k < len(times) and times[k] < end and _usable(states[k], alloc):
                k += 1
            if k == len(times) or times[k] >= end:
                return i, alloc
        return None  # only when failed nodes are down: the last state holds nothing else

    @staticmethod
    def _reserve(start: float, end: float, alloc: Allocation, times: list[float],
                 states: list[ClusterState]) -> None:
        k = bisect.bisect_left(times, end)
        if k == len(times) or times[k] != end:
            times.insert(k, end)
            states.insert(k, states[k - 1].copy())  # nothing changes between k-1 and end
        i = bisect.bisect_left(times, start)
        for s in states[i:k]:
            taken = retake(s, alloc)
            assert taken is not None
