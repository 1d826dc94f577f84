"""Conservative backfilling: every waiting job, in queue order, gets a reservation at the
earliest time it fits without moving any earlier job's reservation; jobs whose reservation
is now start now.

The plan is a list of breakpoints (times where the usage changes) with the free state at
each. A job fits at breakpoint t if the cluster's allocation choice at t is still usable at
every breakpoint inside [t, t + walltime). On a node pool this is the classic availability
profile (exact). On partition clusters only the allocation rule's choice at t is tried, so a
job may be planned later than a search over every partition would place it (documented in
docs/policies.md); it never delays an earlier reservation.

On a node pool the plan is integers (`PoolProfile`), and it is kept from pass to pass as the
algorithm's authors keep it (Mu'alem and Feitelson): a pass that finds the running jobs'
predicted ends, the free nodes and the queue as the plan expects them (only jobs started
by the plan, jobs ended at their predicted end and jobs submitted since) starts the jobs
whose reservation is now and plans only the jobs new to it; anything else (a job ending
early, a failure, an elastic command, a job requeued) re-plans from scratch. Both give the
same decisions as planning every pass from scratch: on a node pool a job's reservation is
the earliest time from now at which its nodes stay free for its walltime, a function of
the free-node profile alone, and that profile is the same (issue 35; tests/
test_conservative_profile.py checks both against the rebuilt plan).
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
from collections.abc import Sequence
from typing import Any

from ..core.cluster import Allocation, ClusterState
from ..core.decisions import Decision, Start
from ..core.job import Job
from ..core.view import View
from .backfill import eligible_queue, releases, retake
from .base import Policy, PolicyError
from .pool_profile import PoolProfile, plan_queue


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


class _Plan:
    """Conservative's plan kept between passes on a node pool: the profile with every
    reservation in it, the queue prefix it has planned (queue order), their reservations
    to come, and what it expects the next pass to find."""

    __slots__ = ("profile", "jobs", "heap", "count", "capacity", "ends", "eccs")

    def __init__(self, profile: PoolProfile, capacity: int, ends: dict[float, int],
                 eccs: int):
        self.profile = profile
        self.jobs: list[Job] = []  # the planned prefix of the queue, in queue order
        self.heap: list[tuple[float, int, Job]] = []  # (reserved start, plan order, job)
        self.count = 0
        self.capacity = capacity  # free nodes + nodes of every job holding some
        self.ends = ends  # predicted end -> nodes released then, of the jobs holding nodes
        self.eccs = eccs


def _pool_releases(view: View) -> tuple[list[tuple[float, int]], int]:
    """(predicted end, nodes) of everything holding nodes, ascending, and the capacity:
    free nodes plus all those."""
    ends = [(end, alloc.nodes) for end, _, alloc in releases(view, [])]
    return ends, view.free_nodes + sum(n for _, n in ends)


class Conservative(Policy):
    name = "conservative"
    summary = "conservative backfilling: a reservation for every waiting job"
    Options = ConservativeOptions

    def __init__(self, options: Any, cluster: Any):
        super().__init__(options, cluster)
        self._plan: _Plan | None = None
        self.replans = 0  # passes that planned the whole queue from scratch (node pools)
        self.kept = 0  # passes that kept the plan of the pass before

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_plan"] = None  # a snapshot re-plans on its first pass: same decisions
        return state

    def schedule(self, view: View) -> list[Decision]:
        decisions: list[Decision] = []
        now = view.now
        queue = eligible_queue(view, decisions)
        if not queue or view.free_nodes == 0:
            return decisions  # a pass only ever starts jobs now; nothing can start
        depth = getattr(self.options, "depth", 0)
        if view.on_node_pool:
            if depth or decisions:  # a depth, or dedicated jobs: planned every pass
                self._plan = None
                return self._pool_pass(view, queue, decisions, depth)
            return self._kept_pass(view, queue, decisions)
        # Breakpoints: now and every predicted release, with the free state from then on.
        times = [now]
        states = [view.free_state()]
        for end, _, alloc in releases(view, []):
            end = max(end, now)
            if end > times[-1]:
                times.append(end)
                states.append(states[-1].copy())
            states[-1].release(alloc)
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

    @staticmethod
    def _pool_pass(view: View, queue: Sequence[Job], decisions: list[Decision],
                   depth: int) -> list[Decision]:
        """The pass above on a node pool's integers, from scratch."""
        now = view.now
        ends, _ = _pool_releases(view)
        profile = PoolProfile.of_releases(now, view.free_nodes, ends)
        times, free = profile.times, profile.free
        for i, job in enumerate(queue):
            if free[0] == 0:
                break
            start_i = profile.earliest(job.nodes, job.walltime, 0 < depth <= i)
            if start_i is None:
                continue
            if start_i == 0:
                decisions.append(Start(job.id))
            profile.reserve(start_i, times[start_i] + job.walltime, job.nodes)
        return decisions

    def _kept_pass(self, view: View, queue: Sequence[Job], decisions: list[Decision]
                   ) -> list[Decision]:
        """The pass on a node pool with the plan kept from the pass before when it still
        holds, else a new one. Decisions are those of `_pool_pass`."""
        now = view.now
        ends, capacity = _pool_releases(view)
        plan = self._plan
        eccs = view.eccs_applied
        if plan is not None and self._holds(plan, now, ends, capacity, eccs, queue):
            plan.profile.advance(now)
            self.kept += 1
        else:
            ahead: dict[float, int] = {}
            for end, nodes in ends:
                ahead[end] = ahead.get(end, 0) + nodes
            plan = _Plan(PoolProfile.of_releases(now, view.free_nodes, ends), capacity,
                         ahead, eccs)
            self.replans += 1
        self._plan = plan
        # Reservations that come due now start now, in queue order.
        heap = plan.heap
        due: list[tuple[int, Job]] = []
        while heap and heap[0][0] == now:
            _, order, job = heapq.heappop(heap)
            due.append((order, job))
        planned = len(plan.jobs)
        for _, job in sorted(due, key=lambda d: d[0]):
            decisions.append(Start(job.id))
            plan.jobs.remove(job)
            self._started(plan, now, job)
        # Then the jobs the plan has not seen, as the pass from scratch plans them.
        started, plan.count = plan_queue(plan.profile, queue, planned, now, plan.jobs, heap,
                                         plan.count, plan.ends)
        decisions.extend(Start(job.id) for job in started)
        return decisions

    @staticmethod
    def _started(plan: _Plan, now: float, job: Job) -> None:
        end = now + job.walltime
        plan.ends[end] = plan.ends.get(end, 0) + job.nodes

    @staticmethod
    def _holds(plan: _Plan, now: float, ends: list[tuple[float, int]], capacity: int,
               eccs: int, queue: Sequence[Job]) -> bool:
        """Whether the free-node profile from now on and the planned queue prefix are what
        the plan was made for: then every planned job's reservation is still the earliest
        it can have (the profile from now on is the same step function)."""
        if plan.capacity != capacity or plan.eccs != eccs:
            return False
        if plan.heap and plan.heap[0][0] < now:
            return False  # a reservation that did not start when due
        if len(plan.jobs) > len(queue) or queue[:len(plan.jobs)] != plan.jobs:
            return False
        ahead: dict[float, int] = {}
        for end, nodes in ends:
            if end > now:
                ahead[end] = ahead.get(end, 0) + nodes
        expected = {end: nodes for end, nodes in plan.ends.items() if end > now}
        if ahead != expected:
            return False
        plan.ends = expected
        return True
