"""What a run's figures need beyond per-job results: execution segments and machine state.

The engine calls a `RunRecorder` (when one is attached) at every job transition and
resize, and at the rare changes of down and reserved nodes. It keeps compact columns
(a million-job run stays small) of

* execution segments — a stretch of holding resources: job, start, end, nodes, the
  partition (block index, -1 on a node pool) and why it ended;
* waits — a stretch of waiting in the queue: job, start, end, and the job's requested
  node-seconds (nodes x walltime) as it entered the queue;
* level changes — (time, DOWN or RESERVED, nodes added or removed).

The machine's state over time (busy and down nodes, queue length, queued node-seconds,
running jobs, reserved nodes) follows from these by a cumulative sum at write time
(`schedd.run_files`), so the engine does no per-instant work for it.
"""

from __future__ import annotations

from array import array
from typing import Final

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


DOWN, RESERVED = 0, 1  # level kinds
# Plain names for the states (attribute access on an Enum class is slow in a hot path).
_Q: Final = JobState.QUEUED
_R: Final = JobState.RUNNING
_C: Final = JobState.CHECKPOINTING
_P: Final = JobState.PREEMPTED
_DONE: Final = JobState.COMPLETED


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
        # Waits in the queue.
        self.wait_job = array("q")
        self.wait_start = array("d")
        self.wait_end = array("d")
        self.wait_node_s = array("d")
        self._waiting: dict[int, tuple[float, float]] = {}  # job id -> (since, node-seconds)
        # Down and reserved nodes: (time, kind, change).
        self.lvl_time = array("d")
        self.lvl_kind = array("q")
        self.lvl_delta = array("q")
        self.end_time = -1.0  # set by close_open: the instant the run was cut at

    # ---------------------------------------------------------------- engine hooks
    def moved(self, t: float, job: Job, to: JobState, cause: str) -> None:
        """A job changed state at t (after the engine applied the change)."""
        jid = job.id
        if to is _R:
            self._leave_queue(jid, t)
            alloc = job.allocation
            self._open[jid] = (t, job.alloc_nodes, alloc.block if alloc is not None else -1)
        elif to is _Q or to is _P:
            if jid in self._open:
                self._close(jid, t, _REQUEUE_REASON.get(cause, PREEMPTED_))
            self._waiting[jid] = (t, job.nodes * job.walltime)
        elif to is not _C:  # terminal
            if jid in self._open:
                self._close(jid, t, COMPLETED_ if to is _DONE else _TERMINAL_REASON[to])
            self._leave_queue(jid, t)

    def resized(self, t: float, job: Job, nodes: int) -> None:
        """A running job changed size at t: its segment ends and a new one begins."""
        if job.id in self._open:
            _, _, block = self._open[job.id]
            self._close(job.id, t, RESIZED_)
            self._open[job.id] = (t, nodes, block)

    def level(self, t: float, kind: int, change: int) -> None:
        """Nodes went down (kind DOWN, change > 0) or came back, or a reservation took
        (RESERVED, change > 0) or returned nodes, at t."""
        self.lvl_time.append(t)
        self.lvl_kind.append(kind)
        self.lvl_delta.append(change)

    def add_segments(self, job: bytes, start: bytes, end: bytes, nodes: bytes, block: bytes,
                     reason: bytes) -> None:
        """Segments a driver computed in bulk, each column as the bytes of its array
        (int64 or float64 as the column is), in the order they ended."""
        self.seg_job.frombytes(job)
        self.seg_start.frombytes(start)
        self.seg_end.frombytes(end)
        self.seg_nodes.frombytes(nodes)
        self.seg_block.frombytes(block)
        self.seg_reason.frombytes(reason)

    def add_waits(self, job: bytes, start: bytes, end: bytes, node_s: bytes) -> None:
        """Waits a driver computed in bulk (as `add_segments`), in the order they ended."""
        self.wait_job.frombytes(job)
        self.wait_start.frombytes(start)
        self.wait_end.frombytes(end)
        self.wait_node_s.frombytes(node_s)

    # ---------------------------------------------------------------- reading
    def close_open(self, t: float) -> None:
        """End the segments and waits still open at t (a run cut short)."""
        self.end_time = t
        for jid in sorted(self._open):
            self._close(jid, t, RUNNING_)
        for jid in sorted(self._waiting):
            self._leave_queue(jid, t)

    def __len__(self) -> int:
        return len(self.seg_job)

    # ---------------------------------------------------------------- internals
    def _close(self, jid: int, t: float, reason: int) -> None:
        start, nodes, block = self._open.pop(jid)
        self.seg_job.append(jid)
        self.seg_start.append(start)
        self.seg_end.append(t)
        self.seg_nodes.append(nodes)
        self.seg_block.append(block)
        self.seg_reason.append(reason)

    def _leave_queue(self, jid: int, t: float) -> None:
        wait = self._waiting.pop(jid, None)
        if wait is not None:
            self.wait_job.append(jid)
            self.wait_start.append(wait[0])
            self.wait_end.append(t)
            self.wait_node_s.append(wait[1])
