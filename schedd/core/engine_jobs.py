"""Job lifecycle: arrival, start, completion at the end of the work or the walltime,
cancellation, and the result row of a job that is done (second link of the engine chain,
see engine_state.py)."""

from __future__ import annotations

from typing import Final

from .cluster import Allocation
from .decisions import DecisionError
from .engine_state import (
    CANCELLED,
    CHECKPOINTING,
    COMPLETED,
    FAILED,
    KILLED,
    QUEUED,
    RUNNING,
    _EngineState,
)
from .exec_state import _Exec
from .job import Job, JobClass, JobSpec
from .results import CLASS_CODES, STATE_CODES

BATCH: Final = JobClass.BATCH
# (The common class and state are compared first: an Enum's hash is a Python-level call.)
_CLASS_INDEX: Final = {c: CLASS_CODES.index(c.value) for c in JobClass}
_STATE_INDEX: Final = {s: STATE_CODES.index(s.value)
                       for s in (COMPLETED, KILLED, CANCELLED, FAILED)}


class _JobLifecycle(_EngineState):
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

    def _retire(self, x: _Exec) -> None:
        job = x.job
        job.end_time = self.now
        del self.jobs[job.id]
        del self._x[job.id]
        self.notices.pop(job.id, None)
        if self.options.keep_finished:
            self.finished[job.id] = job
        if self.options.forget_finished_ids:
            self._seen_ids.discard(job.id)
        spec = x.spec
        started = job.first_start >= 0
        delay = 0.0
        if started and job.requested_start >= 0 and job.job_class is JobClass.DEDICATED:
            delay = max(0.0, job.first_start - job.requested_start)
        # Values in COLUMNS order (schedd/core/results.py).
        self.results.append((
            job.id, job.submit, job.first_start, self.now,
            (job.first_start if started else self.now) - job.submit,
            x.executed, spec.nodes, x.first_alloc, job.walltime + x.wall_done, x.orig_walltime,
            job.user, job.project, job.queue,
            0 if job.job_class is BATCH else _CLASS_INDEX[job.job_class],
            0 if job.state is COMPLETED else _STATE_INDEX[job.state],
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
