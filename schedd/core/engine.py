"""The scheduling engine: a pure, synchronous, deterministic state machine.

Stimuli (submissions, elastic control commands, notices, checkpoint-done, cancellations)
enter as events; virtual time moves only from event to event. After all events of one
instant are handled, the policy runs once on a read-only view and returns decisions, which
the engine validates and applies. Drivers: `schedd.sim` (as fast as possible) and the daemon.

Execution model of one job (docs/engine.md has the worked formulas):
* A job's work is measured in compute seconds at its reference size (requested nodes; the
  maximum for malleable jobs, which compute at speed n / max on n nodes — linear speedup).
* It runs min(runtime, walltime) of work; setup, restart reads and checkpoint writes are
  added on top (they are the simulation's overheads, not the user's estimate).
* A segment is one stretch of holding nodes: setup, restart read, then compute interleaved
  with periodic checkpoints every `interval` compute seconds since the last checkpoint.
  Progress at any instant is computed in closed form, so no per-checkpoint events exist.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable, Iterator
from typing import Any

from .cluster import Allocation, Cluster, ClusterError, PoolState
from .decisions import (
    Decision,
    DecisionError,
    Preempt,
    PreemptMode,
    Release,
    Reserve,
    Resize,
    Start,
    WakeAt,
)
from .events import Ev, EventQueue
from .exec_state import EXEC_FIELDS, Command, Ecc, EngineOptions, Reservation, _Exec
from .job import Job, JobClass, JobSpec, JobState, Notice
from .lifecycle import transition
from .recorder import DOWN, RESERVED, RunRecorder
from .results import CLASS_CODES, STATE_CODES, ResultTable
from .view import View

__all__ = ["ECC_KINDS", "EXEC_FIELDS", "Command", "Ecc", "Engine", "EngineOptions",
           "Reservation"]

ECC_KINDS = ("ET", "RT", "EP", "RP")
# Plain names for the states (Enum attribute access is slow on the hot path).
QUEUED, RUNNING, CHECKPOINTING, PREEMPTED = (
    JobState.QUEUED, JobState.RUNNING, JobState.CHECKPOINTING, JobState.PREEMPTED)
COMPLETED, KILLED, CANCELLED, FAILED = (
    JobState.COMPLETED, JobState.KILLED, JobState.CANCELLED, JobState.FAILED)
(EV_FINISH, EV_CKPT_DONE, EV_REPAIR, EV_FAILURE, EV_ECC, EV_NOTICE, EV_SUBMIT, EV_CANCEL,
 EV_WAKE) = (Ev.FINISH, Ev.CKPT_DONE, Ev.REPAIR, Ev.FAILURE, Ev.ECC, Ev.NOTICE, Ev.SUBMIT,
            Ev.CANCEL, Ev.WAKE)
_CLASS_INDEX = {c: CLASS_CODES.index(c.value) for c in JobClass}
_STATE_INDEX = {s: STATE_CODES.index(s.value) for s in (COMPLETED, KILLED, CANCELLED, FAILED)}


class Engine:
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
        self._failures_armed = self.options.mtbf_s > 0
        if self._failures_armed:
            self.events.push(self.rng.expovariate(1.0 / self.options.mtbf_s), EV_FAILURE, None)

    # ------------------------------------------------------------------ stimuli
    def feed(self, specs: Iterable[JobSpec]) -> None:
        """Submit jobs lazily from an iterator sorted by submit time (a trace)."""
        self._source = iter(specs)
        self._pull_source()

    def feed_eccs(self, eccs: Iterable[Ecc]) -> None:
        self._ecc_source = iter(eccs)
        self._pull_ecc()

    def submit(self, spec: JobSpec) -> None:
        """Submit one job at max(spec.submit, now)."""
        self._check_spec(spec)
        self.events.push(max(spec.submit, self.now), EV_SUBMIT, spec)

    def notice(self, job_id: int, notice: Notice) -> None:
        self.events.push(max(notice.time, self.now), EV_NOTICE, (job_id, notice))

    def elastic(self, ecc: Ecc) -> None:
        self.events.push(max(ecc.time, self.now), EV_ECC, ecc)

    def cancel(self, job_id: int) -> None:
        self.events.push(self.now, EV_CANCEL, job_id)

    def checkpoint_done(self, job_id: int) -> None:
        """A job agent reports its preemption checkpoint finished (daemon path)."""
        job = self.jobs.get(job_id)
        if job is None or job.state is not CHECKPOINTING:
            raise DecisionError(f"job {job_id} was not asked to checkpoint")
        self.events.push(self.now, EV_CKPT_DONE, (job_id, self._x[job_id].seg, True))

    def wake_at(self, time: float) -> None:
        self.events.push(max(time, self.now), EV_WAKE, None)

    # ------------------------------------------------------------------ driving
    def next_time(self) -> float | None:
        return self.events.peek_time()

    def step(self) -> bool:
        """Handle every event of the next instant, then one scheduling pass."""
        t = self.events.peek_time()
        if t is None:
            return False
        self._advance_to(t)
        heap = self.events._heap
        pop = self.events.pop
        handle = self._handle
        for _ in range(10_000):
            while heap and heap[0][0] == t:
                _, kind, _, payload = pop()
                handle(kind, payload)
            self._pass()
            if not heap or heap[0][0] != t:
                return True
        raise RuntimeError(f"more than 10,000 scheduling rounds at t={t:g}: a policy loops")

    def run(self, until: float | None = None) -> None:
        while True:
            t = self.events.peek_time()
            if t is None or (until is not None and t > until):
                break
            self.step()
        if until is not None and until > self.now:
            self._advance_to(until)

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

    # ------------------------------------------------------------------ events
    def _handle(self, kind: int, payload: Any) -> None:
        if kind == EV_FINISH:
            job_id, seg = payload
            x = self._x.get(job_id)
            if x is not None and x.seg == seg and x.job.state is RUNNING:
                self._finish(x)
        elif kind == EV_SUBMIT:
            self._arrive(payload)
            if self._source is not None and payload is self._pending_source:
                self._pull_source()
        elif kind == EV_CKPT_DONE:
            job_id, seg, written = payload
            x = self._x.get(job_id)
            if x is not None and x.seg == seg and x.job.state is CHECKPOINTING:
                if written:
                    self._checkpoint_done(x)
                else:
                    self._checkpoint_timeout(x)
        elif kind == EV_ECC:
            self._apply_ecc(payload)
            if self._ecc_source is not None and payload is self._pending_ecc:
                self._pull_ecc()
        elif kind == EV_NOTICE:
            job_id, notice = payload
            self.notices[job_id] = notice
        elif kind == EV_CANCEL:
            self._cancel(payload)
        elif kind == EV_FAILURE:
            self._failure()
        elif kind == EV_REPAIR:
            self._repair(payload)
        # WAKE needs no handling: the pass after this instant is the point.

    def _pull_source(self) -> None:
        assert self._source is not None
        spec = next(self._source, None)
        self._pending_source = spec
        if spec is not None:
            self._check_spec(spec)
            self.events.push(spec.submit, EV_SUBMIT, spec)

    def _pull_ecc(self) -> None:
        assert self._ecc_source is not None
        ecc = next(self._ecc_source, None)
        self._pending_ecc = ecc
        if ecc is not None:
            self.events.push(max(ecc.time, self.now), EV_ECC, ecc)

    def _check_spec(self, spec: JobSpec) -> None:
        if self.cluster.alloc_size(spec.nodes) is None:
            raise DecisionError(
                f"job {spec.id} asks for {spec.nodes} nodes; {self.cluster.name} "
                f"has {self.cluster.total_nodes}"
            )
        if spec.runtime <= 0 or spec.walltime <= 0:
            raise DecisionError(f"job {spec.id} needs a positive runtime and walltime")
        if spec.malleable and not 1 <= spec.min_nodes <= spec.nodes:
            raise DecisionError(f"job {spec.id}: malleable min {spec.min_nodes} > max")

    def _arrive(self, spec: JobSpec) -> None:
        if spec.id in self._seen_ids:
            raise DecisionError(f"job id {spec.id} was submitted twice")
        self._seen_ids.add(spec.id)
        if not self._failures_armed and self.options.mtbf_s > 0:
            self._arm_failures()
        job = Job(
            spec.id, spec.submit, spec.nodes, spec.walltime, spec.user, spec.project,
            spec.job_class, spec.min_nodes, spec.checkpointable, spec.requested_start,
            spec.queue,
        )
        job.history.append((self.now, QUEUED, "submit"))
        if self.transitions is not None:
            self.transitions.append((self.now, job.id, QUEUED, "submit", 0))
        if self.recorder is not None:
            self.recorder.moved(self.now, job, QUEUED, "submit")
        self.jobs[spec.id] = job
        self._x[spec.id] = _Exec(job, spec)
        self._enqueue(job)
        if self._cancel_on_arrival and spec.id in self._cancel_on_arrival:
            self._cancel_on_arrival.discard(spec.id)
            self._cancel(spec.id)

    # ------------------------------------------------------------------ queue helpers
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

    # ------------------------------------------------------------------ segments
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

    # ------------------------------------------------------------------ lifecycle
    def _start(self, x: _Exec, alloc: Allocation, nodes: int, res_key: str | None,
               cause: str) -> None:
        job = x.job
        x.used_nodes = nodes
        if self.queue and self.queue[0] is not job:  # an earlier-submitted job still waits
            x.backfilled = True
        self._dequeue(job)
        job.alloc_nodes = alloc.nodes
        job.allocation = alloc
        self._move(job, RUNNING, cause)
        x.res_key = res_key
        x.resumed = job.first_start >= 0
        if not x.resumed:
            job.first_start = self.now
            x.first_alloc = alloc.nodes
        else:
            job.restarts += 1
        job.last_start = self.now
        # Resuming from a checkpoint file costs a read (eqs. 7, 12, 17); setup always.
        restart = (self._restart_cost(x) if x.resume_read and x.work0 > 0
                   and self.options.checkpoint.restart_read else 0.0)
        job.predicted_end = -1.0
        self.running[job.id] = job
        self._begin_segment(x, x.spec.setup, restart)
        self._add_end(job)
        self._emit("start", job.id)

    def _restart_cost(self, x: _Exec) -> float:
        return self.options.checkpoint.cost(
            self.cluster.checkpoint_model, x.job.alloc_nodes, x.spec.ckpt_gb_per_node
        )

    def _release_nodes(self, x: _Exec) -> None:
        job = x.job
        alloc = job.allocation
        assert isinstance(alloc, Allocation)
        res = self.reservations.get(x.res_key) if x.res_key is not None else None
        (res.sub if res is not None else self.state).release(alloc)
        if job.state is RUNNING:
            self._remove_end(job)
        else:
            self.n_checkpointing -= 1
        del self.running[job.id]
        job.allocation = None
        job.alloc_nodes = 0
        x.res_key = None

    def _finish(self, x: _Exec) -> None:
        job = x.job
        self._close_segment(x, self.now)
        self._release_nodes(x)
        killed = x.work_total > x.target
        x.useful_ns = x.since_zero_ns
        self._move(job, KILLED if killed else COMPLETED, "walltime" if killed else "finish")
        self._emit("stop", job.id)
        self._retire(x)

    def _interrupt(self, x: _Exec, mode: PreemptMode, cause: str) -> None:
        """Stop a running job now and requeue it per `mode` (not JIT/WARNING)."""
        job = x.job
        self._close_segment(x, self.now)
        self._lose_work(x, mode)
        self._release_nodes(x)
        job.preemptions += cause == "preempt"
        self._requeue_walltime(x)
        self._move(job, PREEMPTED, cause)
        self._emit("stop", job.id)
        self._enqueue(job)

    def _requeue_walltime(self, x: _Exec) -> None:
        """With `requeue_remaining`, a preempted job waits with the walltime it has left:
        its request less the work it keeps (as the real-time authors' kill_job_wOverhead
        requeues it), which policies see in its queue order, estimated slowdown and
        category. `wall_done` keeps the part taken off, so the work bound stays the whole
        request. At least a second is left (a walltime must stay positive)."""
        if not self.options.requeue_remaining:
            return
        job = x.job
        whole = job.walltime + x.wall_done
        job.walltime = min(whole, max(whole - x.work0, 1.0))
        x.wall_done = whole - job.walltime

    def _lose_work(self, x: _Exec, mode: PreemptMode) -> None:
        if mode is PreemptMode.RESTART:
            x.lost_ns += x.since_zero_ns
            x.t_pre += x.since_zero_wall
            x.since_zero_ns = x.since_zero_wall = 0.0
            x.since_ckpt_ns = x.since_ckpt_wall = 0.0
            x.work0 = x.last_ckpt_work = 0.0
            x.resume_read = False
        else:  # back to the last completed checkpoint
            x.lost_ns += x.since_ckpt_ns
            x.t_pre += x.since_ckpt_wall
            x.since_zero_ns -= x.since_ckpt_ns
            x.since_zero_wall -= x.since_ckpt_wall
            x.since_ckpt_ns = x.since_ckpt_wall = 0.0
            x.work0 = x.last_ckpt_work

    def _begin_checkpoint(self, x: _Exec, mode: PreemptMode) -> None:
        job = x.job
        self._close_segment(x, self.now)
        # JIT: write time = read time (eqs. 16-17); a warning lasts its fixed length.
        jit = mode is PreemptMode.JIT
        duration = self._restart_cost(x) if jit else self.options.warning_s
        self._remove_end(job)
        self._move(job, CHECKPOINTING, f"preempt:{mode.value}")
        self.n_checkpointing += 1
        job.preemptions += 1
        x.ckpt_start = self.now
        x.ckpt_end = self.now + duration
        x.ckpt_mode = mode
        job.predicted_end = x.ckpt_end
        x.seg += 1
        self._emit("checkpoint" if mode is PreemptMode.JIT else "warning", job.id, x.ckpt_end)
        if self.options.auto_checkpoint_done or not jit:  # a warning is only a wait
            self.events.push(x.ckpt_end, EV_CKPT_DONE, (job.id, x.seg, True))
        elif self.options.checkpoint_timeout_s > 0:
            timeout = x.ckpt_end + self.options.checkpoint_timeout_s
            self.events.push(timeout, EV_CKPT_DONE, (job.id, x.seg, False))

    def _checkpoint_timeout(self, x: _Exec) -> None:
        """The agent never reported the JIT checkpoint: kill the job, requeue it from its
        last completed checkpoint; the time spent waiting is wasted checkpoint time."""
        job = x.job
        spent = self.now - x.ckpt_start
        x.busy_ns += job.alloc_nodes * spent
        x.executed += spent
        x.ckpt_ns += job.alloc_nodes * spent
        x.preempt_ckpt_ns += job.alloc_nodes * spent
        x.t_ckpt += spent
        self._lose_work(x, PreemptMode.LAST_CHECKPOINT)
        self._release_nodes(x)
        self.stats["checkpoint_timeouts"] += 1
        self._requeue_walltime(x)
        self._move(job, PREEMPTED, "checkpoint-timeout")
        self._emit("stop", job.id)
        self._enqueue(job)

    def _checkpoint_done(self, x: _Exec) -> None:
        job = x.job
        n = job.alloc_nodes
        spent = self.now - x.ckpt_start
        x.busy_ns += n * spent
        x.executed += spent
        x.ckpt_ns += n * spent
        x.preempt_ckpt_ns += n * spent
        x.t_ckpt += spent
        x.checkpoints += 1
        x.last_ckpt_work = x.work0
        x.since_ckpt_ns = x.since_ckpt_wall = 0.0
        x.resume_read = x.ckpt_mode is PreemptMode.JIT  # a warning leaves no file to read
        self._release_nodes(x)
        self._requeue_walltime(x)
        self._move(job, PREEMPTED, "checkpoint-done")
        self._emit("stop", job.id)
        self._enqueue(job)

    def _retire(self, x: _Exec) -> None:
        job = x.job
        job.end_time = self.now
        del self.jobs[job.id]
        del self._x[job.id]
        self.notices.pop(job.id, None)
        if self.options.keep_finished:
            self.finished[job.id] = job
        spec = x.spec
        started = job.first_start >= 0
        delay = 0.0
        if started and job.job_class is JobClass.DEDICATED and job.requested_start >= 0:
            delay = max(0.0, job.first_start - job.requested_start)
        # Values in COLUMNS order (schedd/core/results.py).
        self.results.append((
            job.id, job.submit, job.first_start, self.now,
            (job.first_start if started else self.now) - job.submit,
            x.executed, spec.nodes, x.first_alloc, job.walltime + x.wall_done, x.orig_walltime,
            job.user, job.project, job.queue,
            _CLASS_INDEX[job.job_class], _STATE_INDEX[job.state],
            job.preemptions, x.failures, x.checkpoints,
            x.busy_ns, x.useful_ns, x.lost_ns, x.ckpt_ns, x.restart_ns, x.setup_ns,
            x.t_ckpt, x.t_pre, int(x.owner_system), job.requested_start, delay,
            int(x.backfilled),
            x.lost_ns + x.restart_ns + x.resume_setup_ns + x.preempt_ckpt_ns,
        ))

    def _cancel(self, job_id: int) -> None:
        x = self._x.get(job_id)
        if x is None:
            if job_id not in self._seen_ids:
                self._cancel_on_arrival.add(job_id)  # submitted for later: cancel then
            return  # already finished: cancelling is idempotent
        job = x.job
        if job.state.waiting:
            self._dequeue(job)
        elif job.state is RUNNING:
            self._close_segment(x, self.now)
            x.useful_ns = 0.0
            self._release_nodes(x)
        elif job.state is CHECKPOINTING:
            spent = self.now - x.ckpt_start
            x.busy_ns += job.alloc_nodes * spent
            x.ckpt_ns += job.alloc_nodes * spent  # the unfinished checkpoint is wasted
            x.preempt_ckpt_ns += job.alloc_nodes * spent
            x.executed += spent
            self._release_nodes(x)
        # Work of a cancelled job is not useful: it produced no result.
        x.lost_ns += x.since_zero_ns
        x.useful_ns = 0.0
        self._move(job, CANCELLED, "cancel")
        self._retire(x)

    # ------------------------------------------------------------------ elastic control
    def _apply_ecc(self, ecc: Ecc) -> None:
        outcome = self._ecc_outcome(ecc)
        self.ecc_log.append((ecc, outcome))
        self.stats["eccs_applied" if outcome == "applied" else "eccs_rejected"] += 1

    def _ecc_outcome(self, ecc: Ecc) -> str:
        x = self._x.get(ecc.job_id)
        if x is None:
            return "rejected: job not live"
        if ecc.kind not in ECC_KINDS or ecc.amount <= 0:
            return f"rejected: bad command {ecc.kind} {ecc.amount}"
        if not self._eccs_on:
            return f"rejected: policy {self.policy.name} has no ECC processor"
        limit = self.options.ecc_max_per_job
        if limit and x.ecc_count >= limit:
            return f"rejected: job already had {limit} commands"
        job = x.job
        if job.state is CHECKPOINTING:
            return "rejected: job is checkpointing"
        if ecc.kind in ("ET", "RT"):
            sign = 1.0 if ecc.kind == "ET" else -1.0
            walltime = job.walltime + sign * ecc.amount
            if walltime <= 0:
                return "rejected: walltime would not stay positive"
            job.walltime = walltime
            if self.options.ecc_changes_runtime:
                x.work_total = max(x.work_total + sign * ecc.amount, 1e-9)
            if job.state is RUNNING:
                work = self._resegment(x)
                x.target = max(min(x.work_total, walltime + x.wall_done), work)
                self._schedule_finish(x)
            else:
                x.target = min(x.work_total, walltime + x.wall_done)
        else:
            delta = int(ecc.amount) if ecc.kind == "EP" else -int(ecc.amount)
            nodes = job.nodes + delta
            if self.cluster.alloc_size(nodes) is None:
                return f"rejected: {nodes} nodes do not fit {self.cluster.name}"
            if job.state is RUNNING:
                # A rigid job grows or shrinks by the amount; a malleable job only shrinks
                # if it now runs above its new maximum (growing is the policy's choice).
                size = min(x.used_nodes, nodes) if job.malleable else x.used_nodes + delta
                try:
                    if size != x.used_nodes:
                        self._resize_running(x, size)
                except DecisionError as err:
                    return f"rejected: {err}"
            job.nodes = nodes
            if job.min_nodes > nodes:
                job.min_nodes = nodes
        x.ecc_count += 1
        return "applied"

    # ------------------------------------------------------------------ resize
    def _resize_running(self, x: _Exec, nodes: int) -> None:
        job = x.job
        old = job.allocation
        assert isinstance(old, Allocation)
        if old.block >= 0:
            raise DecisionError(f"{self.cluster.name} cannot resize a running partition")
        if nodes < 1:
            raise DecisionError(f"job {job.id} cannot shrink below 1 node")
        res = self.reservations.get(x.res_key) if x.res_key is not None else None
        pool = res.sub if res is not None else self.state
        if nodes > old.nodes and not pool.fits(nodes - old.nodes):
            raise DecisionError(
                f"job {job.id} cannot grow by {nodes - old.nodes} nodes: "
                f"{pool.free_nodes} are free"
            )
        pool.release(old)
        new = pool.allocate(nodes)
        assert new is not None
        # A resize adds no overhead: the segment so far is accounted at the old size and
        # the rest continues at the new one.
        self._resegment(x)
        job.allocation = new
        job.alloc_nodes = nodes
        x.used_nodes = nodes
        if x.spec.malleable:
            x.speed = nodes / x.spec.nodes
        self._schedule_finish(x)
        self._emit("resize", job.id)
        if self.transitions is not None:
            self.transitions.append((self.now, job.id, RUNNING, "resize", nodes))
        if self.recorder is not None:
            self.recorder.resized(self.now, job, nodes)

    # ------------------------------------------------------------------ failures
    def _failure(self) -> None:
        """A node failure at a uniformly drawn failure unit (node or midplane)."""
        opts = self.options
        if not self._work_remains():
            self._failures_armed = False  # stop, or the simulation would never end
            return
        self.events.push(self.now + self.rng.expovariate(1.0 / opts.mtbf_s), EV_FAILURE, None)
        self.stats["failures"] += 1
        unit = self.rng.randrange(self.cluster.failure_units)
        owner, key = self._unit_owner(unit)
        if owner == "ignored":
            # Already down, or idle inside a reservation (its owner keeps it): documented.
            self.stats["failures_ignored"] += 1
            return
        if isinstance(owner, _Exec):
            self._fail_job(owner)
        if not self.state.unit_down(unit):
            self.stats["failures_ignored"] += 1
            return
        self._down_units[key] = self.now
        if self.recorder is not None:
            self.recorder.level(self.now, DOWN, self._unit_nodes())
        self.events.push(self.now + self.rng.expovariate(1.0 / opts.mttr_s), EV_REPAIR, key)

    def _work_remains(self) -> bool:
        return bool(self.jobs) or self._pending_source is not None

    def _arm_failures(self) -> None:
        """(Re)start the failure process when work arrives after it stopped."""
        if self.options.mtbf_s > 0 and not self._failures_armed:
            self._failures_armed = True
            self.events.push(self.now + self.rng.expovariate(1.0 / self.options.mtbf_s),
                             EV_FAILURE, None)

    def _unit_owner(self, unit: int) -> tuple[_Exec | str | None, int]:
        """(the job holding failure unit `unit`, "ignored", or None if free; repair key)."""
        if isinstance(self.state, PoolState):
            # Identical nodes have no identity: order them as down nodes, running jobs (in
            # start order), reservations, free nodes, and map the drawn index onto that.
            i = unit - self.state.down
            key = self._repair_seq = self._repair_seq + 1
            if i < 0:
                return "ignored", key
            for job in self.running.values():
                x = self._x[job.id]
                if x.res_key is None:
                    if i < job.alloc_nodes:
                        return x, key
                    i -= job.alloc_nodes
            for res in self.reservations.values():
                if i < res.nodes:
                    return "ignored", key
                i -= res.nodes
            return None, key
        if unit in self._down_units:
            return "ignored", unit
        for job in self.running.values():
            if job.allocation is not None and job.allocation.covers_unit(unit):
                return self._x[job.id], unit
        for res in self.reservations.values():
            if res.alloc.covers_unit(unit):
                return "ignored", unit
        return None, unit

    def _fail_job(self, x: _Exec) -> None:
        job = x.job
        x.failures += 1
        if job.state is CHECKPOINTING:
            spent = self.now - x.ckpt_start
            x.busy_ns += job.alloc_nodes * spent
            x.executed += spent
            x.ckpt_ns += job.alloc_nodes * spent  # the unfinished checkpoint is wasted
            x.preempt_ckpt_ns += job.alloc_nodes * spent
            x.t_ckpt += spent
            self._release_nodes(x)
        else:
            self._close_segment(x, self.now)
            self._release_nodes(x)
        if self.options.requeue_on_failure:
            self._lose_work(x, PreemptMode.LAST_CHECKPOINT)
            self._move(job, PREEMPTED, "node-failure")
            self._emit("stop", job.id)
            self._enqueue(job)
        else:
            x.lost_ns += x.since_zero_ns
            x.useful_ns = 0.0
            self._move(job, FAILED, "node-failure")
            self._emit("stop", job.id)
            self._retire(x)

    def _repair(self, key: int) -> None:
        del self._down_units[key]
        self.state.unit_up(key)
        if self.recorder is not None:
            self.recorder.level(self.now, DOWN, -self._unit_nodes())
        self.stats["repairs"] += 1

    # ------------------------------------------------------------------ decisions
    def _pass(self) -> None:
        if self.policy is None:
            return
        self.stats["passes"] += 1
        for decision in self.policy.schedule(self._view):
            self.apply(decision)

    def apply(self, d: Decision) -> None:
        """Validate and apply one decision; refuse an invalid one without changing state."""
        self.stats["decisions"] += 1
        if isinstance(d, Start):
            self._apply_start(d)
        elif isinstance(d, Preempt):
            self._apply_preempt(d)
        elif isinstance(d, Resize):
            self._apply_resize(d)
        elif isinstance(d, Reserve):
            self._apply_reserve(d)
        elif isinstance(d, Release):
            self._apply_release(d)
        elif isinstance(d, WakeAt):
            if d.time < self.now:
                raise DecisionError(f"cannot wake at {d.time:g}, before now ({self.now:g})")
            self.events.push(d.time, EV_WAKE, None)
        else:
            raise DecisionError(f"unknown decision {d!r}")

    def _live(self, job_id: int) -> _Exec:
        x = self._x.get(job_id)
        if x is None:
            raise DecisionError(f"job {job_id} is not a live job")
        return x

    def _apply_start(self, d: Start) -> None:
        x = self._live(d.job_id)
        job = x.job
        if not job.state.waiting:
            raise DecisionError(f"job {job.id} cannot start: it is {job.state.value}")
        if job.job_class is JobClass.DEDICATED and 0 <= self.now < job.requested_start:
            raise DecisionError(
                f"dedicated job {job.id} may not start before {job.requested_start:g}"
            )
        nodes = job.nodes if d.nodes is None else d.nodes
        if nodes != job.nodes and not (job.malleable and job.min_nodes <= nodes <= job.nodes):
            raise DecisionError(
                f"job {job.id} must start on {job.nodes} nodes"
                + (f" (or {job.min_nodes}..{job.nodes}: malleable)" if job.malleable else "")
                + f", not {nodes}"
            )
        pool = self.state
        if d.reservation is not None:
            res = self.reservations.get(d.reservation)
            if res is None:
                raise DecisionError(f"no reservation named {d.reservation!r}")
            pool = res.sub
        try:
            alloc = pool.allocate_block(d.block) if d.block is not None else pool.allocate(nodes)
        except ClusterError as err:
            raise DecisionError(f"job {job.id} cannot start: {err}") from None
        if alloc is None:
            where = f"reservation {d.reservation!r}" if d.reservation else "the machine"
            what = f"block {d.block}" if d.block is not None else f"{nodes} nodes"
            raise DecisionError(
                f"job {job.id} cannot start: {what} not available in {where} "
                f"({pool.free_nodes} nodes free)"
            )
        if alloc.nodes < nodes:
            pool.release(alloc)
            raise DecisionError(f"block {d.block} has {alloc.nodes} nodes; job {job.id} "
                                f"needs {nodes}")
        self._start(x, alloc, nodes, d.reservation, "decision:start")

    def _apply_preempt(self, d: Preempt) -> None:
        x = self._live(d.job_id)
        job = x.job
        if job.state is not RUNNING:
            raise DecisionError(f"job {job.id} cannot be preempted: it is {job.state.value}")
        mode = d.mode
        if mode is PreemptMode.JIT and not job.checkpointable:
            raise DecisionError(f"job {job.id} cannot checkpoint (not checkpointable)")
        if mode in (PreemptMode.JIT, PreemptMode.WARNING):
            self._begin_checkpoint(x, mode)
        else:
            self._interrupt(x, mode, "preempt")

    def _apply_resize(self, d: Resize) -> None:
        x = self._live(d.job_id)
        job = x.job
        if not job.malleable:
            raise DecisionError(f"job {job.id} is not malleable")
        if not job.min_nodes <= d.nodes <= job.nodes:
            raise DecisionError(
                f"job {job.id} can run on {job.min_nodes}..{job.nodes} nodes, not {d.nodes}"
            )
        if job.state is not RUNNING:
            raise DecisionError(f"job {job.id} is {job.state.value}; start it with Start(nodes=)")
        self._resize_running(x, d.nodes)

    def _apply_reserve(self, d: Reserve) -> None:
        if d.key in self.reservations:
            raise DecisionError(f"reservation {d.key!r} already exists")
        if d.block is not None:
            try:
                alloc = self.state.allocate_block(d.block)
            except ClusterError as err:
                raise DecisionError(f"cannot reserve: {err}") from None
        elif d.nodes is not None and d.nodes >= 1:
            alloc = self.state.allocate(d.nodes)
        else:
            raise DecisionError("a reservation needs nodes >= 1 or a block")
        if alloc is None:
            raise DecisionError(
                f"cannot reserve {d.nodes if d.block is None else f'block {d.block}'}: "
                f"{self.state.free_nodes} nodes free"
            )
        self.reservations[d.key] = Reservation(d.key, alloc, self.state.carve(alloc), self.now)
        if self.recorder is not None:
            self.recorder.level(self.now, RESERVED, alloc.nodes)

    def _apply_release(self, d: Release) -> None:
        res = self.reservations.pop(d.key, None)
        if res is None:
            raise DecisionError(f"no reservation named {d.key!r}")
        self.state.merge_back(res.sub, res.alloc)
        if self.recorder is not None:
            self.recorder.level(self.now, RESERVED, -res.alloc.nodes)
        for job in self.running.values():  # jobs inside now release to the machine
            x = self._x[job.id]
            if x.res_key == d.key:
                x.res_key = None

    # ------------------------------------------------------------------ output
    def _emit(self, kind: str, job_id: int, deadline: float = -1.0) -> None:
        if self.outbox is not None:
            self.outbox.append(Command(kind, job_id, self.now, deadline))

    # ------------------------------------------------------------------ policy queries
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
