"""`wcjs`: the real-time paper's scheduling heuristic (§6, Algorithms 1 and 2).

Algorithm 1: every pass splits the waiting jobs into a high-priority queue — real-time jobs
(RTJs) whose estimated slowdown (ESD, eq. 56) has reached their category's threshold — and
a low-priority queue with everything else. While the high-priority queue is not empty,
only it is scheduled; otherwise the default algorithm (EASY over the wfp2 order) runs the
low-priority queue, whose RTJs preempt nothing.

Algorithm 2 (weighted cost job scheduling) for a high-priority RTJ: a free partition of
its size if there is one; otherwise the eligible partition whose jobs cost least to
preempt. Eligible: nothing on it or overlapping it is real-time, checkpointing, on a larger
partition, unable to checkpoint (unless NO-CKPT), or a batch job whose ESD (eq. 57) is
above its category's batch threshold. The cost sums, over those jobs,
nodes x W_done x W_ckpt x W_sd. Weights and thresholds default to the authors' simulator
(../shared/papers/realtime-author-implementation-notes.md); docs/realtime.md has the
formulas, the options and our choices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..core.cluster import ClusterState
from ..core.decisions import Decision, WakeAt
from ..core.job import Job
from ..core.view import View
from .base import PolicyError
from .rt_common import (
    REALTIME,
    THRESHOLD_PRESETS,
    RealtimePolicy,
    Scheme,
    Thresholds,
    category,
    esd_running,
    esd_waiting,
    opt,
    parse_thresholds,
    scheme_option,
    wfp2_order,
)


class Wcjs(RealtimePolicy):
    name = "wcjs"
    summary = ("real-time heuristic: ESD thresholds, two queues, weighted-cost preemption "
               "(real-time §6, Algorithms 1-2)")

    @dataclass(frozen=True)
    class Options:
        ckpt: Scheme = scheme_option()
        thresholds: Literal["mira", "curie"] = opt(
            "mira", "preset of per-category RTJ and batch thresholds (authors' simulator)")
        rt_thresholds: str = opt(
            "", "RTJ high-priority ESD thresholds narrow-short,narrow-long,wide-short,"
            "wide-long (overrides the preset)")
        bj_thresholds: str = opt(
            "", "batch slowdown thresholds above which a job is not preempted, same order "
            "(overrides the preset)")
        w_done: float = opt(5.0, "W_done for a job close to its end")
        done_fraction: float = opt(0.25, "close to its end: remaining <= min(this x "
                                   "walltime, done_s)")
        done_s: float = opt(900.0, "see done_fraction")
        ckpt_scale_s: float = opt(900.0, "W_ckpt = max(1 + ln(t / this), 1), t = compute "
                                  "seconds since the job's last checkpoint")
        sd_offset: float = opt(2.0, "W_sd = log2(this + ESD)")
        hp_order: Literal["wfp2", "esd"] = opt(
            "wfp2", "order of the high-priority queue: wfp2 (authors' simulator) or "
            "descending ESD (Algorithm 1's sortBySlowdown)")
        order: Literal["wfp2", "fcfs"] = opt("wfp2", "order of the low-priority queue")
        blocking: Literal["strict", "backfill"] = opt(
            "strict", "strict: the low-priority queue waits while any RTJ is high priority "
            "(Algorithm 1); backfill: unplaced high-priority RTJs go first in the default "
            "algorithm's queue and low-priority jobs may backfill around the first one's "
            "reservation (not in the paper)")
        narrow_max: int = opt(4096, "narrow iff the partition has at most this many nodes")
        short_max_s: float = opt(7200.0, "short iff the walltime is at most this")

    def __init__(self, options: Options, cluster: object):
        super().__init__(options, cluster)
        o = options
        rt, bj = THRESHOLD_PRESETS[o.thresholds]
        self.rt_thr: Thresholds = (parse_thresholds(o.rt_thresholds, "rt_thresholds", self.name)
                                   if o.rt_thresholds else rt)
        self.bj_thr: Thresholds = (parse_thresholds(o.bj_thresholds, "bj_thresholds", self.name)
                                   if o.bj_thresholds else bj)
        if not (o.w_done > 0 and o.done_fraction >= 0 and o.done_s >= 0
                and o.ckpt_scale_s > 0 and o.sd_offset >= 1 and o.short_max_s > 0
                and o.narrow_max > 0):
            raise PolicyError(f"{self.name}: weights must be positive (sd_offset >= 1, so "
                              "that W_sd >= 1)")
        self.scheme = o.ckpt
        self.order = o.order
        self.counters["hp_passes"] = 0
        self._now = 0.0
        self._view: View | None = None
        self._size_limit = 0

    def category_of(self, job: Job) -> int:
        nodes = job.alloc_nodes or self.cluster.alloc_size(job.nodes) or job.nodes
        return category(nodes, job.walltime, self.options.narrow_max, self.options.short_max_s)

    def place(self, view: View, state: ClusterState, waiting: list[Job],
              decisions: list[Decision]) -> Sequence[Job] | None:
        now = view.now
        high: list[Job] = []
        low: list[Job] = []
        due = math.inf
        for job in waiting:
            if job.job_class is REALTIME:
                # ESD >= threshold  <=>  now >= submit + (threshold - 1) x walltime; the
                # time form cannot miss the crossing to rounding.
                crossing = job.submit + (self.rt_thr[self.category_of(job)] - 1) * job.walltime
                if now >= crossing:
                    high.append(job)
                    continue
                due = min(due, crossing)
            low.append(job)
        if due < math.inf:
            decisions.append(WakeAt(due))  # re-evaluate when the next RTJ crosses
        if not high:
            return self.ordered(low, view)
        self.counters["hp_passes"] += 1
        if self.options.hp_order == "esd":
            high.sort(key=lambda j: (-esd_waiting(j, now), j.submit, j.id))
        else:  # wfp2 whatever the low-priority queue's order is
            high = wfp2_order(high, now, self.cluster.total_nodes)
        self._view = view
        self._now = now
        vacated = False
        unplaced: list[Job] = []
        for job in high:
            # Alg. 2: a free partition first; by preemption only the first RTJ per pass.
            self._size_limit = self.cluster.alloc_size(job.nodes) or job.nodes
            how = self.start_or_vacate(view, state, job, decisions,
                                       None if vacated else self.cost)
            vacated = vacated or how == "vacated"
            if how == "waiting":
                unplaced.append(job)
        self._view = None
        if self.options.blocking == "backfill":
            return unplaced + self.ordered(low, view)
        return None  # Alg. 1: the low-priority queue waits while RTJs are high priority

    def cost(self, victim: Job) -> float | None:
        """One job's share of a partition's weighted cost, or None if its partition is not
        eligible (`_size_limit` is the preempting RTJ's partition size)."""
        if not self.preemptible(victim) or victim.alloc_nodes > self._size_limit:
            return None
        sd = esd_running(victim)
        if sd > self.bj_thr[self.category_of(victim)]:
            return None
        o = self.options
        remaining = victim.predicted_end - self._now
        w_done = o.w_done if remaining <= min(o.done_fraction * victim.walltime, o.done_s) else 1.0
        assert self._view is not None
        since = self._view.lost_if_preempted(victim.id)
        w_ckpt = max(1.0 + math.log(since / o.ckpt_scale_s), 1.0) if since > 0 else 1.0
        w_sd = math.log2(o.sd_offset + sd)
        return victim.nodes * w_done * w_ckpt * w_sd
