"""`wcjs`: the real-time paper's scheduling heuristic (§6, Algorithms 1 and 2).

Algorithm 1: every pass splits the waiting jobs into a high-priority queue — real-time jobs
(RTJs) whose estimated slowdown (ESD, eq. 56) has reached their category's threshold — and
a low-priority queue with everything else, whose RTJs preempt nothing. The high-priority
queue is scheduled first; the default algorithm (EASY over the wfp2 order) then runs the
low-priority queue. What an unplaced high-priority RTJ holds back is the `blocking` option:
by default only the low-priority RTJs, as in the authors' simulator (the paper's text holds
back the whole low-priority queue: `blocking=strict`); an RTJ that no partition can be
vacated for holds back nothing in any mode (docs/realtime.md).

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

from ..core.bgq import BlockState, iter_bits
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
        blocking: Literal["authors", "strict", "backfill"] = opt(
            "authors", "what an unplaced high-priority RTJ holds back. authors (the authors' "
            "simulator): only the low-priority RTJs; batch jobs run in the same pass. "
            "strict (Algorithm 1's text): the whole low-priority queue. backfill (not in "
            "the paper): nothing; the RTJ goes first in the default algorithm's queue. In "
            "every mode an RTJ that no partition of its size can be vacated for holds "
            "nothing back and waits first in that queue, with the EASY reservation")
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
        self.counters["hp_holding_passes"] = 0  # an unplaced RTJ held something back
        self.counters["hp_stuck_passes"] = 0  # an unplaced RTJ no partition can be vacated for
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
        blocking = self.options.blocking
        if blocking == "backfill":
            return unplaced + self.ordered(low, view)
        # No-stall rule: only an RTJ that waiting can serve by preemption holds anything
        # back; one whose every partition holds a job Algorithm 2 never preempts (an RTJ, a
        # job that cannot checkpoint, a job on a larger partition) waits first in the
        # default algorithm's queue, with the EASY reservation, as under `backfill`.
        stuck = [j for j in unplaced if not self.could_vacate(view, state, j)]
        holding = len(stuck) < len(unplaced)
        if holding:
            self.counters["hp_holding_passes"] += 1
        if stuck:
            self.counters["hp_stuck_passes"] += 1
        if blocking == "strict" and holding:
            return None  # Alg. 1: the low-priority queue waits while RTJs are high priority
        if blocking == "authors" and holding:
            # bgsched.py's remove_unpreemptable_low_priority_jobs, "method 0": the batch
            # jobs are scheduled in the same pass; only the low-priority RTJs wait.
            low = [j for j in low if j.job_class is not REALTIME]
        return stuck + self.ordered(low, view)

    def could_vacate(self, view: View, state: ClusterState, job: Job) -> bool:
        """Whether some partition of the RTJ's size (on a pool: enough nodes) holds only
        jobs Algorithm 2 may preempt once they pass its checks that change with time
        (checkpointing, batch threshold). Jobs an RTJ can never take — real-time ones,
        ones that cannot checkpoint (unless NO-CKPT), ones on a larger partition, and
        ones started in this pass — make a partition hopeless until they end."""
        size = self.cluster.alloc_size(job.nodes) or job.nodes

        def never(victim: Job | None) -> bool:
            return (victim is None or victim.job_class is REALTIME
                    or not (victim.checkpointable or self.scheme == "none")
                    or victim.alloc_nodes > size)

        if isinstance(state, BlockState):
            cluster = state.cluster
            holders = {j.allocation.block: j for j in view.running.values()
                       if j.allocation is not None}
            for b in self._blocks_by_name(cluster, size):
                if cluster.masks[b] & state.down:
                    continue
                if not any(never(holders.get(h))
                           for h in iter_bits(state.held & cluster.conflict_bits[b])):
                    return True
            return False
        takeable = sum(v.alloc_nodes for v in view.running.values() if not never(v))
        return state.free_nodes + takeable >= job.nodes

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
