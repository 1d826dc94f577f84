"""The real-time paper's basic schemes (§4): a high-priority queue, and preemption.

`rt-hpq` (§4.1): real-time jobs (RTJs) wait in a high-priority queue ahead of the normal
queue. `rt-preempt` (§4.2, Table 1): an RTJ that cannot start takes the partition whose
preemption keeps the machine busiest, preempting the batch jobs there (NO/SYS/APP/JIT-CKPT).
Choices where the paper is silent are in docs/realtime.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..core.cluster import ClusterState, PoolState
from ..core.decisions import Decision
from ..core.job import Job
from ..core.view import View
from .backfill import easy_pass
from .rt_common import REALTIME, RealtimePolicy, Scheme, opt, scheme_option
from .wfp2 import wfp2_easy_queue

Order = Literal["wfp2", "fcfs"]


def split_classes(jobs: Sequence[Job]) -> tuple[list[Job], list[Job]]:
    """(real-time jobs, the others), each in the given order."""
    rt = [j for j in jobs if j.job_class is REALTIME]
    return rt, [j for j in jobs if j.job_class is not REALTIME]


class RtHpq(RealtimePolicy):
    name = "rt-hpq"
    summary = "real-time jobs in a high-priority queue ahead of batch jobs (real-time §4.1)"

    @dataclass(frozen=True)
    class Options:
        order: Order = opt("wfp2", "order within each queue: Cobalt's wfp2 utility (the "
                           "authors' simulator) or fcfs")
        blocking: Literal["backfill", "strict"] = opt(
            "backfill", "backfill: batch jobs may only backfill without delaying the first "
            "waiting RTJ's reservation; strict: no batch job starts while an RTJ waits")

    def __init__(self, options: Options, cluster: object):
        super().__init__(options, cluster)
        self.order = options.order

    def place(self, view: View, state: ClusterState, waiting: list[Job],
              decisions: list[Decision]) -> Sequence[Job] | None:
        rt, batch = split_classes(waiting)
        rt, batch = self.ordered(rt, view), self.ordered(batch, view)
        if rt and self.options.blocking == "strict":
            # RTJs alone; once none waits any more, the next pass schedules batch jobs.
            decisions += easy_pass(view, "first", queue=rt, state=state)
            return None
        return rt + batch


class RtPreempt(RealtimePolicy):
    name = "rt-preempt"
    summary = ("real-time jobs preempt batch jobs on the partition that keeps the machine "
               "busiest, NO/SYS/APP/JIT-CKPT (real-time §4.2)")

    @dataclass(frozen=True)
    class Options:
        ckpt: Scheme = scheme_option()
        order: Order = opt("wfp2", "order within each queue: wfp2 or fcfs")

    def __init__(self, options: Options, cluster: object):
        super().__init__(options, cluster)
        self.scheme = options.ckpt
        self.order = options.order

    def place(self, view: View, state: ClusterState, waiting: list[Job],
              decisions: list[Decision]) -> Sequence[Job] | None:
        rt, batch = split_classes(waiting)
        left: list[Job] = []
        vacated = False
        for job in self.ordered(rt, view):
            # One partition vacated per pass: the next pass sees the engine's new state.
            how = self.start_or_vacate(view, state, job, decisions,
                                       None if vacated else self._cost)
            vacated = vacated or how == "vacated"
            if how == "waiting":
                left.append(job)
        return left + self.ordered(batch, view)

    def _cost(self, victim: Job) -> float | None:
        """Nodes lost to preemption: the partition that keeps the most nodes busy wins."""
        return float(victim.alloc_nodes) if self.preemptible(victim) else None


class EasyWfp2(RealtimePolicy):
    name = "easy-wfp2"
    summary = ("EASY backfilling over Cobalt's wfp2 order, every job as batch (the real-time "
               "paper's baseline)")

    def schedule(self, view: View) -> list[Decision]:
        state = view.free_state()
        if (type(state) is PoolState and self.order == "wfp2" and not self.claims
                and not view.has_requested_starts):
            # EASY on a pool, as the pass skeleton runs it (nothing held back): nothing
            # starts without free nodes, and with some the pass starts the same jobs on
            # wfp2_easy_queue's few as on the whole wfp2 order.
            free = state.free_nodes
            if free == 0:
                return []
            queue = view.queue
            order = wfp2_easy_queue(view, queue if type(queue) is list else list(queue),
                                    self.cluster.total_nodes, free)
            return easy_pass(view, "first", queue=order, state=state) if order else []
        return super().schedule(view)

    def place(self, view: View, state: ClusterState, waiting: list[Job],
              decisions: list[Decision]) -> Sequence[Job] | None:
        return self.ordered(waiting, view)
