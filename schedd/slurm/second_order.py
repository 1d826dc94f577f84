"""Which comes first in a second, the backfill cycle or the background thread's tick,
and where the decay thread's run falls among them, read off an imported log by
replaying its first jobs each way.

The two are timers of different threads at arbitrary phases (the reference runs'
timelines have the cycle first in 9 of 16 runs at their start), and the log says where
they fell only through what they started. `infer_phases` reads the order from where the
submissions fell between them, when the quick starts say that; otherwise this module
simulates the log's jobs up to the last start of its first FIRST_JOBS under each order
and keeps the one under which more of those jobs start within 2 s of the log's start
(then the smaller total difference; a tie keeps the tick first, the emulation's order
without this reading). Jobs submitted after the last of those starts cannot move them,
so the prefix decides as the whole log would.

The decay thread (priority/multifactor) recomputes priorities once every
PriorityCalcPeriod, at a second of the period that slurmctld's start set and a log does
not keep: `decay_phase_of` replays the log's first DECAY_JOBS started jobs with the
thread at each second of the period (at most DECAY_PHASES of them, evenly spaced; none
past the first dozen where those all do alike) and keeps the earliest of those under
which most start within 2 s of the log. It runs
at slurmctld's start's instant within the second, while the cycle's
and the tick's instants drift; where a cycle or a tick shares its second, whether it sees
the old priorities or the new is which came first. `decay_after` replays the log's first
DECAY_JOBS started jobs with the decay after none, one or both of the second's timers
and keeps the best (a tie keeps 2, the option's default). docs/slurm.md, "What runs
when".
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
# The decay's place is scored on more: a run only matters where it reorders waiting jobs,
# once every PriorityCalcPeriod (a minute in the reference runs, which submit 30 jobs in
# 75-90 s).
DECAY_JOBS = 60
DECAY_PHASES = 60  # seconds of PriorityCalcPeriod tried, at most
# A prefix of at most this many jobs is replayed: the log's first jobs may include one
# that waited for days, whose start a whole busy log's prefix would be needed to reach.
MAX_PREFIX = 200
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


def read_orders(setup: Any, policy: Any, trace: Any, said: str | None) -> str | None:
    """After `SlurmSetup.bind` read an imported log's phases into a `slurm` policy: where
    they leave the order of cycle and tick open, set it from the log's first jobs
    (`cycle_first`), then, under priority/multifactor, the decay thread's place among
    them (`decay_after`). Returns `said` with those readings added."""
    lines, knobs = [], []
    if policy.options.backfill_after_tick < 0:
        found = cycle_first(setup, policy, trace)
        if found is not None:
            first, line = found
            if first:
                policy.options = replace(policy.options, backfill_after_tick=0.0)
            lines.append(line)
            knobs.append("backfill_after_tick=0|1")
    if policy.options.decay_phase < 0:
        phased = decay_phase_of(setup, policy, trace)
        if phased is not None:
            phase, line = phased
            # The thread's clock is set up from the option: set up again (nothing ran).
            policy.configure(setup.conf, policy.assocs, qos=setup.qos, decay_phase=phase)
            lines.append(line)
            knobs.append("decay_phase=S")
    if policy.options.decay_order < 0:
        placed = decay_after(setup, policy, trace)
        if placed is not None:
            after, line = placed
            policy.options = replace(policy.options, decay_order=float(after))
            lines.append(line)
            knobs.append("decay_order=0|1|2")
    if not lines:
        return said
    line = "; ".join(lines)
    if said and " (--opt " in said and said.endswith(" to set them)"):
        said = said.replace(" (--opt ", f"; {line} (--opt ", 1)
        new = [knob for knob in knobs if knob.split("=")[0] + "=" not in said]
        return said[:-len(" to set them)")] + "".join(f" / {k}" for k in new) + \
            " to set them)"
    return (f"read off the log: {line} (--opt {' / '.join(knobs)} to set "
            f"{'it' if len(knobs) == 1 else 'them'})")


def _first_started(trace: Any, jobs: int) -> tuple[Any, np.ndarray, np.ndarray] | None:
    """The log up to the last start of its first `jobs` (by submission), and the ids and
    waits of those of them that started; None where fewer than half started."""
    cols = trace.columns
    if "started_by" not in cols or len(cols["job_id"]) == 0:
        return None
    order = np.lexsort((cols["job_id"], cols["submit"]))[:jobs]
    started = order[cols["wait"][order] >= 0]
    if len(started) < min(jobs, len(cols["job_id"])) // 2 or len(started) < FIRST_JOBS // 2:
        return None
    ends = cols["submit"][started] + cols["wait"][started]
    limit = int(np.count_nonzero(cols["submit"] <= float(np.max(ends))))
    if limit > MAX_PREFIX:
        # Only the jobs that started before the prefix's last submission are scored:
        # a later one could have been moved by jobs the prefix leaves out.
        cut = float(np.sort(cols["submit"])[MAX_PREFIX - 1])
        started = started[ends <= cut]
        limit = MAX_PREFIX
        if len(started) < FIRST_JOBS // 2:
            return None
    prefix = select(trace, limit=max(limit, len(order)))
    return prefix, cols["job_id"][started], cols["wait"][started]


def _scores(setup: Any, policy: Any, prefix: Any, ids: np.ndarray, waits: np.ndarray,
            variants: dict[Any, dict[str, float]]) -> dict[Any, tuple[int, float]]:
    """Each variant of the policy's options replayed on the prefix, scored."""
    scores = {}
    for key, changes in variants.items():
        trial: Any = SlurmPolicy(replace(policy.options, **changes), policy.cluster)
        # Its own associations: a run charges usage to them (fair-share).
        trial.configure(setup.conf, copy.deepcopy(setup.assocs), policy.table, None,
                        setup.qos)
        engine = EngineOptions(**trial.engine_overrides())
        scores[key] = _score(simulate(prefix, policy.cluster, trial, engine_options=engine),
                             ids, waits)
    return scores


