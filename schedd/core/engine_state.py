"""The engine's state and the execution model of one job: the first link of the engine's
class chain (_EngineState -> _JobLifecycle -> _Preemption -> _Elastic -> Engine, one module
each, so that each reads in one sitting; mypyc compiles single inheritance across them).

Execution model of one job (docs/engine.md has the worked formulas):
* A job's work is measured in compute seconds at its reference size (requested nodes; the
  maximum for malleable jobs, which compute at speed n / max on n nodes — linear speedup).
* It runs min(runtime, walltime) of work; setup, restart reads and checkpoint writes are
  added on top (they are the simulation's overheads, not the user's estimate).
* A segment is one stretch of holding nodes: setup, restart read, then compute interleaved
  with periodic checkpoints every `interval` compute seconds since the last checkpoint.
  Progress at any instant is computed in closed form, so no per-checkpoint events exist.

Here: every field of the engine, virtual time and the busy-node integral, the queue and
running-end helpers, the segment arithmetic, and the queries policies make through the view.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterator
from typing import Any, Final

from .cluster import Cluster
from .events import Ev, EventQueue
from .exec_state import Command, Ecc, EngineOptions, Reservation, _Exec
from .job import Job, JobSpec, JobState, Notice
from .lifecycle import transition
from .recorder import RunRecorder
from .results import ResultTable
from .view import View

# Plain names for the states (Enum attribute access is slow on the hot path). Final:
# compiled code keeps each in a C static instead of looking it up in a module's globals.
QUEUED: Final = JobState.QUEUED
RUNNING: Final = JobState.RUNNING
CHECKPOINTING: Final = JobState.CHECKPOINTING
PREEMPTED: Final = JobState.PREEMPTED
COMPLETED: Final = JobState.COMPLETED
KILLED: Final = JobState.KILLED
CANCELLED: Final = JobState.CANCELLED
FAILED: Final = JobState.FAILED
EV_FINISH: Final = Ev.FINISH
EV_CKPT_DONE: Final = Ev.CKPT_DONE
EV_REPAIR: Final = Ev.REPAIR
EV_FAILURE: Final = Ev.FAILURE
EV_ECC: Final = Ev.ECC
EV_NOTICE: Final = Ev.NOTICE
EV_SUBMIT: Final = Ev.SUBMIT
EV_CANCEL: Final = Ev.CANCEL
EV_WAKE: Final = Ev.WAKE


class _EngineState:
    def __init__(
        self,
        cluster: Cluster,
        policy: Any = None,
        *,
        seed: int = 0,
        options: EngineOptions | None = None,
    ):
        self.cluster = cluster
        self.policy = policy
        self.options = options or EngineOptions()
        # Table III of the LOS paper: only schedulers with an ECC processor apply commands.
        self._eccs_on = bool(getattr(policy, "processes_eccs", True))
        self.rng = random.Random(seed)
        self.now = 0.0
        self.state = cluster.new_state()
        self.events = EventQueue()
        self.jobs: dict[int, Job] = {}  # live jobs
        self.finished: dict[int, Job] = {}
        self._x: dict[int, _Exec] = {}
        self.queue: list[Job] = []  # waiting jobs in (submit, id) order
        self.running: dict[int, Job] = {}  # jobs holding nodes, in start order
        self._by_end: list[tuple[float, int]] = []  # (predicted_end, id) of holders
        self.notices: dict[int, Notice] = {}
        self.reservations: dict[str, Reservation] = {}
        self.results = ResultTable.empty()
        self.outbox: list[Command] | None = None  # the daemon sets a list to receive commands
        # The daemon sets a list to receive every job transition: (time, job id, state,
        # cause, nodes held). Events and the daemon's job table are built from it.
        self.transitions: list[tuple[float, int, JobState, str, int]] | None = None
        # Set by a driver that writes segments.csv / timeseries.csv (schedd.run_files).
        self.recorder: RunRecorder | None = None
        self.stats = {"passes": 0, "eccs_applied": 0, "eccs_rejected": 0, "failures": 0,
                      "failures_ignored": 0, "repairs": 0, "decisions": 0,
                      "checkpoint_timeouts": 0}
        self.ecc_log: list[tuple[Ecc, str]] = []  # (command, outcome)
        self._source: Iterator[JobSpec] | None = None
        self._pending_source: JobSpec | None = None
        self._pending_ecc: Ecc | None = None
        self._ecc_source: Iterator[Ecc] | None = None
        self._down_units: dict[int, float] = {}  # unit (or pool repair key) -> since
        self._repair_seq = 0
        self._busy_integral = 0.0  # node-seconds held, integrated over time (for validate)
        self._last_t = 0.0
        self._seen_ids: set[int] = set()
        self._cancel_on_arrival: set[int] = set()
        self.n_requested_start = 0  # waiting jobs with a requested start (dedicated)
        self.n_checkpointing = 0
        self._view = View(self)
        # The failure process starts with the first job (_arrive), not at t = 0: a trace
        # in Unix time would otherwise draw decades of failures before its first job.
        self._failures_armed = False

    def _advance_to(self, t: float) -> None:
        if t < self.now:
            raise RuntimeError(f"time moved backwards: {t} < {self.now}")
        used = self.cluster.total_nodes - self.state.free_nodes
        if self._down_units:
            used -= self._down_nodes()
        if self.reservations:
            used -= self._reserved_idle_nodes()
        self._busy_integral += used * (t - self._last_t)
        self.now = self._last_t = t

    def _down_nodes(self) -> int:
        return len(self._down_units) * self._unit_nodes()

    def _unit_nodes(self) -> int:
        """Nodes of one failure unit (a node on a pool, a midplane on Blue Gene/Q)."""
        return self.cluster.total_nodes // self.cluster.failure_units

    def _reserved_idle_nodes(self) -> int:
        return sum(r.sub.free_nodes for r in self.reservations.values())

    def _enqueue(self, job: Job) -> None:
        queue = self.queue
        # New submissions usually go last; requeued jobs keep their submit time and sort in.
        if not queue or (queue[-1].submit, queue[-1].id) < (job.submit, job.id):
            queue.append(job)
        else:
            bisect.insort(queue, job, key=_queue_key)
        if job.requested_start >= 0:
            self.n_requested_start += 1

    def _dequeue(self, job: Job) -> None:
        i = 0 if self.queue and self.queue[0] is job else bisect.bisect_left(
            self.queue, _queue_key(job), key=_queue_key)
        if i >= len(self.queue) or self.queue[i] is not job:
            raise RuntimeError(f"job {job.id} is not in the queue")
        del self.queue[i]
        if job.requested_start >= 0:
            self.n_requested_start -= 1

    def _move(self, job: Job, to: JobState, cause: str) -> None:
        transition(job, to, self.now, cause)
        if self.transitions is not None:
            self.transitions.append((self.now, job.id, to, cause, job.alloc_nodes))
        if self.recorder is not None:
            self.recorder.moved(self.now, job, to, cause)

    def _add_end(self, job: Job) -> None:
        bisect.insort(self._by_end, (job.predicted_end, job.id))

    def _remove_end(self, job: Job) -> None:
        key = (job.predicted_end, job.id)
        i = bisect.bisect_left(self._by_end, key)
        if i >= len(self._by_end) or self._by_end[i] != key:
            raise RuntimeError(f"job {job.id} is not among the running jobs")
        del self._by_end[i]

    def _progress(self, x: _Exec, t: float) -> tuple[float, int, float, float, float]:
        """(work, checkpoints done, last checkpoint work, compute wall s, checkpoint wall s)
        of the current segment at time t."""
        if t <= x.c0:
            return x.work0, 0, x.last_ckpt_work, 0.0, 0.0
        e = t - x.c0
        speed = x.speed
        interval = x.interval
        if interval is None:
            work = min(x.work0 + e * speed, max(x.target, x.work0))
            return work, 0, x.last_ckpt_work, (work - x.work0) / speed, 0.0
        cost = x.ckpt_cost
        base = x.last_ckpt_work
        k = _checkpoints_before(x.target - base, interval)
        virtual = e + (x.work0 - base) / speed  # as if compute since `base` were in this segment
        cycle = interval / speed + cost
        j = int(virtual // cycle)
        if j >= k:
            j = k
            work = min(base + k * interval + (virtual - k * cycle) * speed, x.target)
            ckpt_wall = k * cost
        else:
            r = virtual - j * cycle
            if r <= interval / speed:
                work, partial = base + j * interval + r * speed, 0.0
            else:
                work, partial = base + (j + 1) * interval, r - interval / speed
            ckpt_wall = j * cost + partial
        last = base + j * interval if j > 0 else x.last_ckpt_work
        return work, j, last, (work - x.work0) / speed, ckpt_wall

    def _segment_end(self, x: _Exec, target: float) -> float:
        """When the current segment reaches `target` work (no interruption)."""
        base = x.last_ckpt_work
        if target <= x.work0:
            return max(x.c0, self.now)
        speed = x.speed
        ckpts = _checkpoints_before(target - base, x.interval) if x.interval else 0
        return x.c0 - (x.work0 - base) / speed + (target - base) / speed + ckpts * x.ckpt_cost

    def _begin_segment(self, x: _Exec, setup: float, restart: float) -> None:
        job = x.job
        now = self.now
        x.seg += 1
        x.seg_start = now
        x.seg_setup = setup
        x.seg_restart = restart
        x.c0 = now + setup + restart
        spec = x.spec
        # Linear speedup on the nodes the job uses, not the partition around them.
        x.speed = x.used_nodes / spec.nodes if spec.malleable else 1.0
        policy = self.options.checkpoint
        x.owner_system = policy.owner_is_system
        periodic = policy.periodic
        if not spec.checkpointable or periodic == "none" or (
                periodic == "trace" and spec.ckpt_interval <= 0):
            x.interval = None  # the common case: skip the cost model
        else:
            x.ckpt_cost = policy.cost(self.cluster.checkpoint_model, job.alloc_nodes,
                                      spec.ckpt_gb_per_node)
            x.interval = policy.interval(job.walltime, x.ckpt_cost, spec.ckpt_interval)
        period = self.options.walltime_check_s
        if period > 0.0 and x.work_total > x.target and x.interval is None and x.speed == 1.0:
            # Killed at the first walltime check at or after the walltime, not at it.
            phase = self.options.walltime_check_phase_s
            reached = x.c0 + (x.target - x.work0) + self.options.walltime_grace_s
            check = phase + math.ceil((reached - phase) / period) * period
            x.target = min(x.work_total, x.work0 + (check - x.c0))
        self._schedule_finish(x)

    def _schedule_finish(self, x: _Exec) -> None:
        """(Re)compute the segment's end and the policy-visible predicted end."""
        job = x.job
        end = self._segment_end(x, x.target)
        x.seg += 1  # invalidates a FINISH event already queued
        self.events.push(max(end, self.now), EV_FINISH, (job.id, x.seg))
        # Policies see the end the walltime implies, never the actual runtime.
        predicted = max(self._segment_end(x, max(job.walltime + x.wall_done, x.work0)),
                        self.now)
        if job.state is RUNNING and job.predicted_end >= 0 and job.id in self.running:
            self._remove_end(job)
            job.predicted_end = predicted
            self._add_end(job)
        else:
            job.predicted_end = predicted

    def _close_segment(self, x: _Exec, t: float) -> float:
        """Account the segment up to t; returns the work reached."""
        work, j, last, compute_wall, ckpt_wall = self._progress(x, t)
        n = x.job.alloc_nodes
        held = t - x.seg_start
        setup = min(x.seg_setup, held)
        restart = min(x.seg_restart, max(0.0, held - x.seg_setup))
        x.busy_ns += n * held
        x.executed += held
        x.setup_ns += n * setup
        if x.resumed:
            x.resume_setup_ns += n * setup
        x.restart_ns += n * restart
        x.t_pre += restart
        x.ckpt_ns += n * ckpt_wall
        x.t_ckpt += ckpt_wall
        x.checkpoints += j
        x.since_ckpt_wall = _wall_since_checkpoint(x, work, j, last, compute_wall)
        if j > 0:
            x.resume_read = True
            x.since_ckpt_ns = n * x.since_ckpt_wall
        else:
            x.since_ckpt_ns += n * compute_wall
        x.since_zero_wall += compute_wall
        x.since_zero_ns += n * compute_wall
        x.work0 = work
        x.last_ckpt_work = last
        return work

    def _resegment(self, x: _Exec) -> float:
        """Account the running segment up to now and continue in a new one that keeps any
        setup or restart read still to do (used when the size or the target changes, so
        the past is never recomputed). A periodic checkpoint cut in the middle is wasted
        and taken again from its start. Returns the work reached."""
        now = self.now
        setup_end = x.seg_start + x.seg_setup
        setup_left = max(0.0, setup_end - now)
        restart_left = max(0.0, x.c0 - max(now, setup_end))
        work = self._close_segment(x, now)
        x.seg_start = now
        x.seg_setup = setup_left
        x.seg_restart = restart_left
        x.c0 = now + setup_left + restart_left
        return work

    def _work_remains(self) -> bool:
        return bool(self.jobs) or self._pending_source is not None

    def _arm_failures(self) -> None:
        """(Re)start the failure process when work arrives after it stopped."""
        if self.options.mtbf_s > 0 and not self._failures_armed:
            self._failures_armed = True
            self.events.push(self.now + self.rng.expovariate(1.0 / self.options.mtbf_s),
                             EV_FAILURE, None)

    def _emit(self, kind: str, job_id: int, deadline: float = -1.0) -> None:
        if self.outbox is not None:
            self.outbox.append(Command(kind, job_id, self.now, deadline))

    def running_by_end(self) -> list[tuple[float, int]]:
        """(predicted end, job id) of jobs holding nodes, ascending (the view's source)."""
        return self._by_end

    def lost_if_preempted(self, job_id: int) -> float:
        """Compute seconds a running job would lose if stopped now and resumed from its
        last checkpoint (all its compute when it has none): `_close_segment`'s arithmetic
        without changing anything."""
        x = self._x[job_id]
        if x.job.state is not RUNNING:
            return 0.0
        work, j, last, compute_wall, _ = self._progress(x, self.now)
        return _wall_since_checkpoint(x, work, j, last, compute_wall)

    def checkpoint_done_by(self, job_id: int, t: float) -> float:
        """The latest time in (now, t] at which a periodic checkpoint of the running job
        completes, or -1 if none does."""
        x = self._x[job_id]
        interval = x.interval
        if x.job.state is not RUNNING or interval is None or t <= self.now:
            return -1.0
        _, j, _, _, _ = self._progress(x, self.now)
        k = _checkpoints_before(x.target - x.last_ckpt_work, interval)
        cycle = interval / x.speed + x.ckpt_cost
        origin = x.c0 - (x.work0 - x.last_ckpt_work) / x.speed  # virtual time 0, as in _progress
        i = min(k, math.floor((t - origin) / cycle))
        if i <= j:
            return -1.0
        done = origin + i * cycle
        return done if done > self.now else -1.0

    def busy_integral(self) -> float:
        return self._busy_integral

    def exec_record(self, job_id: int) -> _Exec:
        """The private execution record (tests and validate() only)."""
        return self._x[job_id]


def _queue_key(job: Job) -> tuple[float, int]:
    return (job.submit, job.id)


def _wall_since_checkpoint(x: _Exec, work: float, j: int, last: float,
                           compute_wall: float) -> float:
    """Compute seconds since the last checkpoint at a point `_progress` returned: from the
    segment's own last checkpoint if it took one, else what came before plus this segment."""
    return (work - last) / x.speed if j > 0 else x.since_ckpt_wall + compute_wall


def _checkpoints_before(work: float, interval: float | None) -> int:
    """Periodic checkpoints strictly before the end of `work` compute seconds."""
    if not interval or work <= 0:
        return 0
    return max(math.ceil(work / interval) - 1, 0)
