"""EASY on a node pool with no mechanism in use, without the general engine: the fast path
`schedd.sim.simulate` takes when a run needs nothing but submissions, starts and ends
(issue 21: "a fast path for events no mechanism is listening to"). Compiled by mypyc.

The general engine builds a Job, an execution record and a view per job and runs every
decision through validation, the event queue and the state machine, because failures,
checkpoints, elastic commands, reservations or notices may be listening. When none can
(`plain_easy_order` says when), a job's life is arrival, start and end, and everything the
engine records of it follows from its trace row and those two times. So the loop here
keeps only row numbers and times, in exactly the engine's order of events (at one instant:
ends in the order their jobs started, then submissions in queue order, then one EASY pass,
again while ends fall at that instant), and `_record` then computes every result
column, segment and wait with the engine's own float operations, element-wise. Every output
file is byte-identical to the general engine's: tests/test_easy_plain.py checks it on
random traces and on the real ones, and `schedd simulate --general-engine` runs the
general engine instead.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable
from types import ModuleType
from typing import Final

import numpy as np

from ..core.cluster import NodePool, PoolState
from ..core.engine import Engine
from ..core.job import JobClass
from ..core.recorder import COMPLETED_, KILLED_
from ..core.results import CLASS_CODES, STATE_CODES
from ..traces import NormalizedTrace
from .backfill import IN_EXTRA, NOT_NOW, Easy, backfill_way

native: ModuleType | None
try:
    from . import _easy_plain as native
except ImportError:  # not built: the loop below runs it (compiled by mypyc or not)
    native = None

INF: Final = float("inf")
# Shared empty lists, never changed: what a pass returns when it starts nothing.
_NO_ROWS: Final[list[int]] = []
_NO_RELEASES: Final[list[tuple[float, int]]] = []
_KILLED_CODE = STATE_CODES.index("killed")
_ORDERS = ("first", "best", "sjf")


def plain_easy_order(engine: Engine, trace: NormalizedTrace) -> str | None:
    """The backfill order ("first", "best", "sjf") when the fast path gives exactly what
    the general engine gives for this run, else None: an EASY policy as shipped on a plain
    node pool, an engine nothing else was given to, no failures, notices, elastic
    commands, dedicated starts or periodic checkpoints, and a trace the engine would take
    without an error (any doubt leaves the run, and its error messages, to the engine)."""
    policy = engine.policy
    order = getattr(policy, "order", None)
    if (policy is None or type(policy).schedule is not Easy.schedule or order not in _ORDERS
            or not plain_engine(engine, trace)):
        return None
    return str(order)


def plain_engine(engine: Engine, trace: NormalizedTrace) -> bool:
    """Whether, whatever its policy, a run of `trace` on `engine` has nothing but
    submissions, starts and ends (plain_easy_order's conditions but the policy; the
    agent's fast path, agent_plain.py, takes them too)."""
    if type(engine.cluster) is not NodePool or type(engine.state) is not PoolState:
        return False
    options = engine.options
    if (options.mtbf_s > 0 or options.keep_finished or engine.transitions is not None
            or engine.outbox is not None or len(engine.events) or engine.jobs
            or len(engine.results) or engine.now != 0.0 or engine.busy_integral() != 0.0
            or engine.state.free_nodes != engine.cluster.total_nodes or trace.eccs
            or (engine.recorder is not None and len(engine.recorder))):
        return False
    return _plain_columns(trace.columns, engine.cluster.total_nodes,
                          options.checkpoint.periodic)


def _plain_columns(cols: dict[str, np.ndarray], total: int, periodic: str) -> bool:
    """Every job valid for the engine, in queue order, and free of the mechanisms the fast
    path leaves out."""
    n = len(cols["job_id"])
    if n == 0:
        return True
    ids, submit, runtime, walltime = cols["job_id"], cols["submit"], cols["runtime"], \
        cols["walltime"]
    nodes, setup = cols["nodes"], cols["setup"]
    finite = np.isfinite(submit).all() and np.isfinite(runtime).all() and np.isfinite(
        walltime).all() and not (setup > 0.0)[~np.isfinite(setup)].any()
    if not finite or submit[0] < 0:
        return False
    # Queue order, (submit, id), is row order: the queue is a sorted list of row numbers.
    rises, ties = np.diff(submit), np.diff(ids)
    if (rises < 0).any() or ((rises == 0) & (ties <= 0)).any():
        return False
    if (runtime <= 0).any() or (walltime <= 0).any() or (nodes < 1).any() or (
            nodes > total).any():
        return False
    # Unique ids, by a sort (NumPy 2's np.unique without return_index hashes: 15x slower
    # on a million ids).
    ordered = np.sort(ids)
    if (ordered[1:] == ordered[:-1]).any():
        return False
    if not np.isin(cols["job_class"], list(CLASS_CODES)).all():
        return False
    malleable = (cols["job_class"] == JobClass.MALLEABLE.value) & (cols["min_nodes"] > 0)
    if (cols["min_nodes"][malleable] > nodes[malleable]).any():
        return False
    if "notice_time" in cols and (cols["notice_time"] >= 0).any():
        return False
    if (cols["req_start"] >= 0).any():
        return False
    if "cancel_time" in cols and (cols["cancel_time"] >= 0).any():
        return False  # recorded cancellations: the engine's events
    # Periodic checkpoints: `_begin_segment` models none for a job that is not
    # checkpointable, or under "none", or under "trace" without an interval of its own
    # (its test, `ckpt_interval <= 0`, taken as it is: a NaN interval is not "none").
    if periodic == "none":
        return True
    if periodic != "trace":
        return not (cols["checkpointable"] != 0).any()
    return not ((cols["checkpointable"] != 0) & ~(cols["ckpt_interval"] <= 0)).any()


def run_plain_easy(engine: Engine, trace: NormalizedTrace, order: str,
                   progress: Callable[[int], None] | None = None) -> None:
    """Run every job of `trace` to its end as `Engine.step` with `easy_pass(order)` would,
    and give `engine.results` and `engine.recorder` the rows the engine would have given
    them; the engine is left at the last instant with its counters. The loop runs in C
    (schedd/policies/_easy_plain.c) where it is built, else as `_loop` below: the same
    numbers and the same progress reports (tests/test_easy_plain_c.py)."""
    job = _job_columns(trace.columns)
    total = engine.cluster.total_nodes
    # Passes at an instant with arrivals only, after a pass that left the head waiting,
    # need to try the arrivals alone, under the shadow time and extra nodes that pass
    # left (`_backfill`'s docstring says why). Exact when a started job's predicted end is
    # start + walltime, as the pass reckoned it: without setup times.
    incremental = not bool((job["setup"] > 0.0).any())
    if native is not None:
        got = native.run(job["submit"], job["nodes"], job["walltime"], job["setup"],
                         job["target"], total, engine.state.free_nodes, _ORDERS.index(order),
                         incremental, engine.now, progress)
        start = np.frombuffer(got[0], np.float64)
        end = np.frombuffer(got[1], np.float64)
        backfilled = np.frombuffer(got[2], np.bool_)
        started = np.frombuffer(got[3], np.int64)
        ended = np.frombuffer(got[4], np.int64)
        now, busy, passes = float(got[5]), float(got[6]), int(got[7])
    else:
        start, end, backfilled, started, ended, now, busy, passes = _loop(
            job, total, engine.state.free_nodes, order, incremental, engine.now, progress)
    engine.adopt_clock(now, busy)
    engine.stats["passes"] += passes
    engine.stats["decisions"] += len(started)
    _record(engine, trace.columns, job, start, end, backfilled, started, ended)


def _loop(job: dict[str, np.ndarray], total: int, free: int, order: str, incremental: bool,
          now: float, progress: Callable[[int], None] | None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float,
                     float, int]:
    """The events of the run, in the engine's order: each row's start and end, whether it
    was backfilled, the rows in the order they started and ended, the last instant, the
    busy node-seconds and the passes."""
    submit: list[float] = job["submit"].tolist()
    nodes: list[int] = job["nodes"].tolist()
    walltime: list[float] = job["walltime"].tolist()
    setup: list[float] = job["setup"].tolist()
    target: list[float] = job["target"].tolist()
    n = len(submit)
    start = [-1.0] * n
    end = [-1.0] * n
    backfilled = [False] * n
    predicted = [0.0] * n
    started: list[int] = []  # rows in the order they started
    ended: list[int] = []  # rows in the order they ended
    queue: list[int] = []  # waiting rows, ascending: queue order
    # Running jobs by predicted end: the ends, ascending, and their rows beside them (in
    # any order among equal ends, which the shadow does not depend on).
    by_end: list[float] = []
    by_end_row: list[int] = []
    ends: list[tuple[float, int, int]] = []  # heap of (end, start order, row)
    passes = steps = 0
    busy = 0.0
    waiting = False  # the last pass left the head waiting, and no job ended since
    shadow, extra = INF, 0  # that pass's shadow time, and its extra nodes left unused
    tried = 0  # rows below this had arrived by that pass
    last_t = now
    nxt = 0  # the next row to arrive
    while ends or nxt < n:
        t = ends[0][0] if ends else INF
        if nxt < n and submit[nxt] < t:
            t = submit[nxt]
        busy += (total - free) * (t - last_t)
        now = last_t = t
        for _ in range(10_000):
            while ends and ends[0][0] == t:
                row = heapq.heappop(ends)[2]
                free += nodes[row]
                i = bisect.bisect_left(by_end, predicted[row])
                while by_end_row[i] != row:
                    i += 1
                del by_end[i]
                del by_end_row[i]
                end[row] = t
                ended.append(row)
                waiting = False
            while nxt < n and submit[nxt] == t:
                queue.append(nxt)
                nxt += 1
            passes += 1
            if free > 0 and queue:
                if waiting:
                    heads = 0
                    later, extra = _backfill(queue, bisect.bisect_left(queue, tried), free, t,
                                             order, shadow, extra, nodes, walltime)
                else:
                    heads, later, shadow, extra = _easy_starts(queue, free, t, order, by_end,
                                                               by_end_row, nodes, walltime)
                    waiting = incremental and heads < len(queue)
                tried = nxt
                # Decisions apply in order: the heads, then the backfilled jobs; the start
                # order breaks ties of equal ends as the event queue's sequence does. (By
                # index: most passes start nothing, and a list per pass costs.)
                for j in range(heads + len(later)):
                    row = queue[j] if j < heads else later[j - heads]
                    free -= nodes[row]
                    start[row] = t
                    c0 = t + setup[row] + 0.0
                    heapq.heappush(ends, (max(c0 + target[row], t), len(started), row))
                    predicted[row] = max(c0 + walltime[row], t)
                    i = bisect.bisect_right(by_end, predicted[row])
                    by_end.insert(i, predicted[row])
                    by_end_row.insert(i, row)
                    started.append(row)
                del queue[:heads]
                for row in later:
                    backfilled[row] = True
                    del queue[bisect.bisect_left(queue, row)]
            if not ends or ends[0][0] != t:
                break
        else:
            raise RuntimeError(f"more than 10,000 scheduling rounds at t={t:g}: a policy loops")
        steps += 1
        if progress is not None and steps % 2048 == 0:
            progress(len(ended))
    # fromiter with the type and count: np.array would find both out item by item first.
    return (np.fromiter(start, np.float64, n), np.fromiter(end, np.float64, n),
            np.fromiter(backfilled, np.bool_, n), np.fromiter(started, np.int64, len(started)),
            np.fromiter(ended, np.int64, len(ended)), now, busy, passes)


def _job_columns(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The trace columns a job's life and result row need, typed as JobSpec types them:
    setup as JobSpec takes it (a negative or absent one is 0) and the work the job does,
    target = min(runtime, walltime)."""
    runtime = cols["runtime"].astype(np.float64)
    walltime = cols["walltime"].astype(np.float64)
    setup = cols["setup"].astype(np.float64)
    return {"id": cols["job_id"].astype(np.int64), "submit": cols["submit"].astype(np.float64),
            "nodes": cols["nodes"].astype(np.int64), "runtime": runtime,
            "walltime": walltime, "setup": np.where(setup > 0.0, setup, 0.0),
            "target": np.minimum(runtime, walltime)}


def _easy_starts(queue: list[int], free: int, now: float, order: str,
                 by_end: list[float], by_end_row: list[int], nodes: list[int],
                 walltime: list[float]
                 ) -> tuple[int, list[int], float, int]:
    """What one `easy_pass(order)` starts: how many jobs from the head while they fit,
    then the backfilled rows in the order it tries them (`_easy_counts`'s arithmetic);
    and, when the head waits, its shadow time and the extra nodes the backfill left."""
    k = 0
    for row in queue:
        if nodes[row] > free:
            break
        free -= nodes[row]
        k += 1
    if k == len(queue):
        return k, _NO_ROWS, INF, 0
    # Shadow time and extra nodes of the blocked head: releases in ascending end order,
    # the jobs started in this pass holding their nodes until now + walltime. Every
    # release at or before the shadow time counts (`shadow_and_extra`), so how equal ends
    # are ordered among themselves does not matter.
    # `shadow_and_extra` over a generator of the merged releases gives the same, but
    # costs this loop 15% (lublin_256 and KTH, measured): the merge is written out here.
    more = sorted([(now + walltime[row], row) for row in queue[:k]]) if k else _NO_RELEASES
    need = nodes[queue[k]]
    spare, shadow = free, INF
    m, i = len(more), 0
    for j in range(len(by_end)):
        end = by_end[j]
        while i < m and more[i][0] <= end:
            if more[i][0] > shadow:
                break
            spare += nodes[more[i][1]]
            if shadow == INF and spare >= need:
                shadow = more[i][0]
            i += 1
        if end > shadow:
            break
        spare += nodes[by_end_row[j]]
        if shadow == INF and spare >= need:
            shadow = end
    else:
        while i < m and more[i][0] <= shadow:
            spare += nodes[more[i][1]]
            if shadow == INF and spare >= need:
                shadow = more[i][0]
            i += 1
    extra = spare - need if shadow < INF else 0
    later, extra = _backfill(queue, k + 1, free, now, order, shadow, extra, nodes, walltime)
    return k, later, shadow, extra


def _backfill(waiting: list[int], first: int, free: int, now: float, order: str,
              shadow: float, extra: int, nodes: list[int], walltime: list[float]
              ) -> tuple[list[int], int]:
    """The rows of `waiting[first:]` that backfill starts, in the order it tries them,
    and the extra nodes left.

    Called again at a later instant with only the rows that arrived since, when no job
    ended in between and the started jobs' predicted ends are start + walltime: the
    shadow time is then the same (the jobs backfilled by it release their nodes by it;
    the others ran in extra nodes, which the returned `extra` no longer holds), free and
    extra nodes can only have fallen, and the time only risen, so every row tried before
    would be refused again, and refusing one changes nothing for the rows after it."""
    # The candidates in the order the policy tries them (queue order itself for "first":
    # read in place, not copied, since a pass ends at free == 0).
    candidates = waiting
    if order == "best":
        candidates = sorted(waiting[first:], key=lambda r: -nodes[r])
        first = 0
    elif order == "sjf":
        candidates = sorted(waiting[first:], key=lambda r: walltime[r])
        first = 0
    later = _NO_ROWS  # a list of its own once a row starts: most passes start none
    for c in range(first, len(candidates)):
        if free == 0:
            break
        row = candidates[c]
        n = nodes[row]
        if n > free:  # backfill_way's first test, without the call (most candidates)
            continue
        way = backfill_way(n, free, now + walltime[row], shadow, extra)
        if way == NOT_NOW:
            continue
        free -= n
        if way == IN_EXTRA:
            extra -= n
        if not later:
            later = []
        later.append(row)
    return later, extra


def _record(engine: Engine, cols: dict[str, np.ndarray], job: dict[str, np.ndarray],
            start: np.ndarray, end: np.ndarray, backfilled: np.ndarray, started: np.ndarray,
            ended: np.ndarray) -> None:
    """The result rows, segments and waits the engine records, from the rows' times, by
    the engine's own operations element-wise (NumPy's float64 operations are the same
    IEEE operations, one at a time): result rows in the order jobs ended, as `_retire`
    appends them; waits in the order jobs started, segments in the order they ended, as
    RunRecorder.moved appends them."""
    ids, submit, nodes, walltime = job["id"], job["submit"], job["nodes"], job["walltime"]
    killed = job["runtime"] > job["target"]  # work_total > target
    rows = ended
    first, last = start[rows], end[rows]
    held = last - first
    n = nodes[rows]
    c0 = first + job["setup"][rows] + 0.0
    target = job["target"][rows]
    # `_progress`: no compute before c0, then min(elapsed, target) at speed 1.
    compute = np.where(last <= c0, 0.0, np.minimum(last - c0, target))
    zeros = np.zeros(len(rows))
    class_code = np.zeros(len(rows), dtype=np.int64)
    letters = cols["job_class"][rows]
    for code, letter in enumerate(CLASS_CODES):
        class_code[letters == letter] = code
    engine.results.extend({
        "id": ids[rows], "submit": submit[rows], "first_start": first, "end": last,
        "wait": first - submit[rows], "executed": 0.0 + held, "nodes": n, "alloc_nodes": n,
        "walltime": walltime[rows] + 0.0, "orig_walltime": walltime[rows],
        "user": cols["user"][rows], "project": cols["group"][rows],
        "queue": cols["queue"][rows], "job_class": class_code,
        "final_state": np.where(killed[rows], _KILLED_CODE, 0), "preemptions": 0,
        "failures": 0, "checkpoints": 0, "busy_node_s": 0.0 + n * held,
        "useful_node_s": 0.0 + n * compute, "lost_node_s": zeros,
        "ckpt_node_s": 0.0 + n * zeros, "restart_node_s": 0.0 + n * zeros,
        "setup_node_s": 0.0 + n * np.minimum(job["setup"][rows], held), "t_ckpt": zeros,
        "t_pre": zeros + 0.0, "ckpt_by_system": int(engine.options.checkpoint.owner_is_system),
        "requested_start": cols["req_start"][rows].astype(np.float64), "start_delay": zeros,
        "backfilled": backfilled[rows].astype(np.int64), "waste_node_s": zeros,
    })
    rec = engine.recorder
    if rec is None:
        return
    rec.add_waits(ids[started].tobytes(), submit[started].tobytes(),
                  start[started].tobytes(), (nodes[started] * walltime[started]).tobytes())
    rec.add_segments(ids[ended].tobytes(), start[ended].tobytes(), end[ended].tobytes(),
                     nodes[ended].tobytes(), np.full(len(ended), -1, np.int64).tobytes(),
                     np.where(killed[ended], KILLED_, COMPLETED_).astype(np.int64).tobytes())
