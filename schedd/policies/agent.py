"""`agent`: a chooser (a saved learned model, or a scoring function) picks which waiting
job starts next; the rest of the pass is EASY's (issue 36).

At a pass, while no job is chosen, the chooser sees the window (the first `window` waiting
jobs in queue order, one row of `scoring.JOB_FEATURES` each, padded with zero rows) and the
machine (`MACHINE_FEATURES`, then the predicted ends of up to `running` running jobs) and
names a slot. A chosen job that fits starts, and the chooser is asked again; one that does
not fit stays chosen, over later passes too, until it starts (RLScheduler's semantics: a
pick is the job that starts next), and, with `backfill` (the default), EASY backfills the
other waiting jobs, in queue order, around its reservation. The starts themselves are
`backfill.easy_pass` given the chosen order, so every start is EASY's, on node pools and on
Blue Gene/Q partitions alike.

The environment of `schedd.gym` runs this same policy with the learner as its chooser: the
chooser stops the pass by raising (before the pass returned anything, so the engine's state
is untouched), the engine's `run_pass` runs it again once the learner has answered, and the
choices of the interrupted pass are replayed (`_picks`) up to the new one. A pass is a
function of the view and the choices, so the replay is exact and the environment's schedule
is the one `schedd simulate --policy agent` makes with the same chooser.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from ..core.cluster import Cluster, ClusterState
from ..core.decisions import Decision, Start
from ..core.job import Job
from ..core.view import View
from .agent_rows import Rows, align, blocked_pass, machine_row
from .backfill import easy_pass, eligible_queue, start_from_head
from .base import Policy, PolicyError
from .scoring import (
    CLASS,
    FITS,
    HEURISTICS,
    JOB_FEATURES,
    NODES,
    SUBMIT,
    WAIT,
    Model,
    ModelError,
    load_model,
)

MACHINE_FEATURES = ("now_s", "free_nodes", "total_nodes", "waiting", "running")

# chooser(jobs, machine, n) -> slot in 0..n-1: jobs is (window, len(JOB_FEATURES)), n rows
# of them real; machine is (len(MACHINE_FEATURES) + 2 * running,).
Chooser = Callable[[np.ndarray, np.ndarray, int], int]


@dataclasses.dataclass(frozen=True)
class AgentOptions:
    model: str = dataclasses.field(default="fcfs", metadata={
        "help": "a model file saved by schedd.gym (JSON), or a scoring function: "
                + ", ".join(HEURISTICS)})
    window: int = dataclasses.field(default=128, metadata={
        "help": "waiting jobs, in queue order, the chooser picks from"})
    running: int = dataclasses.field(default=32, metadata={
        "help": "running jobs' predicted ends shown to the chooser (earliest first)"})
    backfill: bool = dataclasses.field(default=True, metadata={
        "help": "EASY-backfill around a chosen job that cannot start yet"})


class AgentPolicy(Policy):
    name = "agent"
    summary = ("a saved agent or scoring function picks the next job (window of the "
               "queue); EASY backfills around it (schedd.gym)")
    Options = AgentOptions

    def __init__(self, options: AgentOptions, cluster: Cluster):
        super().__init__(options, cluster)
        if options.window < 1 or options.running < 0:
            raise PolicyError("agent: window must be >= 1 and running >= 0")
        try:
            self.model = load_model(options.model)
        except ModelError as err:
            raise PolicyError(f"agent: {err}") from None
        self.chooser: Chooser = self.model.choose
        self._head: int | None = None  # the chosen job, waiting to start
        self._picks: list[int] = []  # choices made so far in an interrupted pass
        # (k, observation) of the choice a chooser stopped the pass at: asked again for
        # the same choice in the same view, the pass need not observe it twice.
        self._asked: tuple[int, np.ndarray, np.ndarray, int] | None = None
        # A pass the chooser stopped: (queue, (now, queue length, free nodes at the start,
        # picks made), rest, started, free, state, k) at the choice it stopped at.
        self._suspended: tuple[Sequence[Job], tuple[float, int, int, int], list[Job],
                               list[Job], int, ClusterState | None, int] | None = None
        # The last window's rows (agent_rows.Rows) and two buffers: the current one holds
        # them, the other receives the next window's.
        self._rows = Rows()
        self._buffers = (np.zeros((len(JOB_FEATURES), options.window)),
                         np.zeros((len(JOB_FEATURES), options.window)))
        self._current = 0
        self._filled = [0, 0]
        self._window: list[Job] = []
        self.choices = 0

    @property
    def window_ids(self) -> list[int]:
        """The job of each real row the chooser saw last."""
        return [job.id for job in self._window]

    @classmethod
    def with_model(cls, model: Model, cluster: Cluster,
                   options: AgentOptions = AgentOptions()) -> AgentPolicy:  # noqa: B008
        """The policy choosing with `model` (options.model is not read)."""
        policy = cls(dataclasses.replace(options, model="fcfs"), cluster)
        policy.model = model
        policy.chooser = model.choose
        return policy

    @property
    def n_features(self) -> int:
        return len(JOB_FEATURES)

    @property
    def machine_size(self) -> int:
        return len(MACHINE_FEATURES) + 2 * self.options.running

    def stats(self) -> dict[str, int]:
        return {"agent_choices": self.choices}

    def schedule(self, view: View) -> list[Decision]:
        decisions: list[Decision] = []
        queue = eligible_queue(view, decisions)
        if not queue:
            return decisions
        pool = view.on_node_pool
        free = view.free_nodes
        if pool and self._head is not None and not self._picks:
            # Most passes: the chosen job still waits and cannot start, so nothing but
            # EASY's backfilling can happen (what the loop below would find, found
            # without copying the queue).
            backfilled = blocked_pass(view, self._head, queue, free, self.options.backfill)
            if backfilled is not None:
                decisions += backfilled
                return decisions
        head: Job | None = None
        suspended = self._suspended
        self._suspended = None
        if suspended is not None and suspended[0] is queue and suspended[1] == (
                view.now, len(queue), free, len(self._picks)):
            # The pass the chooser stopped, run again in the same view (the environment
            # resumes it at once): where it stopped, instead of replaying its picks.
            _, _, rest, started, free, state, k = suspended
        else:
            state = None if pool else view.free_state()
            rest = list(queue)
            if self._head is not None:
                with contextlib.suppress(KeyError):
                    head = view.job(self._head)
                if head is not None and head not in rest:  # by identity: no Job.__eq__
                    head = None
            started = []
            k = 0
        key = (view.now, len(queue), view.free_nodes)
        while rest:
            if head is None:
                if k < len(self._picks):
                    slot = self._picks[k]
                else:
                    if self._asked is not None and self._asked[0] == k:
                        _, jobs, machine, n = self._asked  # the same view: the same rows
                    else:
                        jobs, machine, n = self.observe(view, rest, started, free, state)
                        self._asked = (k, jobs, machine, n)
                    self._suspended = (queue, (*key, k), rest, started, free, state, k)
                    slot = self.chooser(jobs, machine, n)
                    self._suspended = None
                    self._asked = None
                    if not 0 <= slot < n:
                        raise PolicyError(f"agent: the chooser named slot {slot} of {n}")
                    self._picks.append(slot)
                k += 1
                head = rest[slot]
            nodes = head.nodes
            if pool:
                if nodes > free:
                    break
                free -= nodes
            else:
                assert state is not None
                if state.allocate(nodes) is None:
                    break
            started.append(head)
            rest.remove(head)
            head = None
        self.choices += len(self._picks)
        self._picks = []
        self._asked = None
        self._head = None if head is None else head.id
        if head is not None and self.options.backfill:
            rest.remove(head)
            decisions += easy_pass(view, queue=[*started, head, *rest])
        elif started:
            if pool:
                decisions += [Start(j.id) for j in started]
            else:
                start_from_head(started, view.free_state(), decisions)
        return decisions

    def observe(self, view: View, rest: Sequence[Job], started: Sequence[Job], free: int,
                state: ClusterState | None) -> tuple[np.ndarray, np.ndarray, int]:
        """The chooser's inputs: the window's rows (padded), the machine's row, and how
        many window rows are real. `started`: jobs this pass started already (they hold
        their nodes in `free` / `state` and count as running).

        The rows are carried over from the last observation (`agent_rows.align`: a window
        mostly keeps its jobs between two choices), into the other of two private
        buffers; the chooser gets a copy, so that what it keeps or changes is its own."""
        window, r = self.options.window, self.options.running
        now = view.now
        n = min(window, len(rest))
        win = rest[:n] if isinstance(rest, list) else list(rest[:n])
        self._window = win
        # The buffers are (features, window): a feature's values are contiguous.
        old, rows = self._buffers[self._current], self._buffers[1 - self._current]
        self._current = 1 - self._current
        copies, fresh, values = align(self._rows, win, view.notices)
        for dst, src, length in copies:
            rows[:, dst:dst + length] = old[:, src:src + length]
        if len(fresh) <= 4:
            for j, row in zip(fresh, values, strict=True):
                rows[:CLASS + 1, j] = row
        else:
            rows[:CLASS + 1, fresh] = np.array(values).T
        filled = self._filled[self._current]  # this buffer's real rows when last written
        if n < filled:
            rows[:, n:filled] = 0.0
        self._filled[self._current] = n
        if n:
            np.subtract(now, rows[SUBMIT, :n], out=rows[WAIT, :n])
            if state is None:
                np.less_equal(rows[NODES, :n], free, out=rows[FITS, :n], casting="unsafe")
            else:
                rows[FITS, :n] = [1.0 if state.fits(job.nodes) else 0.0 for job in win]
        running = view.running
        machine = np.array(machine_row(now, free, view.cluster.total_nodes, len(rest),
                                       len(running) + len(started), view.running_by_end(),
                                       running, started, r))
        return rows.T.copy(), machine, n
