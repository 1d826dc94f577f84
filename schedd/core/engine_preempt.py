"""Preemption and checkpoint mechanics: stopping a running job (its work back to the last
checkpoint or to zero), JIT checkpoints and warnings, their completion or timeout, and the
walltime a requeued job waits with (third link of the engine chain, see engine_state.py)."""

from __future__ import annotations

from .decisions import PreemptMode
from .engine_jobs import _JobLifecycle
from .engine_state import CHECKPOINTING, EV_CKPT_DONE, PREEMPTED
from .exec_state import _Exec


class _Preemption(_JobLifecycle):
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