def cycle_first(setup: Any, policy: Any, trace: Any) -> tuple[bool, str] | None:
    """Whether the log's first jobs start as they did with the cycle before the tick
    (True) or after it (False), and the sentence that says so; None where the log
    cannot say (too few started jobs, no backfill)."""
    if not setup.conf.sched.backfill:
        return None
    found = _first_started(trace, FIRST_JOBS)
    if found is None:
        return None
    prefix, ids, waits = found
    scores = _scores(setup, policy, prefix, ids, waits,
                     {first: {"backfill_after_tick": 0.0 if first else -1.0}
                      for first in (False, True)})
    first = scores[True] > scores[False]
    return first, (f"backfill cycles {'before' if first else 'after'} the background tick "
                   f"in the second (the log's first {len(ids)} started jobs: "
                   f"{scores[first][0]} start within {TOLERANCE:g} s of the log that way, "
                   f"{scores[not first][0]} the other)")


def decay_phase_of(setup: Any, policy: Any, trace: Any) -> tuple[float, str] | None:
    """The second of PriorityCalcPeriod (from time 0) at which the decay thread ran, as
    the log's first DECAY_JOBS jobs say, and the sentence that says so; None where it
    cannot matter (priority/basic) or the log cannot say."""
    prio = setup.conf.priority
    if not prio.multifactor:
        return None
    found = _first_started(trace, DECAY_JOBS)
    if found is None:
        return None
    prefix, ids, waits = found
    period = max(int(prio.calc_period), 1)
    step = -(-period // DECAY_PHASES)
    tried = [float(p) for p in range(0, period, step)]
    # A dozen seconds spread over the period first: where they all explain the first
    # jobs alike, the log does not say (a trace no Slurm made, a queue the decay never
    # reorders) and the rest are not tried.
    spread = tried[::max(1, len(tried) // 12)]
    scores = _scores(setup, policy, prefix, ids, waits,
                     {p: {"decay_phase": p} for p in spread})
    if len(set(scores.values())) == 1:
        return None
    scores.update(_scores(setup, policy, prefix, ids, waits,
                          {p: {"decay_phase": p} for p in tried if p not in scores}))
    # Several seconds often explain the prefix alike (between two of the thread's runs
    # nothing it decides changes): the earliest of them.
    best = max(scores, key=lambda p: (scores[p], -p))
    alike = sum(score == scores[best] for score in scores.values())
    return best, (f"the decay thread's runs {best:g} s past each {period:g} s (of the log's "
                  f"first {len(ids)} started jobs, {scores[best][0]} start within "
                  f"{TOLERANCE:g} s of the log with it there; {alike} of the {len(scores)} "
                  f"seconds tried do as well)")


def decay_after(setup: Any, policy: Any, trace: Any) -> tuple[int, str] | None:
    """How many of its second's timers (cycle, tick) come before the decay thread's run
    there, as the log's first DECAY_JOBS jobs say, and the sentence that says so; None
    where it cannot matter (priority/basic) or the log cannot say."""
    if not setup.conf.priority.multifactor:
        return None
    found = _first_started(trace, DECAY_JOBS)
    if found is None:
        return None
    prefix, ids, waits = found
    timers = 3 if setup.conf.sched.backfill else 2  # without backfill: the tick alone
    scores = _scores(setup, policy, prefix, ids, waits,
                     {after: {"decay_order": float(after)} for after in range(timers)})
    default = timers - 1
    best = max(scores, key=lambda after: (scores[after], after == default))
    timers_are = "its second's backfill cycle and tick" if timers == 3 else "its second's tick"
    places = ("before", "between", "after") if timers == 3 else ("before", "after")
    counts = ", ".join(str(scores[a][0]) for a in sorted(scores))
    return best, (f"the decay thread runs {places[best]} {timers_are} (of the log's first "
                  f"{len(ids)} started jobs, {counts} start within {TOLERANCE:g} s of the "
                  f"log with it {', '.join(places[:-1])} or {places[-1]})")
