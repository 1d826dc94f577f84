"""Cobalt's wfp2 queue order (rt_common; the real-time paper's simulator orders every queue
by it). Compiled by mypyc at install (setup.py); it runs as plain Python too.

easy-wfp2 re-sorts its whole queue every pass (the order changes with the time), and on a
deep queue that sort is most of the run. `wfp2_order` computes the scores in one compiled
loop, where `sorted(key=...)` called a Python function per job and compared (score,
submit, id) tuples (`wfp2_order_keyed`, the reference it is held to in
tests/test_realtime_policies.py). When the jobs come in (submit, id) order, as the view's
queue does, a stable sort of the scores alone gives that order (equal scores keep their
(submit, id) order); otherwise, or with a NaN score, it sorts (score, submit, id, position)
tuples: the same keys, positions deciding only where the stable sort kept input order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final

from ..core.job import Job
from ..core.view import View
from .backfill import _shadow_counts


def wfp2_order(jobs: Iterable[Job], now: float, total_nodes: int) -> list[Job]:
    """Cobalt's wfp2 utility, descending: (queued s)^2 / (walltime s)^3 x nodes / machine;
    ties (e.g. everything just submitted) in queue order."""
    listed = list(jobs)
    scores: list[float] = []
    # The view's queue is in (submit, id) order, and a stable sort of the scores alone
    # keeps that order among equal scores: the key sort's order, with floats compared
    # instead of tuples. Checked, not assumed; a NaN score (no order) goes the long way.
    in_order = True
    last_submit, last_id = -math.inf, 0
    for job in listed:
        queued = now - job.submit
        score = queued * queued / job.walltime ** 3 * job.nodes / total_nodes
        scores.append(-score)
        if in_order:
            submit, job_id = job.submit, job.id
            in_order = (submit > last_submit or (submit == last_submit and job_id > last_id)) \
                and score == score
            last_submit, last_id = submit, job_id
    if in_order:
        return [listed[k] for k in sorted(range(len(listed)), key=scores.__getitem__)]
    keyed = [(scores[k], job.submit, job.id, k) for k, job in enumerate(listed)]
    keyed.sort()
    return [listed[key[3]] for key in keyed]


# Below 2^17 an integral walltime's cube is exact in a double (w^3 < 2^51), and
# `_exact_cubes` checks once per process that libm's pow (what `w ** 3` calls) returns
# exactly that cube for every such walltime, so `w * w * w` can stand in for it.
_CUBES_EXACT_BELOW: Final = 131072.0
_cubes_checked = False
_cubes_exact = False


def _exact_cubes() -> bool:
    global _cubes_checked, _cubes_exact
    if not _cubes_checked:
        exact = True
        for w in range(1, int(_CUBES_EXACT_BELOW)):
            x = float(w)
            if x ** 3 != x * x * x:
                exact = False
                break
        _cubes_exact = exact
        _cubes_checked = True
    return _cubes_exact


class _Scored:
    """A queue's wfp2 scores split for an EASY pass with `free` free nodes: the narrow jobs
    (at most `free` nodes; their positions in the queue and their -scores, in queue order)
    and the first job of the full order among the wider ones (`wide`, -1 if none)."""

    def __init__(self) -> None:
        self.narrow: list[int] = []
        self.scores: list[float] = []
        self.wide = -1
        self.wide_score = math.inf


def _score_split(jobs: list[Job], now: float, total_nodes: int, free: int) -> _Scored | None:
    """The scores as `wfp2_order` computes them, or None (then only the whole order will
    do) for a queue out of (submit, id) order, a NaN score or a walltime outside (0,
    1e100)."""
    exact = _exact_cubes()
    split = _Scored()
    narrow, scores = split.narrow, split.scores
    wide = -1
    wide_score = math.inf
    last_submit, last_id = -math.inf, 0
    for k, job in enumerate(jobs):
        submit, job_id, walltime = job.submit, job.id, job.walltime
        if not (submit > last_submit or (submit == last_submit and job_id > last_id)):
            return None
        last_submit, last_id = submit, job_id
        if not 0.0 < walltime < 1e100:
            return None
        queued = now - submit
        score = -(queued * queued / _cube(walltime, exact) * job.nodes / total_nodes)
        if score != score:
            return None
        if job.nodes <= free:
            narrow.append(k)
            scores.append(score)
        elif score < wide_score:  # strictly: the first of equal scores comes first
            wide, wide_score = k, score
    split.wide, split.wide_score = wide, wide_score
    return split


def _cube(walltime: float, exact: bool) -> float:
    """`walltime ** 3` for 0 < walltime < 1e100 (`exact`: what `_exact_cubes` found)."""
    if exact and walltime < _CUBES_EXACT_BELOW and walltime == float(int(walltime)):
        return walltime * walltime * walltime
    return math.pow(walltime, 3.0)  # the same libm pow as `walltime ** 3`


def wfp2_easy_order(jobs: list[Job], now: float, total_nodes: int, free: int) -> list[Job]:
    """The part of `wfp2_order` an EASY pass on a node pool with `free` free nodes can act
    on, in that order: every job of at most `free` nodes, and the first (highest-score) job
    of more, where the full order has it. On a pool nodes only get taken during a pass, so
    a job wider than `free` never starts: it can only be the blocked head, and the first
    of them in the order is the only one that can be (every job before it fits in `free`).
    The pass starts the same jobs on this order as on the whole one (the head and its
    shadow are the same, and the jobs left out would only be skipped). Scores as
    `wfp2_order`; a queue out of (submit, id) order, a NaN score or a walltime outside (0,
    1e100) gets the whole order."""
    split = _score_split(jobs, now, total_nodes, free)
    if split is None:
        return wfp2_order(jobs, now, total_nodes)
    narrow, scores, wide, wide_score = split.narrow, split.scores, split.wide, split.wide_score
    # In (submit, id) order, a stable sort of the scores alone is the full order's
    # (score, submit, id) among the narrow jobs; the wide one goes before the first narrow
    # job that comes after it there: a lower -score, or an equal one later in the queue.
    ranked = sorted(range(len(narrow)), key=scores.__getitem__)
    out: list[Job] = []
    placed = wide < 0
    for r in ranked:
        if not placed and (scores[r] > wide_score
                           or (scores[r] == wide_score and narrow[r] > wide)):
            out.append(jobs[wide])
            placed = True
        out.append(jobs[narrow[r]])
    if not placed:
        out.append(jobs[wide])
    return out


# Jobs started from the head in one pass before `wfp2_easy_queue` stops picking them one
# by one (a scan of the narrow jobs each) and sorts them all instead.
_PICKS: Final = 16


def wfp2_easy_queue(view: View, jobs: list[Job], total_nodes: int, free: int) -> list[Job]:
    """A queue on which `easy_pass` (on a node pool with `free` free nodes, nothing held
    back) starts exactly the jobs it starts on `wfp2_order(jobs)`, and which holds only
    what that pass can act on: the jobs that start from the head, the blocked head, and
    the backfill candidates that can start, each in the wfp2 order.

    As in `wfp2_easy_order`, only narrow jobs (at most `free` nodes) can start and the
    first wide one can only be the head. The jobs that start from the head and the head
    are picked from the narrow ones one at a time; then, with the head's shadow time and
    extra nodes, a candidate that does not fit in the nodes left, or would run past the
    shadow time on more than the extra nodes, can never start in this pass (a pass only
    takes nodes and extra nodes), so only the others are sorted: a handful where the
    queue holds hundreds (docs/benchmarks.md, deep queues)."""
    now = view.now
    split = _score_split(jobs, now, total_nodes, free)
    if split is None:
        return wfp2_order(jobs, now, total_nodes)
    narrow, scores, wide, wide_score = split.narrow, split.scores, split.wide, split.wide_score
    m = len(narrow)
    taken = [False] * m
    started: list[Job] = []
    left = free
    head = -1
    while True:
        if len(started) == _PICKS:  # many start: the sorted order is cheaper
            return wfp2_easy_order(jobs, now, total_nodes, free)
        best = -1
        best_score = 0.0
        for r in range(m):
            if not taken[r] and (best < 0 or scores[r] < best_score):
                best, best_score = r, scores[r]
        if best >= 0 and (wide < 0 or best_score < wide_score
                          or (best_score == wide_score and narrow[best] < wide)):
            taken[best] = True
            job = jobs[narrow[best]]
            nodes = job.nodes
            if 1 <= nodes <= left:  # PoolState.allocate's test
                left -= nodes
                started.append(job)
                continue
            head = narrow[best]
        else:
            head = wide
        break
    if head < 0:
        return started  # everything starts
    shadow, extra = _shadow_counts(view, jobs[head].nodes, left, started)
    kept: list[int] = []
    kept_scores: list[float] = []
    for r in range(m):
        if taken[r]:
            continue
        job = jobs[narrow[r]]
        nodes = job.nodes
        if nodes > left or (now + job.walltime > shadow and nodes > extra):
            continue  # backfill_way: NOT_NOW now, and free and extra only go down
        kept.append(narrow[r])
        kept_scores.append(scores[r])
    started.append(jobs[head])
    for r in sorted(range(len(kept)), key=kept_scores.__getitem__):
        started.append(jobs[kept[r]])
    return started


def wfp2_order_keyed(jobs: Iterable[Job], now: float, total_nodes: int) -> list[Job]:
    """The same order with a key function (what rt_common had)."""
    def key(job: Job) -> tuple[float, float, int]:
        queued = now - job.submit
        score = queued * queued / job.walltime ** 3 * job.nodes / total_nodes
        return (-score, job.submit, job.id)

    return sorted(jobs, key=key)
