"""Workload transformations for experiments (the `schedd workload` commands)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .swf import Trace


def with_estimate_accuracy(trace: Trace, alpha: float) -> Trace:
    """The checkpoint-backfilling paper's §4.2 transform of requested times:
    t_sch = t_run + alpha x (t_req - t_run). alpha = 0 gives exact estimates, 1 the
    trace's own. Jobs without a requested time or a runtime keep theirs."""
    if alpha < 0.0:
        raise ValueError(f"alpha must be >= 0, got {alpha:g}")
    cols = dict(trace.columns)
    run = cols["runtime"].astype(np.float64)
    req = cols["req_time"].astype(np.float64)
    known = (req > 0) & (run >= 0)
    new = np.where(known, run + alpha * (req - run), req)
    cols["req_time"] = np.round(new, 3).astype(cols["req_time"].dtype, copy=False)
    return replace(trace, columns=cols)
