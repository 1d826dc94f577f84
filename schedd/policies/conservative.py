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
import dataclasses

from ..core.cluster import Allocation, ClusterState
from ..core.decisions import Decision, Start
from ..core.view import View
from .backfill import eligible_queue, releases, retake
from .base import Policy, PolicyError


def _usable(state: ClusterState, alloc: Allocation) -> bool:
    if alloc.block < 0:
        return state.fits(alloc.nodes)
    return retake(state.copy(), alloc) is not None


@dataclasses.dataclass(frozen=True)
class ConservativeOptions:
    depth: int = dataclasses.field(default=0, metadata={"help": (
        "reservations for the first DEPTH waiting jobs only; later jobs start now if they "
        "fit without delaying one, else wait without a reservation (bounds a pass, which "
        "grows faster than linearly in the queue: docs/benchmarks.md); 0 = every job")})

    def __post_init__(self) -> None:
        if self.depth < 0:
            raise PolicyError(f"conservative: option depth must be >= 0, not {self.depth}")


class Conservative(Policy):
    name = "conservative"
    summary = "conservative backfilling: a reservation for every waiting job"
    Options = ConservativeOptions

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
        depth = getattr(self.options, "depth", 0)
        for i, job in enumerate(queue):
            if states[0].free_nodes == 0:
                break  # later reservations cannot make anything start now
            beyond = 0 < depth <= i  # past the reservation depth: now or not at all
            found = self._earliest(job.nodes, job.walltime, times, states, beyond)
            if found is None:
                continue  # does not fit (now, or even when all is released): no plan yet
            start_i, alloc = found
            if start_i == 0:
                decisions.append(Start(job.id, block=alloc.block if alloc.block >= 0 else None))
            self._reserve(times[start_i], times[start_i] + job.walltime, alloc, times, states)
        return decisions

    @staticmethod
    def _earliest(nodes: int, walltime: float, times: list[float], states: list[ClusterState],
                  now_only: bool = False) -> tuple[int, Allocation] | None:
        for i, t in enumerate(times[:1] if now_only else times):
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
