"""EASY on a node pool with no mechanism in use, without the general engine: the fast path
`schedd.sim.simulate` takes when a run needs nothing but submissions, starts and ends
(issue 21: "a fast path for events no mechanism is listening to"). Compiled by mypyc.

The general engine builds a Job, an execution record and a view per job and runs every
decision through validation, the event queue and the state machine, because failures,
checkpoints, elastic commands, reservations or notices may be listening. When none can
(`plain_easy_order` says when), one job's life is arrival, start and end, and its result
row, segment and wait follow from three times. This loop keeps exactly the engine's order
of events (at one instant: ends in the order their jobs started, then submissions in
queue order, then one EASY pass, again while ends fall at that instant), its arithmetic
(every float of a result row is computed by the same operations), and the rows it appends
to the engine's ResultTable and RunRecorder, so every output file is byte-identical to the
general engine's; tests/test_easy_plain.py checks that on random traces and on the real
ones, and `schedd simulate --general-engine` runs the general engine instead.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterator

import numpy as np

from ..core.cluster import NodePool, PoolState
from ..core.engine import Engine
from ..core.job import JobClass, JobSpec
from ..core.recorder import COMPLETED_, KILLED_, RunRecorder
from ..core.results import CLASS_CODES, STATE_CODES, ResultTable
from ..traces import NormalizedTrace
from .backfill import Easy

INF = float("inf")
_CLASS_CODE = {c: CLASS_CODES.index(c.value) for c in JobClass}
_KILLED_CODE = STATE_CODES.index("killed")
_ORDERS = ("first", "best", "sjf")


class _Plain:
    """A job of the fast path: what EASY reads and what its result row needs."""

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.id = spec.id
        self.submit = spec.submit
        self.nodes = spec.nodes
        self.walltime = spec.walltime
        self.start = -1.0
        self.predicted_end = -1.0
        self.backfilled = False


def plain_easy_order(engine: Engine, trace: NormalizedTrace) -> str | None:
    """The backfill order ("first", "best", "sjf") when the fast path gives exactly what
    the general engine gives for this run, else None: an EASY policy as shipped on a plain
    node pool, an engine nothing else was given to, no failures, notices, elastic
    commands, dedicated starts or periodic checkpoints, and a trace the engine would take
    without an error (any doubt leaves the run, and its error messages, to the engine)."""
    policy = engine.policy
    order = getattr(policy, "order", None)
    if (policy is None or type(policy).schedule is not Easy.schedule or order not in _ORDERS
            or type(engine.cluster) is not NodePool or type(engine.state) is not PoolState):
        return None
    options = engine.options
    if (options.mtbf_s > 0 or options.keep_finished or engine.transitions is not None
            or engine.outbox is not None or len(engine.events) or engine.jobs
            or engine.now != 0.0 or engine.state.free_nodes != engine.cluster.total_nodes
            or trace.eccs):
        return None
    if not _plain_columns(trace.columns, engine.cluster.total_nodes,
                          options.checkpoint.periodic):
        return None
    return str(order)


def _plain_columns(cols: dict[str, np.ndarray], total: int, periodic: str) -> bool:
    """Every job valid for the engine and free of the mechanisms the fast path leaves out."""
    n = len(cols["job_id"])
    if n == 0:
        return True
    submit, runtime, walltime = cols["submit"], cols["runtime"], cols["walltime"]
    nodes, setup = cols["nodes"], cols["setup"]
    finite = np.isfinite(submit).all() and np.isfinite(runtime).all() and np.isfinite(
        walltime).all() and not (setup > 0.0)[~np.isfinite(setup)].any()
    if not finite or submit[0] < 0 or (np.diff(submit) < 0).any():
        return False
    if (runtime <= 0).any() or (walltime <= 0).any() or (nodes < 1).any() or (
            nodes > total).any():
        return False
    malleable = (cols["job_class"] == JobClass.MALLEABLE.value) & (cols["min_nodes"] > 0)
    if (cols["min_nodes"][malleable] > nodes[malleable]).any():
        return False
    if len(np.unique(cols["job_id"])) != n:
        return False
    if "notice_time" in cols and (cols["notice_time"] >= 0).any():
        return False
    if (cols["req_start"] >= 0).any():
        return False
    # Periodic checkpoints: `_begin_segment` models none for a job that is not
    # checkpointable, or under "none", or under "trace" without an interval of its own.
    if periodic == "none":
        return True
    if periodic != "trace":
        return not (cols["checkpointable"] != 0).any()
    return not ((cols["checkpointable"] != 0) & (cols["ckpt_interval"] > 0)).any()


def run_plain_easy(engine: Engine, specs: Iterator[JobSpec], order: str,
                   progress: Callable[[int], None] | None = None) -> None:
    """Run every job of `specs` (sorted by submit time) to its end, as `Engine.step` with
    `easy_pass(order)` would, appending the same rows to `engine.results` and
    `engine.recorder`; the engine is left at the last instant with its counters."""
    results = engine.results
    rec = engine.recorder
    total = engine.cluster.total_nodes
    free = engine.state.free_nodes
    owner = int(engine.options.checkpoint.owner_is_system)
    queue: list[_Plain] = []  # waiting, in (submit, id) order
    running: dict[int, _Plain] = {}
    by_end: list[tuple[float, int]] = []  # (predicted end, id) of running jobs
    ends: list[tuple[float, int, _Plain]] = []  # heap of (end, start order, job)
    started_count = 0
    passes = decisions = steps = 0
    busy = engine.busy_integral()
    now = last_t = engine.now
    nxt = next(specs, None)
    while ends or nxt is not None:
        t = ends[0][0] if ends else INF
        if nxt is not None and nxt.submit < t:
            t = nxt.submit
        if t < now:
            raise RuntimeError(f"time moved backwards: {t} < {now}")
        busy += (total - free) * (t - last_t)
        now = last_t = t
        for _ in range(10_000):
            while ends and ends[0][0] == t:
                job = heapq.heappop(ends)[2]
                free += job.nodes
                _end_job(job, t, by_end, running, results, rec, owner)
            while nxt is not None and nxt.submit == t:
                _arrive(queue, _Plain(nxt))
                nxt = next(specs, None)
            passes += 1
            if free > 0 and queue:
                starts = _easy_starts(queue, free, t, order, by_end, running)
                for job in starts:
                    free -= job.nodes
                    started_count += 1
                    _start_job(job, t, started_count, queue, by_end, running, ends, rec)
                decisions += len(starts)
            if not ends or ends[0][0] != t:
                break
        else:
            raise RuntimeError(f"more than 10,000 scheduling rounds at t={t:g}: a policy loops")
        steps += 1
        if progress is not None and steps % 2048 == 0:
            progress(len(results))
    engine.adopt_clock(now, busy)
    engine.stats["passes"] += passes
    engine.stats["decisions"] += decisions


def _arrive(queue: list[_Plain], job: _Plain) -> None:
    """`Engine._enqueue`: new submissions usually go last; a job submitted at the same
    instant as the last but with a lower id sorts in (its wait row is written when it
    starts: the recorder's open wait holds nothing else)."""
    if not queue or (queue[-1].submit, queue[-1].id) < (job.submit, job.id):
        queue.append(job)
    else:
        keys = [(j.submit, j.id) for j in queue]
        queue.insert(bisect.bisect_left(keys, (job.submit, job.id)), job)


def _easy_starts(queue: list[_Plain], free: int, now: float, order: str,
                 by_end: list[tuple[float, int]], running: dict[int, _Plain]) -> list[_Plain]:
    """The jobs one `easy_pass(order)` starts, in the order of its decisions: from the
    head while they fit, then the backfilled ones (the `_easy_counts` arithmetic)."""
    starts: list[_Plain] = []
    for job in queue:
        if job.nodes > free:
            break
        free -= job.nodes
        starts.append(job)
    k = len(starts)
    if k == len(queue):
        return starts
    # Shadow time and extra nodes of the blocked head: releases in ascending (end, id),
    # the jobs started in this pass holding their nodes until now + walltime.
    more = sorted([(now + job.walltime, job.id, job.nodes) for job in starts])
    need = queue[k].nodes
    spare, shadow = free, INF
    m, i = len(more), 0
    for end, jid in by_end:
        while i < m and (more[i][0] < end or (more[i][0] == end and more[i][1] < jid)):
            if more[i][0] > shadow:
                break
            spare += more[i][2]
            if shadow == INF and spare >= need:
                shadow = more[i][0]
            i += 1
        if end > shadow:
            break
        spare += running[jid].nodes
        if shadow == INF and spare >= need:
            shadow = end
    else:
        while i < m and more[i][0] <= shadow:
            spare += more[i][2]
            if shadow == INF and spare >= need:
                shadow = more[i][0]
            i += 1
    extra = spare - need if shadow < INF else 0
    candidates = queue[k + 1:]
    if order == "best":
        candidates.sort(key=lambda j: -j.nodes)
    elif order == "sjf":
        candidates.sort(key=lambda j: j.walltime)
    for job in candidates:
        if free == 0:
            break
        n = job.nodes
        if n > free:
            continue
        if now + job.walltime <= shadow:
            free -= n
        elif n <= extra:
            free -= n
            extra -= n
        else:
            continue
        job.backfilled = True
        starts.append(job)
    return starts


def _start_job(job: _Plain, now: float, order: int, queue: list[_Plain],
               by_end: list[tuple[float, int]], running: dict[int, _Plain],
               ends: list[tuple[float, int, _Plain]], rec: RunRecorder | None) -> None:
    """`Engine._apply_start` of a job on the pool: its wait row, its end and its predicted
    end. `_begin_segment` computes c0 = now + setup + restart (0: a first start) and
    `_segment_end` c0 - 0/1 + (target - 0)/1 + 0 checkpoints: with c0 >= 0, the terms
    that are 0 change no bit, so c0 + target is that same float."""
    if queue[0] is job:
        queue.pop(0)
    else:
        queue.remove(job)
    job.start = now
    spec = job.spec
    c0 = now + spec.setup + 0.0
    heapq.heappush(ends, (max(c0 + min(spec.runtime, spec.walltime), now), order, job))
    job.predicted_end = max(c0 + job.walltime, now)
    bisect.insort(by_end, (job.predicted_end, job.id))
    running[job.id] = job
    if rec is not None:  # RunRecorder.moved(RUNNING): the wait ends
        rec.wait_job.append(job.id)
        rec.wait_start.append(job.submit)
        rec.wait_end.append(now)
        rec.wait_node_s.append(job.nodes * job.walltime)


def _end_job(job: _Plain, t: float, by_end: list[tuple[float, int]],
             running: dict[int, _Plain], results: ResultTable, rec: RunRecorder | None,
             owner: int) -> None:
    """`_finish` and `_retire`: `_close_segment`'s accounting of one segment with no
    checkpoint or restart, the segment row and the result row. The sums start from the
    execution record's zeros as the engine's do (0.0 + x is x for x >= 0, kept where the
    engine adds, so that each value is visibly the engine's)."""
    spec = job.spec
    key = (job.predicted_end, job.id)
    i = bisect.bisect_left(by_end, key)
    del by_end[i]
    del running[job.id]
    n = job.nodes
    start = job.start
    held = t - start
    setup = spec.setup
    c0 = start + setup + 0.0
    target = min(spec.runtime, spec.walltime)
    # `_progress` at t: no work before c0, then min(e * speed, target) at speed 1.
    compute = 0.0 if t <= c0 else min(t - c0, target)
    killed = spec.runtime > target
    if rec is not None:  # RunRecorder.moved(COMPLETED or KILLED): the segment ends
        rec.seg_job.append(job.id)
        rec.seg_start.append(start)
        rec.seg_end.append(t)
        rec.seg_nodes.append(n)
        rec.seg_block.append(-1)
        rec.seg_reason.append(KILLED_ if killed else COMPLETED_)
    # Values in COLUMNS order (schedd/core/results.py), as `_retire` appends them.
    results.append((
        job.id, job.submit, start, t, start - job.submit, 0.0 + held, spec.nodes, n,
        job.walltime + 0.0, spec.walltime, spec.user, spec.project, spec.queue,
        _CLASS_CODE[spec.job_class], _KILLED_CODE if killed else 0, 0, 0, 0,
        0.0 + n * held, 0.0 + n * compute, 0.0, 0.0 + n * 0.0, 0.0 + n * 0.0,
        0.0 + n * min(setup, held), 0.0, 0.0 + 0.0, owner, spec.requested_start, 0.0,
        int(job.backfilled), 0.0,
    ))

