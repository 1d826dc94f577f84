"""`plan-sa`: plan-based scheduling by simulated annealing (Zheng et al., "Exploring
Plan-Based Scheduling for Large-Scale Computing Systems"; PLAN 1/2/3).

At every pass the whole eligible queue is replanned: a permutation of the waiting jobs is
decoded greedily onto the availability profile built from the running jobs' predicted ends
(each job at the earliest time it fits for its whole walltime), simulated annealing
searches the permutations (neighbour: remove one job and reinsert it elsewhere; initial
permutation: queue order; best-so-far kept), and the jobs the best plan starts now are
started. The kernel is `plan_kernel`, compiled with numba; it is imported on first use, so listing
or running other policies never loads numba.

How long a pass searches:
* `simulate` has no wall clock: the search runs the full annealing schedule (8,800
  evaluations at the paper's defaults) or `evals`, whichever is smaller, so a run is
  deterministic for a seed whatever the machine's speed;
* the daemon binds a wall clock (`bind_budget`): the search also stops when the pass's
  budget (or this policy's own `budget` option, if smaller) runs out, and returns the best
  plan found so far. The clock is read between chunks of evaluations sized to a quarter of
  the time left at the measured rate, ending with single evaluations, so a search ends
  within one evaluation of its deadline.

On partition clusters (`mira`, `bgq:M`, `mira-blocks`) the plan is made on node counts,
each job counted at its partition size: the profile knows how many nodes are free, not which
partitions. The pass reconciles the plan with the machine (`_reconcile`): a job planned to
start now that the allocation rule cannot place is barred from starting now and the plan is
decoded again, so the nodes it was planned on go to the jobs behind it
(`partition_misses` in the policy's stats counts those). docs/policies.md discusses what
this approximates.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Literal

import numpy as np

from ..core.cluster import Cluster, NodePool
from ..core.decisions import Decision, Start
from ..core.job import Job
from ..core.view import View
from .backfill import eligible_queue, releases
from .base import Policy, PolicyError
from .plan_metrics import METRIC_MAKESPAN, METRIC_WAIT2, METRICS

WAIT2, MAKESPAN = METRIC_WAIT2, METRIC_MAKESPAN
SNAPSHOT_STRIDE = 8  # profile kept every 8 positions (measured in bench/plan_sa.py)


def _field(default, text: str):
    return dataclasses.field(default=default, metadata={"help": text})


@dataclasses.dataclass(frozen=True)
class PlanOptions:
    metric: Literal["wait", "wait2", "util"] = _field(
        "wait2", "PLAN 1 mean wait, PLAN 2 mean squared wait, PLAN 3 utilisation (makespan)")
    t0: float = _field(1.0, "initial temperature (costs are relative to the initial plan's)")
    tth: float = _field(0.0001, "stop when the temperature is no longer above this")
    n: int = _field(100, "moves tried at each temperature")
    r: float = _field(0.9, "cooling factor, 0 < r < 1")
    budget: float = _field(0.0, "wall-clock seconds per pass in the daemon; 0 = the pass's "
                                "budget (simulate has no clock and ignores it)")
    evals: int = _field(0, "at most this many evaluations per pass; 0 = the full schedule")
    seed: int = _field(0, "seed of the moves and acceptance draws")


@dataclasses.dataclass(frozen=True)
class SearchOutcome:
    """What the last search did (tests, benchmarks and stats read it)."""

    initial_cost: float
    best_cost: float
    evaluations: int
    finished: bool  # the whole annealing schedule ran (not stopped by the clock)
    overrun_s: float = 0.0  # how far past its deadline a clock-bound search stopped
    eval_s: float = 0.0  # the last measured seconds per evaluation (clock-bound searches)


@dataclasses.dataclass
class Problem:
    """One pass's planning problem in kernel form (jobs in queue order)."""

    jobs: list[Job]
    sizes: np.ndarray  # nodes each job occupies (partition size on Blue Gene/Q)
    walltime: np.ndarray
    submit: np.ndarray
    lower: np.ndarray  # a lower bound of each job's cost term (it cannot start before now)
    times: np.ndarray  # the initial profile
    free: np.ndarray
    base_cost: float  # cost before any waiting job is placed
    origin: float  # the cost no plan can go below (now for PLAN 3, else 0)


