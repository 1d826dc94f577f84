"""Job model: what a user submitted (JobSpec) and what a policy sees of it (Job).

The actual runtime is part of the spec the engine receives, but a `Job` — the object
policies read — never carries it: the engine keeps it in its private execution record.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final

from .cluster import Allocation
from .pickling import by_fields


class JobClass(enum.Enum):
    """The job classes of the five papers; the value is the trace-format letter."""

    BATCH = "B"  # batch / rigid
    REALTIME = "R"
    ONDEMAND = "O"
    MALLEABLE = "M"
    DEDICATED = "D"

    @classmethod
    def from_letter(cls, letter: str) -> JobClass:
        return _CLASS_BY_LETTER[letter]


_CLASS_BY_LETTER = {c.value: c for c in JobClass}


class JobState(enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    CHECKPOINTING = "checkpointing"  # a preemption checkpoint (JIT or warning) in progress
    PREEMPTED = "preempted"  # requeued after a preemption or a node failure
    COMPLETED = "completed"
    KILLED = "killed"  # reached its walltime
    CANCELLED = "cancelled"
    FAILED = "failed"  # interrupted by a failure and not requeued

    # Module-level aliases below: attribute access on an Enum class is slow in a hot loop.
    @property
    def terminal(self) -> bool:
        return self is _DONE or self is _KILLED or self is _CANCELLED or self is _FAILED

    @property
    def waiting(self) -> bool:
        return self is _QUEUED or self is _PREEMPTED

    @property
    def holds_nodes(self) -> bool:
        return self is _RUNNING or self is _CHECKPOINTING


# Final: compiled code keeps each in a C static, not a lookup in the module's globals.
_QUEUED: Final = JobState.QUEUED
_RUNNING: Final = JobState.RUNNING
_CHECKPOINTING: Final = JobState.CHECKPOINTING
_PREEMPTED: Final = JobState.PREEMPTED
_DONE: Final = JobState.COMPLETED
_KILLED: Final = JobState.KILLED
_CANCELLED: Final = JobState.CANCELLED
_FAILED: Final = JobState.FAILED


@dataclass(frozen=True, slots=True)
class Notice:
    """Advance notice of an on-demand job (hybrid paper §III-A)."""

    time: float  # when the notice is given
    est_arrival: float
    nodes: int
    walltime: float

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


@dataclass(frozen=True, slots=True, init=False)
class JobSpec:
    """One job as submitted. `runtime` is the truth the engine uses; policies never see it.

    `runtime` is the compute time at `nodes` nodes (for malleable jobs: at `max_nodes`),
    without setup or checkpoint overheads, which the engine adds.
    """

    id: int
    submit: float
    runtime: float
    nodes: int
    walltime: float
    user: int = -1
    project: int = -1
    job_class: JobClass = JobClass.BATCH
    min_nodes: int = -1  # malleable: lower bound; -1 = rigid
    checkpointable: bool = True
    ckpt_gb_per_node: float = -1.0  # checkpoint data size; -1 = the cluster's default model
    setup: float = 0.0  # seconds of setup at every (re)start
    requested_start: float = -1.0  # dedicated jobs
    notice: Notice | None = None  # on-demand jobs
    queue: int = -1
    ckpt_interval: float = -1.0  # periodic checkpoint interval in compute seconds; -1 = none

    # Written out, not generated, so that mypyc compiles it: the dataclass's frozen
    # __init__ runs interpreted, once per job of every run (issue 21: 4x slower here).
    # object.__setattr__ is how a frozen class sets its own fields; compiled, it is a store.
    def __init__(self, id: int, submit: float, runtime: float, nodes: int, walltime: float,
                 user: int = -1, project: int = -1, job_class: JobClass = JobClass.BATCH,
                 min_nodes: int = -1, checkpointable: bool = True,
                 ckpt_gb_per_node: float = -1.0, setup: float = 0.0,
                 requested_start: float = -1.0, notice: Notice | None = None,
                 queue: int = -1, ckpt_interval: float = -1.0) -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "submit", submit)
        object.__setattr__(self, "runtime", runtime)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "walltime", walltime)
        object.__setattr__(self, "user", user)
        object.__setattr__(self, "project", project)
        object.__setattr__(self, "job_class", job_class)
        object.__setattr__(self, "min_nodes", min_nodes)
        object.__setattr__(self, "checkpointable", checkpointable)
        object.__setattr__(self, "ckpt_gb_per_node", ckpt_gb_per_node)
        object.__setattr__(self, "setup", setup)
        object.__setattr__(self, "requested_start", requested_start)
        object.__setattr__(self, "notice", notice)
        object.__setattr__(self, "queue", queue)
        object.__setattr__(self, "ckpt_interval", ckpt_interval)

    @property
    def max_nodes(self) -> int:
        return self.nodes

    @property
    def malleable(self) -> bool:
        return self.job_class is JobClass.MALLEABLE and self.min_nodes > 0

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


@dataclass(slots=True, eq=False, init=False)
class Job:
    """A job as policies see it. Only the engine writes these fields."""

    id: int
    submit: float
    nodes: int  # requested (rigid) or maximum (malleable)
    walltime: float  # requested time; elastic control commands change it
    user: int
    project: int
    job_class: JobClass
    min_nodes: int
    checkpointable: bool
    requested_start: float
    queue: int
    state: JobState = JobState.QUEUED
    alloc_nodes: int = 0  # nodes held now (partition size on Blue Gene/Q)
    allocation: Allocation | None = None  # what it holds while running or checkpointing
    first_start: float = -1.0
    last_start: float = -1.0
    predicted_end: float = -1.0  # start + setup + remaining walltime + planned overheads
    end_time: float = -1.0
    preemptions: int = 0
    restarts: int = 0
    history: list[tuple[float, JobState, str]] = field(default_factory=list)

    # Written out rather than generated: mypyc compiles this one, while the dataclass's
    # generated __init__ ran interpreted, once per job of every run (issue 21). Same
    # parameters, order and defaults as the fields above (by_fields rebuilds a Job with
    # all of them; tests/test_engine_layers.py checks the signature against the fields).
    def __init__(self, id: int, submit: float, nodes: int, walltime: float, user: int,
                 project: int, job_class: JobClass, min_nodes: int, checkpointable: bool,
                 requested_start: float, queue: int, state: JobState = JobState.QUEUED,
                 alloc_nodes: int = 0, allocation: Allocation | None = None,
                 first_start: float = -1.0, last_start: float = -1.0,
                 predicted_end: float = -1.0, end_time: float = -1.0, preemptions: int = 0,
                 restarts: int = 0,
                 history: list[tuple[float, JobState, str]] | None = None) -> None:
        self.id = id
        self.submit = submit
        self.nodes = nodes
        self.walltime = walltime
        self.user = user
        self.project = project
        self.job_class = job_class
        self.min_nodes = min_nodes
        self.checkpointable = checkpointable
        self.requested_start = requested_start
        self.queue = queue
        self.state = state
        self.alloc_nodes = alloc_nodes
        self.allocation = allocation
        self.first_start = first_start
        self.last_start = last_start
        self.predicted_end = predicted_end
        self.end_time = end_time
        self.preemptions = preemptions
        self.restarts = restarts
        self.history = [] if history is None else history

    @property
    def malleable(self) -> bool:
        return self.job_class is JobClass.MALLEABLE and self.min_nodes > 0

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)
