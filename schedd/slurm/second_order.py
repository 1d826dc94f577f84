"""Which comes first in a second, the backfill cycle or the background thread's tick,
read off an imported log by replaying its first jobs both ways.

The two are timers of different threads at arbitrary phases (the reference runs'
timelines have the cycle first in 9 of 16 runs at their start), and the log says where
they fell only through what they started. `infer_phases` reads the order from where the
submissions fell between them, when the quick starts say that; otherwise this module
simulates the log's jobs up to the last start of its first FIRST_JOBS under each order
and keeps the one under which more of those jobs start within 2 s of the log's start
(then the smaller total difference; a tie keeps the tick first, the emulation's order
without this reading). Jobs submitted after the last of those starts cannot move them,
so the prefix decides as the whole log would. docs/slurm.md, "What runs when".
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..core.engine import EngineOptions
from ..sim import simulate
from ..traces.normalize import select
from .policy import SlurmPolicy

FIRST_JOBS = 30  # the log's first jobs (by submission) the two orders are scored on
TOLERANCE = 2.0  # s: "as it did", as bench/slurm_fidelity.py counts it


def _score(result: Any, ids: np.ndarray, waits: np.ndarray) -> tuple[int, float]:
    """(jobs within TOLERANCE of the log's wait, minus the summed difference)."""
    res = result.results
    index = {int(j): i for i, j in enumerate(res["id"])}
    close = 0
    total = 0.0
    for jid, wait in zip(ids, waits, strict=True):
        i = index.get(int(jid))
        start = float(res["first_start"][i]) if i is not None else -1.0
        if start < 0:
            total += 1e9  # never started where the log has a start
            continue
        diff = abs(math.floor(start) - float(res["submit"][i]) - float(wait))
        close += diff <= TOLERANCE
        total += diff
    return close, -total


def read_cycle_order(setup: Any, policy: Any, trace: Any, said: str | None) -> str | None:
    """After `SlurmSetup.bind` read an imported log's phases into a `slurm` policy: where
    they leave the order of cycle and tick open, set it from the log's first jobs
    (`cycle_first`). Returns `said` with that reading added."""
    if policy.options.backfill_after_tick >= 0:
        return said
    found = cycle_first(setup, policy, trace)
    if found is None:
        return said
    first, line = found
    if first:
        policy.options = replace(policy.options, backfill_after_tick=0.0)
    if said and " (--opt " in said:
        return said.replace(" (--opt ", f"; {line} (--opt ", 1)
    return f"read off the log: {line} (--opt backfill_after_tick=0|1 to set it)"


def cycle_first(setup: Any, policy: Any, trace: Any) -> tuple[bool, str] | None:
    """Whether the log's first jobs start as they did with the cycle before the tick
    (True) or after it (False), and the sentence that says so; None where the log
    cannot say (too few started jobs, no backfill)."""
    cols = trace.columns
    if not setup.conf.sched.backfill or "started_by" not in cols or len(cols["job_id"]) == 0:
        return None
    order = np.lexsort((cols["job_id"], cols["submit"]))[:FIRST_JOBS]
    started = order[cols["wait"][order] >= 0]
    if len(started) < FIRST_JOBS // 2:
        return None
    last_start = float(np.max(cols["submit"][started] + cols["wait"][started]))
    limit = int(np.count_nonzero(cols["submit"] <= last_start))
    prefix = select(trace, limit=max(limit, len(order)))
    ids, waits = cols["job_id"][started], cols["wait"][started]
    scores = {}
    for first in (False, True):
        options = replace(policy.options, backfill_after_tick=0.0 if first else -1.0)
        trial: Any = SlurmPolicy(options, policy.cluster)
        # Its own associations: a run charges usage to them (fair-share).
        trial.configure(setup.conf, copy.deepcopy(setup.assocs), policy.table, None,
                        setup.qos)
        engine = EngineOptions(**trial.engine_overrides())
        scores[first] = _score(simulate(prefix, policy.cluster, trial, engine_options=engine),
                               ids, waits)
    first = scores[True] > scores[False]
    return first, (f"backfill cycles {'before' if first else 'after'} the background tick "
                   f"in the second (the log's first {len(ids)} started jobs: "
                   f"{scores[first][0]} start within {TOLERANCE:g} s of the log that way, "
                   f"{scores[not first][0]} the other)")
