"""Checkpoint-based aggressive backfilling (Niu et al., ../shared/papers/
checkpoint-based-backfilling.md).

The classical FCFS backfilling of the paper's Algorithm 1 (`easy`'s pass: with p = 1 the
decisions are `easy`'s), with two changes:
* backfill eligibility and predicted end times use the scheduler's predicted runtime of
  Algorithm 2 instead of the user's estimate: estimates of at least the threshold (`t_thr`
  seconds, or by default an online quantile of the requested times) are scaled down by
  `p`; a job that was checkpointed is predicted by its remaining requested time (plus the
  restart extension `T_extend`);
* Algorithm 3: when the reservation promised to the head comes and nodes are missing
  because backfilled jobs outlived their predictions, backfilled jobs are checkpointed
  (JIT) and stopped, largest first, until the head fits; they go back to the head of the
  queue (behind the reserved job), and the reserved job starts once their checkpoints are
  written (the engine releases a job's nodes only then).

The paper assumes jobs are not bound to specific nodes (§3.1, assumption 2), so the policy
runs on node pools. Where the paper is silent, docs/policies.md says what we chose.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.cluster import Cluster, NodePool
from ..core.decisions import Decision, Preempt, PreemptMode, Start, WakeAt
from ..core.job import Job, JobState
from ..core.view import View
from .backfill import eligible_queue, shadow_and_extra
from .base import Policy, PolicyError

INF = float("inf")
FLAGGED_IDS = 1 << 20  # job ids RequestQuantile tracks in a list (8 MB at most; others: a set)


@dataclass(frozen=True)
class CkptBackfillOptions:
    p: float = field(default=0.2, metadata={
        "help": "scale-down factor of estimates >= the threshold (0 < p <= 1; 1 = classical)"})
    t_thr: float = field(default=-1.0, metadata={
        "help": "estimates shorter than this many seconds are not scaled (the paper: 1800); "
        "-1: the t_thr_q quantile of the requested times submitted so far"})
    t_thr_q: float = field(default=0.5, metadata={
        "help": "with t_thr=-1: the share of jobs, by requested time, shielded from scaling "
        "(0 = none, 1 = all: classical)"})
    t_extend: float = field(default=-1.0, metadata={
        "help": "seconds added to a checkpointed job's prediction; -1: the engine's "
        "modelled checkpoint write + restart read for the job"})


def predict_runtime(estimate: float, ran: float | None, p: float, t_thr: float,
                    t_extend: float) -> float:
    """Algorithm 2: the scheduler's prediction of a job's (remaining) runtime.

    `ran` is the time a checkpointed job has already run (None for a job never
    checkpointed). A checkpointed job is predicted by what is left of its estimate whatever
    the threshold is now (an online threshold may have moved above its estimate since)."""
    if ran is not None:
        return max(estimate - ran, 0.0) + t_extend
    if estimate < t_thr:
        return estimate
    return estimate * p


class RequestQuantile:
    """The q-quantile of the requested times submitted so far, kept online (causal): the
    value with floor(q x n) of the n requests below it in sorted order, so that about a
    share q of jobs is shorter; infinite when floor(q x n) = n. Two heaps split the
    requests at that rank, so each new request costs O(log n)."""

    def __init__(self, q: float):
        self.q = q
        self.below: list[float] = []  # the floor(q x n) smallest, negated (a max-heap)
        self.rest: list[float] = []  # the others (a min-heap)
        self.seen: set[int] = set()
        # seen_flag[i]: job i was seen, for every seen id in 0..FLAGGED_IDS-1 (the list
        # grows to cover each one as it is seen); other ids are only in `seen`. The test of
        # a queue thousands deep, nearly all seen, each pass: an index, not a set lookup.
        self.seen_flag: list[bool] = []

    def add(self, jobs: Sequence[Job]) -> None:
        seen = self.seen
        flags = self.seen_flag
        new: list[Job] = []
        for job in jobs:
            jid = job.id
            if 0 <= jid < len(flags):
                if not flags[jid]:
                    new.append(job)
            elif jid not in seen:
                new.append(job)
        for job in new:  # the new requests in queue order, as before
            if job.id in seen:
                continue
            seen.add(job.id)
            if 0 <= job.id < FLAGGED_IDS:
                if job.id >= len(flags):
                    size = min(max(job.id + 1, 2 * len(flags)), FLAGGED_IDS)
                    flags.extend([False] * (size - len(flags)))
                flags[job.id] = True
            x = job.walltime
            if self.below and x < -self.below[0]:
                heapq.heappush(self.below, -x)
            else:
                heapq.heappush(self.rest, x)
            rank = int(self.q * len(self.seen))
            while len(self.below) > rank:
                heapq.heappush(self.rest, -heapq.heappop(self.below))
            while len(self.below) < rank:
                heapq.heappush(self.below, -heapq.heappop(self.rest))

    def value(self) -> float:
        return self.rest[0] if self.rest else INF


class CkptBackfill(Policy):
    name = "ckpt-backfill"
    summary = ("aggressive backfilling on scaled-down runtime predictions, checkpointing "
               "backfilled jobs when a reservation comes due (Niu et al.)")
    Options = CkptBackfillOptions

    def __init__(self, options: CkptBackfillOptions, cluster: Cluster):
        super().__init__(options, cluster)
        if not 0 < options.p <= 1:
            raise PolicyError(f"ckpt-backfill: p must be in (0, 1], not {options.p:g}")
        if not (options.t_thr == -1 or options.t_thr >= 0):  # NaN is refused too
            raise PolicyError("ckpt-backfill: t_thr must be -1 (the t_thr_q quantile) or "
                              f"a number of seconds >= 0, not {options.t_thr:g}")
        if not 0 <= options.t_thr_q <= 1:
            raise PolicyError(f"ckpt-backfill: t_thr_q must be in [0, 1], not "
                              f"{options.t_thr_q:g}")
        if not isinstance(cluster, NodePool):
            raise PolicyError("ckpt-backfill assumes jobs are not bound to specific nodes "
                              "(the paper's §3.1): use a node pool (nodes:N)")
        self.requests = RequestQuantile(options.t_thr_q) if options.t_thr < 0 else None
        # Running job -> seconds Algorithm 2 took off its estimate: its predicted end is
        # the engine's walltime-based end (what `easy` uses) minus this.
        self.shaved: dict[int, float] = {}
        self.backfilled: set[int] = set()  # running jobs that were backfilled
        self.ran: dict[int, float] = {}  # checkpointed job -> time it has run (hasRunTime)
        self.first_in_line: list[int] = []  # checkpointed jobs, back at the queue head
        self.reserved: int | None = None  # the job whose due reservation preempted others
        self.counts = {"backfill_starts": 0, "preemptions": 0, "reservations_due": 0,
                       "preempting_reservations": 0, "cascade_reservations": 0,
                       "cascade_preemptions": 0, "scaled_starts": 0}
        self._woken_for = -1.0
        # (head, time) of the reservation backfilling relied on: when that time comes and
        # the head still does not fit, Algorithm 3 preempts.
        self.promise: tuple[int, float] = (-1, INF)
        self._t_thr = options.t_thr

    # ------------------------------------------------------------------ predictions
    def _extend(self, view: View, job: Job) -> float:
        if self.options.t_extend >= 0:
            return self.options.t_extend
        return 2.0 * view.checkpoint_seconds(job.id)  # T_extend = T_ckpt + T_restart

    def _predict(self, view: View, job: Job) -> float:
        ran = self.ran.get(job.id)
        extend = self._extend(view, job) if ran is not None else 0.0
        return predict_runtime(job.walltime, ran, self.options.p, self._t_thr, extend)

    def _in_order_runtime(self, view: View, job: Job) -> float:
        """Algorithm 1 line 6: the estimate (what is left of it for a checkpointed job)."""
        ran = self.ran.get(job.id)
        if ran is None:
            return job.walltime
        return max(job.walltime - ran, 0.0) + self._extend(view, job)

    # ------------------------------------------------------------------ the pass
    def schedule(self, view: View) -> list[Decision]:
        now = view.now
        self._forget_gone(view.running)
        if self.requests is not None:
            self.requests.add(view.queue)
            self._t_thr = self.requests.value()
        decisions: list[Decision] = []
        queue = self._ordered(eligible_queue(view, decisions))
        free = view.free_nodes
        # Algorithm 1, lines 1-9: start from the head while it fits.
        started: list[tuple[Job, float]] = []  # (job, predicted runtime) started this pass
        i = 0
        for job in queue:
            if job.nodes > free:
                break
            runtime = self._in_order_runtime(view, job)
            self._start(job, runtime, 0.0, False, decisions)
            started.append((job, runtime))
            free -= job.nodes
            i += 1
        if i == len(queue):
            return decisions
        head = queue[i]
        promised = self.promise[1] if self.promise[0] == head.id else INF
        releases, outlived = self._releases(view, started)
        if outlived and promised <= now:
            # Algorithm 3: the head's reservation has come, and nodes are missing because
            # backfilled jobs outlived their predictions.
            if self._preempt_for(view, head, free, decisions):
                return decisions
            promised = INF  # nothing left to preempt: plan the head anew
        # Lines 13-25: the head's reservation from the predicted ends.
        reserve_time, extra = shadow_and_extra(releases, head.nodes, free)
        if reserve_time <= now:
            return decisions  # the head fits once the checkpoints being written are done
        if promised < reserve_time and outlived:
            # A job it counted on outlived its prediction: the promise stands (Algorithm 3
            # will preempt then), and nothing may use the head's nodes beyond it.
            reserve_time, extra = promised, 0
        self.promise = (head.id, reserve_time)
        if reserve_time < INF and reserve_time != self._woken_for:
            decisions.append(WakeAt(reserve_time))  # look again when it comes due
            self._woken_for = reserve_time
        # Lines 26-40: backfill on predicted runtimes (the test `easy` makes, on them).
        for job in queue[i + 1:]:
            if free == 0:
                break
            if job.nodes > free:
                continue
            runtime = self._predict(view, job)
            if now + runtime <= reserve_time:
                free -= job.nodes
            elif job.nodes <= extra:
                free -= job.nodes
                extra -= job.nodes
            else:
                continue
            self._start(job, runtime, self._in_order_runtime(view, job) - runtime, True,
                        decisions)
        return decisions

    def _ordered(self, queue: Sequence[Job]) -> Sequence[Job]:
        """The reserved job first, then checkpointed jobs in the order they were stopped,
        then the queue in (submit, id) order. The queue itself (not a copy) when nothing
        goes first; only the few jobs that may go first are looked up in it."""
        if not self.first_in_line and self.reserved is None:
            return queue
        wanted = set(self.first_in_line)
        if self.reserved is not None:
            wanted.add(self.reserved)
        # One walk: the wanted jobs that wait, and the others in queue order (a wanted id
        # that does not wait is in no job, so leaving out `wanted` leaves out the front).
        waiting: dict[int, Job] = {}
        rest: list[Job] = []
        lo, hi = min(wanted), max(wanted)  # most ids are outside: no set lookup for them
        for job in queue:
            jid = job.id
            if lo <= jid <= hi and jid in wanted:
                waiting[jid] = job
            else:
                rest.append(job)
        if not waiting:
            return queue
        front = [self.reserved] if self.reserved in waiting else []
        front += [j for j in self.first_in_line if j in waiting and j != self.reserved]
        return [waiting[j] for j in front] + rest

    def _start(self, job: Job, runtime: float, shaved: float, backfill: bool,
               decisions: list[Decision]) -> None:
        decisions.append(Start(job.id))
        self.shaved[job.id] = shaved
        if shaved > 0:
            self.counts["scaled_starts"] += 1
        if backfill:
            self.backfilled.add(job.id)
            self.counts["backfill_starts"] += 1
        if job.id == self.reserved:
            self.reserved = None
        if job.id in self.first_in_line:
            self.first_in_line.remove(job.id)

    def _releases(self, view: View, started: list[tuple[Job, float]]
                  ) -> tuple[list[tuple[float, int]], bool]:
        """(predicted end, nodes) of everything holding nodes, ascending, and whether a
        running job has outlived its scaled prediction. Predicted ends: the engine's
        walltime-based ends (as `easy` sees them) less what Algorithm 2 scaled away while
        that lies ahead, else the engine's (so that no reservation is computed as already
        due from a prediction known to be wrong); a job writing its checkpoint at `now`
        (its nodes come back when it is written); the jobs started in this pass at now +
        their predicted runtime."""
        now = view.now
        running = view.running
        shaved = self.shaved
        outlived = False
        ends = []
        for end, jid in view.running_by_end():
            cut = shaved.get(jid, 0.0)
            if cut > 0.0:
                if end - cut > now:
                    end -= cut
                else:
                    outlived = True
            ends.append((end, jid, running[jid].alloc_nodes))
        if view.checkpointing_count:
            ends += [(now, jid, running[jid].alloc_nodes) for _, jid in view.checkpointing_until()]
        ends += [(now + runtime, job.id, job.nodes) for job, runtime in started]
        ends.sort()
        return [(end, nodes) for end, _, nodes in ends], outlived

    def _preempt_for(self, view: View, head: Job, free: int,
                     decisions: list[Decision]) -> bool:
        """Algorithm 3: checkpoint and stop backfilled jobs, largest first, until the head
        fits once their checkpoints are written; the head starts then (a later pass).
        False if even that cannot make it fit."""
        self.counts["reservations_due"] += 1
        self.reserved = head.id
        releasing = sum(j.alloc_nodes for j in view.running.values()
                        if j.state is JobState.CHECKPOINTING)
        need = head.nodes - free - releasing
        if need <= 0:
            return True
        victims = sorted(
            (j for j in view.running.values()
             if j.id in self.backfilled and j.state is JobState.RUNNING and j.checkpointable),
            key=lambda j: (-j.alloc_nodes, -(j.predicted_end - self.shaved.get(j.id, 0.0)),
                           j.id))
        cascade = head.id in self.ran  # the reservation of a job that was checkpointed
        taken = 0
        for job in victims:
            if need <= 0:
                break
            decisions.append(Preempt(job.id, PreemptMode.JIT))
            self.ran[job.id] = self.ran.get(job.id, 0.0) + max(0.0, view.now - job.last_start)
            self.first_in_line.append(job.id)
            self.backfilled.discard(job.id)
            self.shaved.pop(job.id, None)
            need -= job.alloc_nodes
            taken += 1
        self.counts["preemptions"] += taken
        if taken:
            self.counts["preempting_reservations"] += 1
            if cascade:
                self.counts["cascade_reservations"] += 1
                self.counts["cascade_preemptions"] += taken
        if need > 0:
            self.reserved = None
        return need <= 0

    def _forget_gone(self, running: Mapping[int, Job]) -> None:
        """Drop bookkeeping of jobs that no longer hold nodes (finished or stopped)."""
        for job_id in [j for j in self.shaved if j not in running]:
            del self.shaved[job_id]
            self.backfilled.discard(job_id)

    def stats(self) -> dict[str, int]:
        out = dict(self.counts)
        if self.requests is not None:
            out["t_thr_final_s"] = int(self._t_thr) if self._t_thr < INF else -1
        return out
