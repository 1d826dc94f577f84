"""What the real-time policies share (rt-hpq, rt-preempt, wcjs; real-time paper §4, §6).

* job categories (narrow/wide x short/long, §7.1.1) and per-category thresholds;
* estimated slowdown, ESD (eqs. 56-58);
* Cobalt's "wfp2" queue order, which the authors' simulator uses for every queue;
* the preemption schemes of Table 1 mapped onto engine preemption modes;
* `RealtimePolicy`: the pass skeleton — JIT claims served first, then the policy's own
  real-time placements, then the default algorithm (EASY over the policy's queue with the
  claimed resources held back) — and the search for a partition to vacate.

A JIT claim is a partition (a node count on a pool) whose batch jobs are writing their
checkpoints so that a real-time job can start there: nothing else may use it meanwhile,
and the real-time job starts in the first pass after the last checkpoint is written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.bgq import BlockCluster, BlockState, iter_bits
from ..core.cluster import ClusterState
from ..core.decisions import Decision, Preempt, PreemptMode, Start, WakeAt
from ..core.job import Job, JobClass, JobState
from ..core.view import View
from .backfill import easy_pass
from .base import Policy, PolicyError
from .wfp2 import wfp2_order as wfp2_order  # wcjs and the tests import it from here

CATEGORIES = ("narrow-short", "narrow-long", "wide-short", "wide-long")
Thresholds = tuple[float, float, float, float]

# (RTJ high-priority ESD thresholds, batch-job slowdown thresholds) per category, from the
# authors' simulator (../shared/papers/realtime-author-implementation-notes.md).
THRESHOLD_PRESETS: dict[str, tuple[Thresholds, Thresholds]] = {
    "mira": ((1.1, 1.1, 2.0, 1.59), (1.5, 1.5, 17.31, 4.77)),
    "curie": ((1.1, 1.1, 2.0, 2.0), (1.5, 3.21, 13.5, 6.02)),
}

# Table 1 scheme -> (how a victim is preempted, the engine's periodic checkpoint mode).
SCHEMES: dict[str, tuple[PreemptMode, str]] = {
    "none": (PreemptMode.RESTART, "none"),
    "sys": (PreemptMode.LAST_CHECKPOINT, "sys"),
    "app": (PreemptMode.LAST_CHECKPOINT, "app"),
    "jit": (PreemptMode.JIT, "none"),
}

REALTIME = JobClass.REALTIME
RUNNING = JobState.RUNNING
CHECKPOINTING = JobState.CHECKPOINTING


Scheme = Literal["none", "sys", "app", "jit"]


def opt(default: Any, text: str) -> Any:
    return field(default=default, metadata={"help": text})


def scheme_option() -> Any:
    """The `ckpt` option of the preempting policies (default JIT)."""
    return opt("jit", "Table 1 scheme for preempted batch jobs: none = restart from "
               "scratch; sys / app = resume from the last periodic checkpoint (the engine "
               "runs with --ckpt sys / app, which the CLI sets); jit = checkpoint now, the "
               "RTJ starts when every checkpoint is written")


def category(alloc_nodes: int, walltime: float, narrow_max: int, short_max_s: float) -> int:
    """Index into CATEGORIES: narrow iff the partition has <= narrow_max nodes, short iff
    the walltime is <= short_max_s (the authors' simulator classifies by walltime)."""
    return 2 * (alloc_nodes > narrow_max) + (walltime > short_max_s)


def esd_waiting(job: Job, now: float) -> float:
    """Eq. 56: the slowdown the job would have if it started now and ran its walltime."""
    return (job.walltime + now - job.submit) / job.walltime


def esd_running(job: Job) -> float:
    """Eqs. 57-58: the slowdown if the running job used its whole walltime."""
    return (job.predicted_end - job.submit) / job.walltime


def parse_thresholds(text: str, what: str, policy: str) -> Thresholds:
    parts = [p.strip() for p in text.split(",")]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 4 or not all(v >= 1.0 and math.isfinite(v) for v in values):
        raise PolicyError(f"{policy}: {what} needs four numbers >= 1 for narrow-short, "
                          f"narrow-long, wide-short, wide-long (e.g. 1.1,1.1,2.0,1.59), "
                          f"got {text!r}")
    return values  # type: ignore[return-value]


@dataclass(slots=True)
class Claim:
    """A partition (or, on a pool, a node count) held for a real-time job while the
    batch jobs on it write their JIT checkpoints."""

    job_id: int
    block: int  # -1 on a node pool
    nodes: int
    victims: tuple[int, ...]


# A victim chooser's verdict on one running job: its cost, or None if it may not be taken.
VictimCost = Callable[[Job], "float | None"]


class RealtimePolicy(Policy):
    """The pass skeleton of the real-time policies.

    Preempting subclasses set `scheme` (a key of SCHEMES; None: the policy never
    preempts and works with any periodic checkpoints); all implement `place()`: start or
    vacate
    for real-time jobs, and return the queue the default algorithm runs over in this pass
    (None: it does not run). Once a pass has started or preempted anything itself it ends
    there and asks for another pass at the same instant, so the default algorithm always
    plans on the engine's current state.
    """

    scheme: str | None = None
    order: str = "wfp2"

    def __init__(self, options: Any, cluster: Any):
        super().__init__(options, cluster)
        self.claims: dict[int, Claim] = {}
        self.counters: dict[str, int] = {
            "rt_free_starts": 0, "rt_vacated": 0, "victims": 0, "claims_served": 0,
            "claims_dropped": 0,
        }
        self._by_name: dict[int, list[int]] = {}

    # -- the pass -----------------------------------------------------------------------

    def schedule(self, view: View) -> list[Decision]:
        decisions: list[Decision] = []
        state = view.free_state()
        queue = None
        if self.claims:  # the queue as a dict and a filtered list cost a deep queue's pass
            waiting = {job.id: job for job in view.queue}
            self._serve_claims(view, state, waiting, decisions)
            unclaimed = [j for j in view.queue if j.id not in self.claims]
        else:
            unclaimed = list(view.queue)
        if not decisions:
            queue = self.place(view, state, unclaimed, decisions)
        if any(not isinstance(d, WakeAt) for d in decisions):
            decisions.append(WakeAt(view.now))  # plan the rest on the changed state
            return decisions
        if queue:
            decisions += easy_pass(view, "first", queue=queue, state=state)
        return decisions

    def place(self, view: View, state: ClusterState, waiting: list[Job],
              decisions: list[Decision]) -> Sequence[Job] | None:
        raise NotImplementedError

    def ordered(self, jobs: Iterable[Job], view: View) -> list[Job]:
        if self.order == "fcfs":
            return list(jobs)  # the view's queue order, (submit, id)
        return wfp2_order(jobs, view.now, self.cluster.total_nodes)

    def periodic_checkpoints(self) -> str | None:
        return None if self.scheme is None else SCHEMES[self.scheme][1]

    def stats(self) -> dict[str, int]:
        return dict(self.counters)

    # -- JIT claims -------------------------------------------------------------------------

    def _serve_claims(self, view: View, state: ClusterState, waiting: dict[int, Job],
                      decisions: list[Decision]) -> None:
        """Start the real-time jobs whose victims have all written their checkpoints; hold
        back what the other claims cover."""
        running = view.running
        for job_id, claim in list(self.claims.items()):
            if job_id not in waiting:  # cancelled meanwhile
                del self.claims[job_id]
                continue
            # A victim is done with this claim once it stops checkpointing; it may be
            # taken again later for another claim, which must not hold this one up.
            claim.victims = tuple(v for v in claim.victims
                                  if v in running and running[v].state is CHECKPOINTING)
            if claim.victims:
                self._hold_back(state, claim, sum(running[v].alloc_nodes for v in claim.victims))
                continue
            del self.claims[job_id]
            alloc = (state.allocate_block(claim.block) if claim.block >= 0
                     else state.allocate(claim.nodes))
            if alloc is None:  # a failure took part of it: decide again from scratch
                self.counters["claims_dropped"] += 1
                continue
            self.counters["claims_served"] += 1
            decisions.append(Start(job_id, block=claim.block if claim.block >= 0 else None))

    @staticmethod
    def _hold_back(state: ClusterState, claim: Claim, still_held: int) -> None:
        if isinstance(state, BlockState):
            state.exclude(claim.block)
            return
        # Pool: the free part of the claim is what its victims no longer hold.
        hide = min(max(claim.nodes - still_held, 0), state.free_nodes)
        if hide:
            state.allocate(hide)

    # -- vacating a partition for a real-time job -------------------------------------

    def start_or_vacate(self, view: View, state: ClusterState, job: Job,
                        decisions: list[Decision], cost: VictimCost | None) -> str:
        """Start `job` on free resources ("started"); else, if `cost` is given, preempt
        the cheapest eligible set of running jobs for it ("vacated"); else "waiting"."""
        alloc = state.allocate(job.nodes)
        if alloc is not None:
            self.counters["rt_free_starts"] += 1
            decisions.append(Start(job.id, block=alloc.block if alloc.block >= 0 else None))
            return "started"
        if cost is None:
            return "waiting"
        if isinstance(state, BlockState):
            choice = self._cheapest_block(view, state, job, cost)
        else:
            choice = self._cheapest_set(view, state, job, cost)
        if choice is None:
            return "waiting"
        block, victims = choice
        self._vacate(state, job, block, victims, decisions)
        return "vacated"

    def _vacate(self, state: ClusterState, job: Job, block: int, victims: list[Job],
                decisions: list[Decision]) -> None:
        assert self.scheme is not None, "only a preempting policy vacates"
        mode = SCHEMES[self.scheme][0]
        self.counters["rt_vacated"] += 1
        self.counters["victims"] += len(victims)
        decisions.extend(Preempt(v.id, mode) for v in victims)
        nodes = self.cluster.alloc_size(job.nodes) or job.nodes
        if mode is PreemptMode.JIT:
            claim = Claim(job.id, block, nodes, tuple(v.id for v in victims))
            self.claims[job.id] = claim
            self._hold_back(state, claim, sum(v.alloc_nodes for v in victims))
            return
        for v in victims:  # stopped now: the start below finds their nodes free
            assert v.allocation is not None
            state.release(v.allocation)
        alloc = state.allocate_block(block) if block >= 0 else state.allocate(job.nodes)
        assert alloc is not None, "vacated resources must fit the real-time job"
        decisions.append(Start(job.id, block=block if block >= 0 else None))

    def preemptible(self, victim: Job) -> bool:
        """Running (not already checkpointing), not real-time, and able to keep its work
        the scheme's way: a job that cannot checkpoint is preempted only under NO-CKPT."""
        return (victim.state is RUNNING and victim.job_class is not REALTIME
                and (victim.checkpointable or self.scheme == "none"))

    def _cheapest_block(self, view: View, state: BlockState, job: Job, cost: VictimCost
                        ) -> tuple[int, list[Job]] | None:
        """Of the partitions of the job's size, the one whose jobs cost least to preempt;
        ties go to the first partition by name. A partition is out if anything on it (or
        overlapping it) may not be preempted, or if it is down or held back."""
        cluster = state.cluster
        holders = {j.allocation.block: j for j in view.running.values()
                   if j.allocation is not None}
        blocked = state.down | state.outside
        best: tuple[int, list[Job]] | None = None
        best_cost = math.inf
        for b in self._blocks_by_name(cluster, cluster.alloc_size(job.nodes) or 0):
            if cluster.masks[b] & blocked:
                continue
            victims: list[Job] = []
            total = 0.0
            for h in iter_bits(state.held & cluster.conflict_bits[b]):
                victim = holders.get(h)
                c = None if victim is None else cost(victim)  # None: started this pass
                if c is None:
                    break
                victims.append(victim)  # type: ignore[arg-type]
                total += c
            else:
                if victims and total < best_cost:
                    best, best_cost = (b, victims), total
        return best

    def _blocks_by_name(self, cluster: BlockCluster, size: int) -> list[int]:
        names = self._by_name.get(size)
        if names is None:
            names = sorted(iter_bits(cluster.size_bits.get(size, 0)),
                           key=lambda b: cluster.blocks[b].name)
            self._by_name[size] = names
        return names

    def _cheapest_set(self, view: View, state: ClusterState, job: Job, cost: VictimCost
                      ) -> tuple[int, list[Job]] | None:
        """Node pools: running jobs whose nodes, with the free ones, cover the request.
        One job that covers the shortfall alone, the cheapest; otherwise the cheapest per
        node first, then those no longer needed are put back, dearest first."""
        short = job.nodes - state.free_nodes
        priced = [(c, v) for v in view.running.values() if (c := cost(v)) is not None]
        alone = [(c, v.id, v) for c, v in priced if v.alloc_nodes >= short]
        if alone:
            return -1, [min(alone, key=lambda t: (t[0], t[1]))[2]]
        priced.sort(key=lambda t: (t[0] / t[1].alloc_nodes, -t[1].alloc_nodes, t[1].id))
        taken: list[tuple[float, Job]] = []
        got = 0
        for c, v in priced:
            if got >= short:
                break
            taken.append((c, v))
            got += v.alloc_nodes
        if got < short:
            return None
        for c, v in sorted(taken, key=lambda t: (-t[0], t[1].id)):
            if got - v.alloc_nodes >= short:
                taken.remove((c, v))
                got -= v.alloc_nodes
        return -1, sorted((v for _, v in taken), key=lambda v: v.id)
