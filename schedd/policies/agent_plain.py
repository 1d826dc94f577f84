"""The agent policy's episode on a plain node pool, on row numbers and times only: the fast
path of schedd.gym's `PickJob` (issue 36, speed), as easy_plain.py is `schedd simulate`'s
for EASY. Compiled by mypyc (setup.py).

When nothing but submissions, starts and ends can happen (easy_plain.plain_engine says
when: a node pool, no failures, notices, elastic commands, cancellations, dedicated
starts or periodic checkpoints), a job's life is its trace row and two times, and the
general engine's Job, execution record, view and event queue only repeat what the rows
say. `PlainEpisode` keeps the rows and runs the engine's instants in the engine's order
(easy_plain's loop: ends in the order their jobs started, then arrivals in queue order,
then one pass, again while ends fall at the instant) with `AgentPolicy.schedule`'s pass:

* the chosen job still waits and does not fit (most passes): EASY around it, the chosen
  job first, then queue order (`agent_rows.blocked_pass`), by easy_plain's `_easy_starts`;
  and where no job ended since the last such pass (only arrivals), by easy_plain's
  `_backfill` over the arrivals alone, under that pass's shadow time and extra nodes, as
  easy_plain's loop does (`_backfill`'s docstring says why that is exact): the chosen job
  is first in the order, the others in queue order, and arrivals join at the end;
* otherwise the chosen job starts if it fits, then the chooser picks from the rest
  (stopping here: `advance` returns, and the learner's answer resumes it), each pick
  starting while it fits; a pick that does not fit stays chosen and, with backfilling,
  EASY runs on [started, chosen, rest] (`easy_pass` of the same order).

Starts apply in the pass's order, a start being backfilled when an earlier job still waits
(`Engine._start`), and the observation is `AgentPolicy.observe`'s, value for value. The
episode ends with easy_plain's `_record`, so the engine holds the results the general
engine gives. tests/test_gym_plain.py compares both paths step by step (observations,
masks, rewards, results) on random sequences and choices.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from heapq import heappop, heappush
from types import ModuleType
from typing import Final

import numpy as np

from ..core.engine import Engine
from ..core.job import JobClass
from .easy_plain import _backfill, _easy_starts, _job_columns, _record
from .scoring import CLASS, FITS, JOB_FEATURES, NODES, SUBMIT, WAIT

native: ModuleType | None
try:
    from . import _agent_obs as native  # the observation in C (_agent_obs.c)
except ImportError:  # not built: _observe_py below
    native = None

INF: Final = float("inf")
_zeros: Final = np.zeros  # a static, not an attribute lookup per choice
# The class column's value: JobClass's index (agent_rows._CLASS_INDEX), by letter.
_CLASS_OF_LETTER: Final[dict[str, float]] = {c.value: float(i) for i, c in enumerate(JobClass)}


class PlainEpisode:
    """One sequence (trace columns in queue order, checked by `plain_engine`) run by the
    agent policy with `window`, `running` and `backfill` as AgentOptions give them.
    `advance(-1)` runs to the first choice; `advance(slot)` answers it and runs to the
    next. Each returns True at the end of the sequence, else the choice's observation is
    in `jobs`, `machine`, `n` and `window_rows`."""

    def __init__(self, cols: dict[str, np.ndarray], total: int, window: int, running: int,
                 backfill: bool, n_features: int):
        self.cols = cols
        job = _job_columns(cols)
        self.job = job
        self.ids: list[int] = job["id"].tolist()
        self.submit: list[float] = job["submit"].tolist()
        self.nodes: list[int] = job["nodes"].tolist()
        self.walltime: list[float] = job["walltime"].tolist()
        self.setup: list[float] = job["setup"].tolist()
        self.target: list[float] = job["target"].tolist()
        n = len(self.ids)
        self.n_jobs = n
        # Each row's fixed observation columns (PRESENT..CLASS; WAIT and FITS are filled
        # per choice), as AgentPolicy.observe / agent_rows.align read them from the Job.
        static = np.zeros((n, n_features))
        static[:, 0] = 1.0
        static[:, NODES] = job["nodes"]
        static[:, 3] = job["walltime"]  # walltime, then the estimate: no notices here
        static[:, 4] = job["walltime"]
        static[:, SUBMIT] = job["submit"]
        static[:, 6] = cols["user"]
        static[:, 7] = cols["group"]
        static[:, 8] = cols["queue"]
        static[:, CLASS] = [_CLASS_OF_LETTER[c] for c in cols["job_class"].tolist()]
        self.static = static
        self.total = total
        self.window = window
        self.running = running
        self.backfill = backfill
        self.n_features = n_features
        # The C entry point, bound once (a module attribute costs a lookup per choice).
        self._fill: Callable[..., None] | None = (
            native.fill if native is not None and n_features == len(JOB_FEATURES) else None)
        self._jobs_shape = (window, n_features)
        self.free = total
        self.now = 0.0
        self.last_t = 0.0
        self.busy = 0.0
        self.passes = 0
        self.next_row = 0
        self.queue: list[int] = []  # waiting rows, ascending: queue order
        self.ends: list[tuple[float, int, int]] = []  # heap of (end, start order, row)
        # Running rows by (predicted end, job id), as View.running_by_end orders them:
        # their ends and rows (easy_plain's lists; the shadow reads them too). Kept by
        # hand, not as a list of (end, id) pairs: no pair is built or compared.
        self.by_end: list[float] = []
        self.by_end_row: list[int] = []
        self.predicted = [0.0] * n
        self.start = [-1.0] * n
        self.end = [-1.0] * n
        self.backfilled = [False] * n
        self.started: list[int] = []
        self.ended: list[int] = []
        self.head = -1  # the chosen row, waiting to start
        # The last pass left the chosen job waiting after EASY's backfilling, and no job
        # ended since: its shadow time and the extra nodes left, and the rows below
        # `tried` had arrived by it (easy_plain's loop keeps the same three). Exact when a
        # started job's predicted end is start + walltime, as the pass reckoned it.
        self.incremental = not bool((job["setup"] > 0.0).any())
        self.waiting = False
        self.shadow = INF
        self.extra = 0
        self.tried = 0
        # The pass a choice stopped: its rest of the queue, the rows it started so far,
        # and the free nodes it reckons with.
        self.in_pass = False
        self.rest: list[int] = []
        self.picked: list[int] = []
        self.pass_free = 0
        self.jobs = np.zeros((window, n_features))
        self.machine = np.zeros(5 + 2 * running)
        self.n = 0
        self.window_rows: list[int] = []

    def advance(self, slot: int) -> bool:
        """Answer the pending choice with `slot` (-1 at the start), then run to the next
        choice (False) or to the end of the sequence (True)."""
        if self.in_pass:
            if not self._choose(self.rest[slot]):
                return False
            if not self._after_pass():
                return False
        while True:
            ends = self.ends
            t = ends[0][0] if ends else INF
            if self.next_row < self.n_jobs and self.submit[self.next_row] < t:
                t = self.submit[self.next_row]
            if t == INF:
                return True
            self.busy += (self.total - self.free) * (t - self.last_t)
            self.now = self.last_t = t
            self._events(t)
            self.passes += 1
            if self._pass():
                return False
            if not self._after_pass():
                return False

    def _after_pass(self) -> bool:
        """The rest of the instant: while ends fall at it, their events and a pass (the
        engine's 10,000-round guard is not needed: every job's work is positive)."""
        t = self.now
        while self.ends and self.ends[0][0] == t:
            self._events(t)
            self.passes += 1
            if self._pass():
                return False
        return True

    def _events(self, t: float) -> None:
        ends = self.ends
        while ends and ends[0][0] == t:
            row = heappop(ends)[2]
            self.free += self.nodes[row]
            i = bisect_left(self.by_end, self.predicted[row])
            while self.by_end_row[i] != row:
                i += 1
            del self.by_end[i]
            del self.by_end_row[i]
            self.end[row] = t
            self.ended.append(row)
            self.waiting = False
        n = self.n_jobs
        while self.next_row < n and self.submit[self.next_row] == t:
            self.queue.append(self.next_row)
            self.next_row += 1

    def _pass(self) -> bool:
        """One pass of AgentPolicy.schedule; True when it stopped for a choice."""
        queue = self.queue
        if not queue:
            return False
        head = self.head
        free = self.free
        if head >= 0 and self.nodes[head] > free:
            # agent_rows.blocked_pass: EASY around the chosen job, which stays first.
            if self.backfill and free > 0:
                if self.waiting:  # only arrivals since: try them alone
                    later, self.extra = _backfill(
                        queue, bisect_left(queue, self.tried), free, self.now,
                        "first", self.shadow, self.extra, self.nodes, self.walltime)
                else:
                    order = queue
                    if queue[0] != head:
                        order = [head, *[r for r in queue if r != head]]
                    _, later, self.shadow, self.extra = self._easy_starts(order, free)
                    self.waiting = self.incremental
                self.tried = self.next_row
                if later:
                    self._apply(later)
            return False
        self.waiting = False
        self.rest = list(queue)
        self.picked = []
        self.pass_free = free
        return not self._choose(head)

    def _choose(self, head: int) -> bool:
        """The pass's loop from `head` (-1: none chosen): picks start while they fit; True
        when the pass is done, False when it stopped for a choice (observed)."""
        rest, picked, nodes = self.rest, self.picked, self.nodes
        while rest:
            if head < 0:
                self._observe()
                self.in_pass = True
                return False
            if nodes[head] > self.pass_free:
                break
            self.pass_free -= nodes[head]
            picked.append(head)
            rest.remove(head)
            head = -1
        self.in_pass = False
        self.head = head
        if head >= 0 and self.backfill:
            rest.remove(head)
            _, later, self.shadow, self.extra = self._easy_starts(
                [*picked, head, *rest], self.free)
            # The next pass, at an instant with arrivals only, tries them alone: the
            # jobs started here hold their nodes until now + walltime, as reckoned.
            self.waiting = self.incremental
            self.tried = self.next_row
            self._apply([*picked, *later])
        elif picked:
            self._apply(picked)
        return True

    def _easy_starts(self, order: list[int], free: int) -> tuple[int, list[int], float, int]:
        """easy_plain._easy_starts(order, free, now, "first", ...) on this episode's rows.
        (A C version, converting the lists at each call, was slower on lublin_256, whose
        queues at a pass are short: 41-48k against 46-57k steps/s with EASY.)"""
        return _easy_starts(order, free, self.now, "first", self.by_end, self.by_end_row,
                            self.nodes, self.walltime)

    def _apply(self, rows: list[int]) -> None:
        """Start `rows` in order, as Engine._start does."""
        t = self.now
        queue = self.queue
        for row in rows:
            if queue[0] == row:
                del queue[0]
            else:  # an earlier-submitted job still waits
                self.backfilled[row] = True
                del queue[bisect_left(queue, row)]
            self.free -= self.nodes[row]
            self.start[row] = t
            c0 = t + self.setup[row] + 0.0
            heappush(self.ends, (max(c0 + self.target[row], t), len(self.started), row))
            end = max(c0 + self.walltime[row], t)
            self.predicted[row] = end
            # After the ends before it and equal ends of smaller ids (bisect.insort of
            # (end, id) into the view's list).
            i = bisect_right(self.by_end, end)
            job_id = self.ids[row]
            while i > 0 and self.by_end[i - 1] == end and self.ids[self.by_end_row[i - 1]] > job_id:
                i -= 1
            self.by_end.insert(i, end)
            self.by_end_row.insert(i, row)
            self.started.append(row)

    def _observe(self) -> None:
        """AgentPolicy.observe's rows and machine row for the pass's rest and picks: in C
        where it is built (a third of `_observe_py`'s time, which goes to NumPy's calls
        and boxed floats), else `_observe_py`."""
        fill = self._fill
        if fill is None:
            self._observe_py()
            return
        rest, picked = self.rest, self.picked
        n = min(self.window, len(rest))
        win = rest[:n]
        self.jobs = _zeros(self._jobs_shape)
        self.machine = _zeros(5 + 2 * self.running)
        fill(self.jobs, self.machine, self.static, win, self.now, self.pass_free,
             self.total, len(rest), len(self.by_end) + len(picked), self.by_end,
             self.by_end_row, picked)
        self.n = n
        self.window_rows = win

    def _observe_py(self) -> None:
        """`_observe` in Python and NumPy (the reference)."""
        rest, picked = self.rest, self.picked
        now, free, limit = self.now, self.pass_free, self.running
        n = min(self.window, len(rest))
        win = rest[:n]
        jobs = np.zeros((self.window, self.n_features))
        if n:
            # take() into the rows: indexing by the list costs twice as much.
            self.static.take(np.array(win, np.intp), 0, jobs[:n])
            np.subtract(now, jobs[:n, SUBMIT], out=jobs[:n, WAIT])
            np.less_equal(jobs[:n, NODES], free, out=jobs[:n, FITS], casting="unsafe")
        out: list[float] = [now, float(free), float(self.total), float(len(rest)),
                            float(len(self.by_end) + len(picked))]
        if limit > 0:
            nodes = self.nodes
            first = min(limit, len(self.by_end))
            if not picked:
                for j in range(first):
                    out.append(self.by_end[j] - now)
                    out.append(float(nodes[self.by_end_row[j]]))
            else:
                pairs: list[tuple[float, float]] = [
                    (self.by_end[j] - now, float(nodes[self.by_end_row[j]]))
                    for j in range(first)]
                for row in picked:
                    pairs.append((self.walltime[row], float(nodes[row])))
                pairs.sort()
                for a, b in pairs[:limit]:
                    out.append(a)
                    out.append(b)
            while len(out) < 5 + 2 * limit:
                out.append(0.0)
        self.jobs = jobs
        self.machine = np.array(out)
        self.n = n
        self.window_rows = win

    def headline_columns(self) -> dict[str, np.ndarray]:
        """The finished sequence's columns `metrics.headline_all_started` reads, in queue
        order, by `_record`'s operations on the same values (so the reward equals the one
        the result rows give, without making them)."""
        first = np.array(self.start, np.float64)
        last = np.array(self.end, np.float64)
        held = last - first
        return {"submit": self.job["submit"], "first_start": first, "end": last,
                "executed": 0.0 + held, "busy_node_s": 0.0 + self.job["nodes"] * held}

    def record(self, engine: Engine) -> None:
        """Give `engine` (fresh, with an empty result table and no recorder) the results,
        clock and counters the general engine ends the sequence with; the result rows in
        queue order (the general engine appends them as jobs end), which is the order
        `sim.sort_results` gives both."""
        n = self.n_jobs
        assert len(self.ended) == n and engine.recorder is None
        engine.adopt_clock(self.now, self.busy)
        engine.stats["passes"] += self.passes
        engine.stats["decisions"] += len(self.started)
        _record(engine, self.cols, self.job, np.array(self.start, np.float64),
                np.array(self.end, np.float64), np.array(self.backfilled, np.bool_),
                np.array(self.started, np.int64), np.arange(n, dtype=np.int64))
