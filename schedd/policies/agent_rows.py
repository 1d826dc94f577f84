"""The agent's window rows, carried from one observation to the next (issue 36, speed).

Between two choices a window mostly keeps its jobs: the picked job and the backfilled ones
leave, arrivals join at the end. `align` matches the new window against the last one by
identity and says which runs of rows can be copied over (`(dst, src, length)`) and which
rows must be read afresh from their jobs: new jobs, and jobs whose nodes, requested time or
estimate changed since (an elastic control command, a notice). The rows' other fields
(submit, user, project, queue, class) are fixed for a job. `blocked_pass` is the agent's
pass while its chosen job waits and cannot start (most passes). Compiled by mypyc
(setup.py), so that the per-job loop and the pass's bookkeeping cost nanoseconds; as plain
Python it gives the same answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core.decisions import Decision
from ..core.job import Job, JobClass, JobState, Notice
from ..core.view import View
from .backfill import easy_pass

_CLASS_INDEX: dict[JobClass, float] = {c: float(i) for i, c in enumerate(JobClass)}


class Rows:
    """The last window's jobs and the values their rows were built from."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.nodes: list[int] = []
        self.walltime: list[float] = []
        self.estimate: list[float] = []

    def clear(self) -> None:
        self.jobs, self.nodes, self.walltime, self.estimate = [], [], [], []


def align(rows: Rows, win: list[Job], notices: Mapping[int, Notice]
          ) -> tuple[list[tuple[int, int, int]], list[int], list[tuple[float, ...]]]:
    """(copies, fresh, values): row runs to copy from the last window's rows (dst, src,
    length), the new rows to fill, and their values (the columns PRESENT..CLASS of
    scoring.JOB_FEATURES: 1, 0 for the wait (the caller's), nodes, walltime, estimate,
    submit, user, project, queue, class).
    `rows` then describes `win`."""
    prev = rows.jobs
    p_nodes, p_wall, p_est = rows.nodes, rows.walltime, rows.estimate
    m = len(prev)
    n = len(win)
    copies: list[tuple[int, int, int]] = []
    fresh: list[int] = []
    values: list[tuple[float, ...]] = []
    # The new window's values: runs of kept rows are sliced from the last ones (no float
    # is boxed again), fresh rows appended.
    nodes_out: list[int] = []
    wall_out: list[float] = []
    est_out: list[float] = []
    any_notice = len(notices) > 0
    i = 0
    run_dst = -1
    run_src = -1
    for j in range(n):
        job = win[j]
        nodes = job.nodes
        wall = job.walltime
        est = wall
        if any_notice and job.id in notices:
            est = notices[job.id].walltime
        k = i
        if k < m and prev[k] is not job:  # jobs that left (or a new one): look ahead
            k += 1
            while k < m and prev[k] is not job:
                k += 1
        if k < m and p_nodes[k] == nodes and p_wall[k] == wall and p_est[k] == est:
            if run_dst < 0 or k != run_src + (j - run_dst):
                if run_dst >= 0:
                    _close(copies, run_dst, run_src, j - run_dst, rows, nodes_out, wall_out,
                           est_out)
                run_dst, run_src = j, k
            i = k + 1
            continue
        if run_dst >= 0:
            _close(copies, run_dst, run_src, j - run_dst, rows, nodes_out, wall_out, est_out)
            run_dst = -1
        if k < m:
            i = k + 1  # the same job, changed: read afresh
        fresh.append(j)
        nodes_out.append(nodes)
        wall_out.append(wall)
        est_out.append(est)
        values.append((1.0, 0.0, float(nodes), wall, est, job.submit, float(job.user),
                       float(job.project), float(job.queue),
                       0.0 if job.job_class is JobClass.BATCH else _CLASS_INDEX[job.job_class]))
    if run_dst >= 0:
        _close(copies, run_dst, run_src, n - run_dst, rows, nodes_out, wall_out, est_out)
    rows.jobs = win
    rows.nodes = nodes_out
    rows.walltime = wall_out
    rows.estimate = est_out
    return copies, fresh, values


def _close(copies: list[tuple[int, int, int]], dst: int, src: int, length: int, rows: Rows,
           nodes_out: list[int], wall_out: list[float], est_out: list[float]) -> None:
    """A run of `length` kept rows, from row `src` of the last window to row `dst`."""
    copies.append((dst, src, length))
    nodes_out.extend(rows.nodes[src:src + length])
    wall_out.extend(rows.walltime[src:src + length])
    est_out.extend(rows.estimate[src:src + length])


def machine_row(now: float, free: int, total: int, waiting: int, running_count: int,
                ends: Sequence[tuple[float, int]], running: Mapping[int, Job],
                started: Sequence[Job], limit: int) -> list[float]:
    """`agent.MACHINE_FEATURES`, then (seconds to predicted end, nodes) of the first
    `limit` running jobs, earliest first, zero-padded: `ends` is the view's (end, job id)
    of running jobs, ascending; jobs of `started` (started by this pass) end after their
    requested time."""
    out: list[float] = [now, float(free), float(total), float(waiting), float(running_count)]
    if limit <= 0:
        return out
    if not started:
        for end, jid in ends:
            if len(out) >= 5 + 2 * limit:
                break
            out.append(end - now)
            out.append(float(running[jid].alloc_nodes))
    else:
        pairs: list[tuple[float, float]] = []
        for end, jid in ends:
            if len(pairs) >= limit:
                break
            pairs.append((end - now, float(running[jid].alloc_nodes)))
        for job in started:
            pairs.append((job.walltime, float(job.nodes)))
        pairs.sort()
        for a, b in pairs[:limit]:
            out.append(a)
            out.append(b)
    while len(out) < 5 + 2 * limit:
        out.append(0.0)
    return out


def blocked_pass(view: View, head: int, queue: Sequence[Job], free: int, backfill: bool
                 ) -> list[Decision] | None:
    """The agent's pass on a node pool while its chosen job `head` still waits, eligible,
    and needs more than the `free` nodes: nothing but EASY's backfilling around it (with
    `backfill`, when nodes are free), the chosen job first, then the queue's order. None
    when the chosen job can start or no longer waits (the full pass decides)."""
    try:
        job = view.job(head)
    except KeyError:
        return None
    state = job.state
    if (state is not JobState.QUEUED and state is not JobState.PREEMPTED) \
            or job.nodes <= free or job.requested_start > view.now:
        return None
    if not backfill or not free:
        return []
    order = list(queue)
    if order[0] is not job:
        if job in order:
            order.remove(job)
        order.insert(0, job)
    return easy_pass(view, queue=order)