class PlanSA(Policy):
    name = "plan-sa"
    summary = "plan-based scheduling by simulated annealing (PLAN 1/2/3, Zheng et al.)"
    Options = PlanOptions
    anytime = True

    def __init__(self, options: PlanOptions, cluster: Cluster):
        super().__init__(options, cluster)
        if not options.t0 > options.tth > 0:
            raise PolicyError("plan-sa: options must satisfy t0 > tth > 0")
        if not 0 < options.r < 1:
            raise PolicyError("plan-sa: option r must be between 0 and 1")
        if options.n < 1 or options.evals < 0 or options.budget < 0:
            raise PolicyError("plan-sa: n must be at least 1; evals and budget not negative")
        self.metric = METRICS[options.metric]
        temps = []
        t = options.t0
        while t > options.tth:  # Algorithm 1, lines 4 and 14
            temps.append(t)
            t *= options.r
        self.temps = np.array(temps, dtype=np.float64)
        self.schedule_evals = len(temps) * options.n
        self._counts = dict.fromkeys(
            ("passes", "searches", "evaluations", "accepted", "improved_passes",
             "aborted_decodes", "converged_decodes", "budget_stops", "partition_misses"), 0)
        self.last: SearchOutcome | None = None
        warm_up()

    def stats(self) -> dict[str, int]:
        return dict(self._counts)

    # -- one pass --------------------------------------------------------------------------

    def schedule(self, view: View) -> list[Decision]:
        self._counts["passes"] += 1
        decisions: list[Decision] = []
        queue = eligible_queue(view, decisions)
        free = view.free_nodes
        if not queue or free == 0:
            return decisions
        problem = self.problem(view, queue)
        if problem is None:
            return decisions
        # When everything fits now, every permutation starts it all now.
        everything_fits = int(problem.sizes.sum()) <= free
        order = np.arange(len(problem.jobs)) if everything_fits else self.search(problem)
        if isinstance(self.cluster, NodePool):
            _, starts = plan_cost(order, problem, self.metric)
            decisions += [Start(problem.jobs[i].id) for i in order if starts[i] == view.now]
            return decisions
        return decisions + self._reconcile(view, problem, order)

    def _reconcile(self, view: View, problem: Problem, order: np.ndarray) -> list[Decision]:
        """Partition machines: start the jobs the plan starts now, in plan order, where the
        allocation rule finds a partition. A job that finds none is barred from starting
        now and the same permutation is decoded again, so the capacity it was planned on
        goes to the jobs behind it; repeated until every job planned now gets a partition
        (each round bars one more job, so it ends)."""
        not_now = np.zeros(len(problem.jobs), dtype=np.bool_)
        while True:
            _, starts = plan_cost(order, problem, self.metric, not_now)
            state = view.free_state()
            decisions: list[Decision] = []
            missed = False
            for index in order:
                if starts[index] != view.now:
                    continue
                job = problem.jobs[index]
                alloc = state.allocate(job.nodes)
                if alloc is None:
                    self._counts["partition_misses"] += 1
                    not_now[index] = missed = True
                    break
                decisions.append(Start(job.id, block=alloc.block))
            if not missed:
                return decisions

    def problem(self, view: View, queue: Sequence[Job]) -> Problem | None:
        """The kernel's arrays; None when no plan can start anything now."""
        now = view.now
        free = view.free_nodes
        times = [now]
        frees = [free]
        for end, _, alloc in releases(view, []):
            end = max(end, now)
            if end > times[-1]:
                times.append(end)
                frees.append(frees[-1])
            frees[-1] += alloc.nodes
        capacity = frees[-1]  # what is left once everything running has ended
        size_of = self.cluster.alloc_size
        jobs = []
        sizes = []
        for job in queue:
            size = size_of(job.nodes) or job.nodes
            if size <= capacity:  # wider jobs wait, unplanned, until failed nodes return
                jobs.append(job)
                sizes.append(size)
        if not jobs or min(sizes) > free:
            return None  # nothing fits now, whatever the order: the plan changes nothing
        submit = np.array([j.submit for j in jobs], dtype=np.float64)
        walltime = np.array([j.walltime for j in jobs], dtype=np.float64)
        lower = np.maximum(now - submit, 0.0)
        if self.metric == WAIT2:
            lower = lower * lower
        elif self.metric == MAKESPAN:
            lower = np.zeros(len(jobs))
        makespan = self.metric == MAKESPAN
        return Problem(jobs, np.array(sizes, dtype=np.int64), walltime, submit, lower,
                       np.array(times, dtype=np.float64), np.array(frees, dtype=np.int64),
                       base_cost=times[-1] if makespan else 0.0,
                       origin=now if makespan else 0.0)

    # -- the annealing ---------------------------------------------------------------------

    def search(self, p: Problem) -> np.ndarray:
        """Algorithm 1 from the queue order; returns P_best."""
        from . import plan_kernel as kernel

        n = len(p.sizes)
        self._counts["searches"] += 1
        perm = np.arange(n, dtype=np.int64)
        rows = (n + SNAPSHOT_STRIDE - 1) // SNAPSHOT_STRIDE
        cap = len(p.times) + n + 1
        snap_t = np.empty((2, rows, cap), dtype=np.float64)
        snap_f = np.empty((2, rows, cap), dtype=np.int64)
        snap_l = np.zeros((2, rows), dtype=np.int64)
        snap_c = np.zeros((2, rows), dtype=np.float64)
        snap_lb = np.zeros((2, rows), dtype=np.float64)
        owner = np.zeros(rows, dtype=np.int64)
        initial = kernel.init_snapshots(
            perm, p.times, p.free, len(p.times), p.sizes, p.walltime, p.submit, p.lower,
            self.metric, p.base_cost, SNAPSHOT_STRIDE, snap_t, snap_f, snap_l, snap_c,
            snap_lb, owner)
        scale = initial - p.origin
        if not scale > 0:
            self.last = SearchOutcome(initial, initial, 0, True)
            return perm  # the queue order already reaches the bound: nothing to improve
        total = self.schedule_evals
        if self.options.evals:
            total = min(total, self.options.evals)
        moves_i, moves_j, log_u = draws(self.options.seed, self._counts["passes"], n, total)
        scalars = np.zeros(kernel.N_SCALARS, dtype=np.float64)
        scalars[kernel.CUR_COST] = scalars[kernel.BEST_COST] = initial
        best = perm.copy()
        work_t = np.empty(cap, dtype=np.float64)
        work_f = np.empty(cap, dtype=np.int64)
        total_lower = float(p.lower.sum())

        def run(begin: int, end: int) -> None:
            kernel.anneal(perm, best, p.times, p.free, len(p.times), p.sizes, p.walltime,
                          p.submit, p.lower, total_lower, self.metric, scale,
                          SNAPSHOT_STRIDE, self.temps, self.options.n, moves_i, moves_j,
                          log_u, begin, end, snap_t, snap_f, snap_l, snap_c, snap_lb, owner,
                          scalars, work_t, work_f)

        finished, overrun, eval_s = True, 0.0, 0.0
        if self.clock_bound:
            finished, overrun, eval_s = self._run_until_deadline(run, total)
            self._counts["budget_stops"] += not finished
        else:
            run(0, total)
        self.last = SearchOutcome(initial, float(scalars[kernel.BEST_COST]),
                                  int(scalars[kernel.EVALS]), finished, overrun, eval_s)
        self._counts["evaluations"] += int(scalars[kernel.EVALS])
        self._counts["accepted"] += int(scalars[kernel.ACCEPTED])
        self._counts["aborted_decodes"] += int(scalars[kernel.ABORTED])
        self._counts["converged_decodes"] += int(scalars[kernel.CONVERGED])
        if scalars[kernel.BEST_COST] < initial:
            self._counts["improved_passes"] += 1
        return best

    def _run_until_deadline(self, run, total: int) -> tuple[bool, float, float]:
        """Evaluations in chunks until the schedule ends or the time is up: (finished,
        seconds past the deadline when stopped, measured seconds per evaluation)."""
        started = time.perf_counter()
        own = self.options.budget

        def left() -> float:
            remaining = self.time_left()
            if own > 0:
                remaining = min(remaining, own - (time.perf_counter() - started))
            return remaining

        done = 0
        per_eval = 0.0
        while done < total:
            remaining = left()
            if remaining <= 0 or self.out_of_time():
                return False, max(-remaining, 0.0), per_eval
            if math.isinf(remaining):
                chunk = total - done  # no deadline (a recovery replaying passes)
            elif per_eval == 0:
                chunk = 1  # a first evaluation measures the rate
            else:
                # A quarter of the time left at the measured rate; single evaluations once
                # that is under four, so the last one started is the only one past the
                # deadline.
                chunk = int(0.25 * remaining / per_eval)
                chunk = chunk if chunk >= 4 else 1
            chunk = max(1, min(chunk, total - done))
            t = time.perf_counter()
            run(done, done + chunk)
            per_eval = max((time.perf_counter() - t) / chunk, 1e-9)
            done += chunk
        return True, 0.0, per_eval


