"""The read-only view a policy receives at each scheduling pass.

It exposes the engine's own sequences without copying (a pass must be cheap); policies
must treat them as read-only — `validate()` checks the engine's structures afterwards.
The actual runtime of a job is not reachable from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .cluster import Cluster, ClusterState, PoolState
from .exec_state import EngineReadout, Reservation
from .job import Job, JobState, Notice


class View:
    __slots__ = ("_engine", "_withheld", "_queue")

    def __init__(self, engine: EngineReadout, withheld: int = 0,
                 queue: Sequence[Job] | None = None):
        self._engine = engine
        self._withheld = withheld
        self._queue = queue

    def __reduce__(self) -> tuple[Any, ...]:
        # Compiled by mypyc, pickle would call __init__ without the engine (snapshots).
        return (View, (self._engine, self._withheld, self._queue))

    def restricted(self, withheld: int, queue: Sequence[Job]) -> View:
        """The view a wrapped policy gets (node pools): `withheld` free nodes hidden from
        it, and only `queue` waiting. Everything else is this view's."""
        if not 0 <= withheld <= self.free_nodes:
            raise ValueError(f"cannot withhold {withheld} of {self.free_nodes} free nodes")
        return View(self._engine, self._withheld + withheld, queue)

    @property
    def now(self) -> float:
        return self._engine.now

    @property
    def cluster(self) -> Cluster:
        return self._engine.cluster

    @property
    def queue(self) -> Sequence[Job]:
        """Waiting jobs (queued and requeued) in (submit, id) order."""
        return self._engine.queue if self._queue is None else self._queue

    @property
    def running(self) -> Mapping[int, Job]:
        """Jobs holding nodes (running or checkpointing), in start order."""
        return self._engine.running

    def running_by_end(self) -> Sequence[tuple[float, int]]:
        """(predicted end, job id) of running jobs, ascending. Checkpointing jobs are not
        in it: they release at their checkpoint deadline (see `checkpointing_until`)."""
        return self._engine.running_by_end()

    def job(self, job_id: int) -> Job:
        return self._engine.jobs[job_id]

    @property
    def free_nodes(self) -> int:
        return self._engine.state.free_nodes - self._withheld

    @property
    def on_node_pool(self) -> bool:
        """Whether the machine is a node pool: its free resources are a count, so a policy
        may plan on integers instead of a `free_state()` copy."""
        return isinstance(self._engine.state, PoolState)

    def free_state(self) -> ClusterState:
        """A private copy of the machine's free resources to plan on."""
        state = self._engine.state.copy()
        if self._withheld:
            state.allocate(self._withheld)
        return state

    @property
    def notices(self) -> Mapping[int, Notice]:
        return self._engine.notices

    @property
    def reservations(self) -> Mapping[str, Reservation]:
        return self._engine.reservations

    @property
    def warning_s(self) -> float:
        """Length of the malleable jobs' warning before a WARNING preemption frees nodes."""
        return self._engine.options.warning_s

    @property
    def eccs_applied(self) -> int:
        """Elastic control commands applied so far: an ET/RT/EP/RP command changes a
        waiting job's walltime or size, so a policy that keeps a plan across passes
        re-plans when this count moves."""
        return self._engine.stats["eccs_applied"]

    @property
    def checkpointing_count(self) -> int:
        return self._engine.n_checkpointing

    @property
    def has_requested_starts(self) -> bool:
        """Whether any waiting job has a requested start time (dedicated jobs)."""
        return self._engine.n_requested_start > 0

    def checkpointing_until(self) -> Sequence[tuple[float, int]]:
        """(checkpoint deadline, job id) of jobs that are writing a preemption checkpoint."""
        e = self._engine
        return sorted(
            (e.exec_record(j.id).ckpt_end, j.id)
            for j in e.running.values()
            if j.state is JobState.CHECKPOINTING
        )

    def checkpoint_seconds(self, job_id: int) -> float:
        """Modelled time of one JIT checkpoint write (= one restart read, eqs. 16-17) of a
        live job at its current (or requested) size."""
        engine = self._engine
        x = engine.exec_record(job_id)
        nodes = x.job.alloc_nodes or x.job.nodes
        return engine.options.checkpoint.cost(engine.cluster.checkpoint_model, nodes,
                                              x.spec.ckpt_gb_per_node)

    def setup_seconds(self, job_id: int) -> float:
        """Setup a live job pays at every (re)start (declared with the job)."""
        return self._engine.exec_record(job_id).spec.setup

    def lost_if_preempted(self, job_id: int) -> float:
        """Compute seconds a running job loses if stopped now and resumed from its last
        checkpoint (all its compute when it has none)."""
        return self._engine.lost_if_preempted(job_id)

    def checkpoint_done_by(self, job_id: int, t: float) -> float:
        """Latest time in (now, t] when a periodic checkpoint of the running job completes,
        or -1 if none does (a resource manager hears of checkpoints from the job)."""
        return self._engine.checkpoint_done_by(job_id, t)
