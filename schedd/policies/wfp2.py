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

from ..core.job import Job


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


def wfp2_order_keyed(jobs: Iterable[Job], now: float, total_nodes: int) -> list[Job]:
    """The same order with a key function (what rt_common had)."""
    def key(job: Job) -> tuple[float, float, int]:
        queued = now - job.submit
        score = queued * queued / job.walltime ** 3 * job.nodes / total_nodes
        return (-score, job.submit, job.id)

    return sorted(jobs, key=key)
