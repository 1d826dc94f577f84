"""What a run's figures need beyond per-job results: execution segments and machine state.

The engine calls a `RunRecorder` (when one is attached) at every job transition and at the
end of every instant. It keeps

* one row per execution segment — a stretch of holding resources: job, start, end, nodes,
  the partition (block index, -1 on a node pool) and why it ended;
* one row per change of the machine's state — busy nodes, nodes down, queue length, queued
  node-seconds (requested nodes x requested time of the waiting jobs, as they were when
  they entered the queue), running jobs, reserved nodes.

Columns are compact typed arrays (a million-job run stays small); `schedd.run_files` turns
them into segments.csv and timeseries.csv.
"""

from __future__ import annotations

from array import array

from .job import Job, JobState

# Why a segment ended (the `end_reason` column); "running" only for a run cut short.
END_REASONS = ("completed", "killed", "cancelled", "failed", "preempted", "checkpointed",
               "resized", "running")
COMPLETED_, KILLED_, CANCELLED_, FAILED_, PREEMPTED_, CHECKPOINTED_, RESIZED_, RUNNING_ = range(8)

_TERMINAL_REASON = {JobState.COMPLETED: COMPLETED_, JobState.KILLED: KILLED_,
                    JobState.CANCELLED: CANCELLED_, JobState.FAILED: FAILED_}
# A requeue's cause (engine `_move` causes) -> why the segment before it ended.
_REQUEUE_REASON = {"checkpoint-done": CHECKPOINTED_, "node-failure": FAILED_,
                   "checkpoint-timeout": KILLED_}

TIMESERIES_COLUMNS = ("time", "busy_nodes", "down_nodes", "queue_length", "queued_node_s",
                      "running_jobs", "reserved_nodes")


class RunRecorder:
    def __init__(self) -> None:
        # Segments, one entry per column.
        self.seg_job = array("q")
        self.seg_start = array("d")
        self.seg_end = array("d")
        self.seg_nodes = array("q")
        self.seg_block = array("q")
        self.seg_reason = array("q")
        self._open: dict[int, tuple[float, int, int]] = {}  # job id -> (start, nodes, block)
        # Time series: a row whenever a value changed since the previous instant.
        self.ts_time = array("d")
        self.ts_busy = array("q")
        self.ts_down = array("q")
        self.ts_queue = array("q")
        self.ts_queued_ns = array("d")
        self.ts_running = array("q")
        self.ts_reserved = array("q")
        self._queued: dict[int, float] = {}  # waiting job id -> its node-seconds
        self._queued_ns = 0.0
        self._last: tuple[int, int, int, float, int, int] = (-1, -1, -1, -1.0, -1, -1)

    # ---------------------------------------------------------------- engine hooks
    def moved(self, t: float, job: Job, to: JobState, cause: str) -> None:
        """A job changed state at t (after the engine applied the change)."""
        jid = job.id
        if to is JobState.RUNNING:
            self._leave_queue(jid)
            alloc = job.allocation
            self._open[jid] = (t, job.alloc_nodes, alloc.block if alloc is not None else -1)
        elif to is JobState.QUEUED or to is JobState.PREEMPTED:
            if jid in self._open:
                self._close(jid, t, _REQUEUE_REASON.get(cause, PREEMPTED_))
            ns = job.nodes * job.walltime
            self._queued[jid] = ns
            self._queued_ns += ns
        elif to is not JobState.CHECKPOINTING:  # terminal
            if jid in self._open:
                self._close(jid, t, _TERMINAL_REASON[to])
            self._leave_queue(jid)

    def resized(self, t: float, job: Job, nodes: int) -> None:
        """A running job changed size at t: its segment ends and a new one begins."""
        if job.id in self._open:
            _, _, block = self._open[job.id]
            self._close(job.id, t, RESIZED_)
            self._open[job.id] = (t, nodes, block)

    def sample(self, t: float, busy: int, down: int, queue_length: int, running: int,
               reserved: int) -> None:
        """The machine's state at the end of instant t (kept only when it changed)."""
        queued = self._queued_ns if self._queued else 0.0  # exact zero when empty
        row = (busy, down, queue_length, queued, running, reserved)
        if row == self._last:
            return
        if self.ts_time and self.ts_time[-1] == t:  # same instant sampled again: replace
            for col in (self.ts_time, self.ts_busy, self.ts_down, self.ts_queue,
                        self.ts_queued_ns, self.ts_running, self.ts_reserved):
                col.pop()
            self._last = self._row(len(self.ts_time) - 1)
            if row == self._last:
                return
        self._last = row
        self.ts_time.append(t)
        self.ts_busy.append(busy)
        self.ts_down.append(down)
        self.ts_queue.append(queue_length)
        self.ts_queued_ns.append(queued)
        self.ts_running.append(running)
        self.ts_reserved.append(reserved)

    # ---------------------------------------------------------------- reading
    def close_open(self, t: float) -> None:
        """End the segments of jobs still holding resources at t (a run cut short)."""
        for jid in sorted(self._open):
            self._close(jid, t, RUNNING_)

    def __len__(self) -> int:
        return len(self.seg_job)

    def _row(self, i: int) -> tuple[int, int, int, float, int, int]:
        if i < 0:
            return (-1, -1, -1, -1.0, -1, -1)
        return (self.ts_busy[i], self.ts_down[i], self.ts_queue[i], self.ts_queued_ns[i],
                self.ts_running[i], self.ts_reserved[i])

    # ---------------------------------------------------------------- internals
    def _close(self, jid: int, t: float, reason: int) -> None:
        start, nodes, block = self._open.pop(jid)
        self.seg_job.append(jid)
        self.seg_start.append(start)
        self.seg_end.append(t)
        self.seg_nodes.append(nodes)
        self.seg_block.append(block)
        self.seg_reason.append(reason)

    def _leave_queue(self, jid: int) -> None:
        ns = self._queued.pop(jid, None)
        if ns is not None:
            self._queued_ns -= ns