def draws(seed: int, pass_no: int, n: int, total: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The random choices of one search, drawn up front: for each evaluation the position
    to remove, the position to reinsert at (never the same), and ln(u) for the Metropolis
    test. Seeded by (seed, pass number), so a run is reproducible pass by pass."""
    rng = np.random.default_rng([seed, pass_no])
    moves_i = rng.integers(0, n, size=total, dtype=np.int64)
    moves_j = rng.integers(0, n - 1, size=total, dtype=np.int64)
    moves_j += moves_j >= moves_i
    log_u = np.log1p(-rng.random(total))  # ln(1 - U), U in [0, 1): finite, at most 0
    return moves_i, moves_j, log_u


def plan_cost(order: Sequence[int] | np.ndarray, p: Problem, metric: int,
              not_now: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Decode one permutation: (cost, planned start by job index). Jobs flagged in
    `not_now` may not start at the first breakpoint."""
    from . import plan_kernel as kernel

    n = len(p.sizes)
    starts = np.empty(n, dtype=np.float64)
    barred = np.zeros(n, dtype=np.bool_) if not_now is None else not_now
    cost = kernel.decode(np.asarray(order, dtype=np.int64), p.times, p.free, len(p.times),
                         p.sizes, p.walltime, p.submit, metric, p.base_cost, barred, starts)
    return cost, starts


_warm = False


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel before the first pass, so no pass
    pays for compilation inside its budget. The metric is a plain integer argument, so one
    search compiles every function for every metric."""
    global _warm
    if _warm:
        return
    _warm = True
    policy = PlanSA(PlanOptions(tth=0.5, n=2), NodePool(2))
    zeros = np.zeros(3)
    toy = Problem([], np.array([1, 2, 1], dtype=np.int64), np.array([5.0, 5.0, 20.0]), zeros,
                  zeros, np.array([0.0, 10.0]), np.array([1, 2], dtype=np.int64), 0.0, 0.0)
    policy.search(toy)
    plan_cost([0, 1, 2], toy, METRICS["wait"])
