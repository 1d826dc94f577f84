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

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from ..core.cluster import Cluster, ClusterState
from ..core.decisions import Decision, Start
from ..core.job import Job, JobClass, JobState
from ..core.view import View
from .backfill import easy_pass, eligible_queue, start_from_head
from .base import Policy, PolicyError
from .scoring import (
    CLASS,
    ESTIMATE,
    FITS,
    HEURISTICS,
    JOB_FEATURES,
    NODES,
    PRESENT,
    SUBMIT,
    WAIT,
    WALLTIME,
    Model,
    ModelError,
    load_model,
)

MACHINE_FEATURES = ("now_s", "free_nodes", "total_nodes", "waiting", "running")
_CLASS_INDEX = {c: float(i) for i, c in enumerate(JobClass)}

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
        self._static_ix: dict[int, int] = {}  # job id -> row of _static
        self._static = np.zeros((256, 5))
        self.choices = 0
        self.window_ids: list[int] = []  # the job of each real row the chooser saw last

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
            blocked = self._blocked_head(view, free)
            if blocked is not None:
                if self.options.backfill and free:
                    order = [blocked, *(j for j in queue if j is not blocked)]
                    decisions += easy_pass(view, queue=order)
                return decisions
        state = None if pool else view.free_state()
        rest = list(queue)
        head: Job | None = None
        if self._head is not None:
            head = next((j for j in rest if j.id == self._head), None)
        started: list[Job] = []
        k = 0
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
                    slot = self.chooser(jobs, machine, n)
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
            order = [*started, head, *(j for j in rest if j is not head)]
            decisions += easy_pass(view, queue=order)
        elif started:
            if pool:
                decisions += [Start(j.id) for j in started]
            else:
                start_from_head(started, view.free_state(), decisions)
        return decisions

    def _blocked_head(self, view: View, free: int) -> Job | None:
        """The chosen job if it still waits, eligible, and needs more than `free` nodes."""
        assert self._head is not None
        try:
            job = view.job(self._head)
        except KeyError:
            return None
        if (job.state is not JobState.QUEUED and job.state is not JobState.PREEMPTED) \
                or job.nodes <= free or job.requested_start > view.now:
            return None
        return job

    def _static_rows(self, win: Sequence[Job], ids: list[int]) -> np.ndarray:
        """(len(win), 5): submit, user, project, queue and class of each job, from a cache
        filled as jobs first enter the window (the environment observes at every step,
        and a window mostly holds the jobs it held at the last one). Cleared when it
        outgrows the window by far, so a daemon's long run keeps it small."""
        ix = self._static_ix
        missing = [job for job, i in zip(win, ids, strict=True) if i not in ix]
        if missing:
            if len(ix) + len(missing) > max(4096, 8 * len(win)):
                ix.clear()
                missing = list(win)
            need = len(ix) + len(missing)
            if need > len(self._static):
                grown = np.zeros((max(need, 2 * len(self._static)), 5))
                grown[:len(ix)] = self._static[:len(ix)]
                self._static = grown
            batch = JobClass.BATCH
            at = len(ix)
            self._static[at:need] = [
                (job.submit, job.user, job.project, job.queue,
                 0.0 if job.job_class is batch else _CLASS_INDEX[job.job_class])
                for job in missing]
            for i, job in enumerate(missing, at):
                ix[job.id] = i
        return self._static[[ix[i] for i in ids]]

    def observe(self, view: View, rest: Sequence[Job], started: Sequence[Job], free: int,
                state: ClusterState | None) -> tuple[np.ndarray, np.ndarray, int]:
        """The chooser's inputs: the window's rows (padded), the machine's row, and how
        many window rows are real. `started`: jobs this pass started already (they hold
        their nodes in `free` / `state` and count as running)."""
        window, r = self.options.window, self.options.running
        now = view.now
        n = min(window, len(rest))
        win = rest[:n]
        self.window_ids = [job.id for job in win]
        jobs = np.zeros((window, len(JOB_FEATURES)))
        if n:
            nodes = np.array([job.nodes for job in win], dtype=np.float64)
            walltime = np.array([job.walltime for job in win])
            static = self._static_rows(win, self.window_ids)
            jobs[:n, SUBMIT:CLASS + 1] = static
            cols = jobs[:n].T  # a view: writing its rows fills the columns
            cols[PRESENT] = 1.0
            cols[WAIT] = now - static[:, 0]
            cols[NODES] = nodes
            cols[WALLTIME] = walltime
            notices = view.notices
            cols[ESTIMATE] = walltime if not notices else [
                job.walltime if job.id not in notices else notices[job.id].walltime
                for job in win]
            cols[FITS] = (nodes <= free if state is None else
                          [1.0 if state.fits(job.nodes) else 0.0 for job in win])
        machine = np.zeros(len(MACHINE_FEATURES) + 2 * r)
        running = view.running
        machine[:5] = (now, free, view.cluster.total_nodes, len(rest),
                       len(running) + len(started))
        if r:
            ends = [(end - now, running[jid].alloc_nodes)
                    for end, jid in view.running_by_end()[:r]]
            if started:
                ends = sorted(ends + [(j.walltime, j.nodes) for j in started])[:r]
            if ends:
                machine[5:5 + 2 * len(ends)] = np.asarray(ends, dtype=np.float64).ravel()
        return jobs, machine, n
